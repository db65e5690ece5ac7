// The registry's entry for the SMPP sink (its keys, sink.smpp.*: smpp_keys.cc; docs/smpp.md): a
// message costs its SMS segments. The bind password comes from the
// environment variable the settings name (never from the file, never
// logged); `provider` goes into each receipt (empty for the default sink:
// its receipts match by the SMSC's id alone).
#include <fmt/format.h>

#include <cstdlib>

#include "pacer/error.h"
#include "pacer/sinks/sink_registry.h"

namespace pacer::sink {

std::vector<SinkKey> smppSinkKeys();  // smpp_keys.cc

SinkKind smppSinkKind() {
  return {"smpp", true, [](const SinkBuild& b) -> SinkInterfacePtr {
            SmppSinkOptions s = b.settings.smpp;
            const char* password = std::getenv(b.settings.smpp_password_env.c_str());
            if (!password)
              throw InvalidError(
                  fmt::format("{}.smpp.password_env: the environment variable {} (the bind password) is not set",
                              b.where, b.settings.smpp_password_env));
            s.password = password;
            s.provider = b.provider;
            s.log = [info = b.info, where = b.where](std::string_view line) {
              if (info) info(fmt::format("event=smpp sink={} {}", where, line));
            };
            try {
              return makeSmppSink(std::move(s));
            } catch (const InvalidError& e) {
              throw InvalidError(fmt::format("{} smpp: {}", b.where, e.what()));
            }
          },
          smppSinkKeys()};
}

}  // namespace pacer::sink
