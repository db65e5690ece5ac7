// The sink registry: every kind of sink pacerd can use (sink.kind), each
// declared by its own folder under src/sinks/ with its name, whether a
// message costs its SMS segments there, and its factory. pacerd's wiring
// and the sink.kind check iterate this list instead of naming sinks.
// Adding a sink: docs/sinks.md.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "pacer/sink.h"
#include "pacer/sinks/http_sink.h"
#include "pacer/sinks/push_sink.h"
#include "pacer/sinks/smpp_sink.h"

namespace pacer::sink {

// One sink's settings: the default sink's (sink.*), or a provider's own
// (providers.<id>.sink.*, the default's with the provider's overrides).
struct SinkSettings {
  std::string sink = "stdout";  // the kind: a name in sinkKinds()
  std::size_t sink_in_flight = 1000;
  HttpSinkOptions http;
  std::string sink_topic;
  std::string sink_brokers;
  SmppSinkOptions smpp;  // sink = smpp (its password read from smpp_password_env at start)
  std::string smpp_password_env = "PACER_SMPP_PASSWORD";
  PushSinkOptions push;  // sink = apns or fcm (docs/push.md)
};

// What a factory gets besides the settings.
struct SinkBuild {
  const SinkSettings& settings;
  std::string where;            // "sink" or "providers.<id>.sink": named in errors and log lines
  std::string provider;         // empty for the default sink
  std::string default_brokers;  // kafka.brokers, for sinks that default to them
  // Where the sink's log lines go while it runs (binds, a missing
  // credential): whole lines, "event=... sink=<where> ...". Either may be empty.
  std::function<void(std::string_view)> info, warn;
};

struct SinkKind {
  const char* name;      // the value of sink.kind
  bool counts_segments;  // a message costs its SMS segments in quota (1 otherwise)
  // Makes the sink. Reads what it needs at start (a credential, a host), so
  // that a bad setting stops pacerd at start. Throws InvalidError whose
  // message names build.where and the setting.
  SinkInterfacePtr (*make)(const SinkBuild& build);
};

// Every kind, in the order --help names them. Built once; thread-safe.
const std::vector<SinkKind>& sinkKinds();
// The kind called `name`; nullptr if there is none.
const SinkKind* findSinkKind(std::string_view name);
// "stdout, null, http, ...": the names in order, for help and errors.
std::string sinkKindNames();

}  // namespace pacer::sink
