// The registry's entries for APNs and FCM (sink.apns.*, sink.fcm.*,
// docs/push.md). The credential is read when the sink is made, so a missing
// key file stops pacerd at start with the key named, not at the first message.
#include <fmt/format.h>

#include "pacer/error.h"
#include "pacer/sinks/sink_registry.h"

namespace pacer::sink {
namespace {

using MakePush = SinkInterfacePtr (*)(const PushSinkOptions&, std::size_t, std::function<void(std::string_view)>);

SinkInterfacePtr makePush(const SinkBuild& b, MakePush make) {
  auto note = [warn = b.warn, where = b.where, kind = b.settings.sink](std::string_view line) {
    if (warn) warn(fmt::format("event=push_waiting sink={} kind={} {}", where, kind, line));
  };
  try {
    return make(b.settings.push, b.settings.sink_in_flight, note);
  } catch (const InvalidError& e) {
    if (b.where == "sink") throw;
    throw InvalidError(fmt::format("{}: {}", b.where, e.what()));
  }
}

}  // namespace

SinkKind apnsSinkKind() {
  return {"apns", false, [](const SinkBuild& b) { return makePush(b, &makeApnsSink); }};
}

SinkKind fcmSinkKind() {
  return {"fcm", false, [](const SinkBuild& b) { return makePush(b, &makeFcmSink); }};
}

}  // namespace pacer::sink
