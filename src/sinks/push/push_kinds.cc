// The registry's entries for APNs and FCM (their keys, sink.apns.*,
// sink.fcm.*, sink.push.*: push_keys.cc; docs/push.md). The credential is
// read when the sink is made, so a missing key file stops pacerd at start
// with the key named, not at the first message.
#include <fmt/format.h>

#include "pacer/error.h"
#include "pacer/sinks/sink_registry.h"

namespace pacer::sink {
namespace {

using MakePush = SinkInterfacePtr (*)(const PushSinkOptions&, std::size_t, std::function<void(std::string_view)>);

SinkInterfacePtr makePush(const SinkBuild& b, MakePush make) {
  // A line that is an event of its own (the h2 transport's push_h2_stats)
  // gets the sink named; any other says why messages wait.
  auto note = [warn = b.warn, where = b.where, kind = b.settings.sink](std::string_view line) {
    if (!warn) return;
    if (line.rfind("event=", 0) == 0) {
      const std::size_t space = line.find(' ');
      warn(fmt::format("{} sink={} kind={}{}", line.substr(0, space), where, kind,
                       space == std::string_view::npos ? std::string_view() : line.substr(space)));
    } else {
      warn(fmt::format("event=push_waiting sink={} kind={} {}", where, kind, line));
    }
  };
  try {
    return make(b.settings.push, b.settings.sink_in_flight, note);
  } catch (const InvalidError& e) {
    if (b.where == "sink") throw;
    throw InvalidError(fmt::format("{}: {}", b.where, e.what()));
  }
}

}  // namespace

std::vector<SinkKey> pushSinkKeys();  // push_keys.cc

// Both kinds take the same keys (the registry names each once).
SinkKind apnsSinkKind() {
  return {"apns", false, [](const SinkBuild& b) { return makePush(b, &makeApnsSink); }, pushSinkKeys()};
}

SinkKind fcmSinkKind() {
  return {"fcm", false, [](const SinkBuild& b) { return makePush(b, &makeFcmSink); }, pushSinkKeys()};
}

}  // namespace pacer::sink
