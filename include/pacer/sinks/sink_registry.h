// The sink registry: every kind of sink pacerd can use (sink.kind), each
// declared by its own folder under src/sinks/ with its name, whether a
// message costs its SMS segments there, its configuration keys and its
// factory. pacerd's wiring, the sink.kind check and the key table iterate
// this list instead of naming sinks. Adding a sink: docs/sinks.md.
#pragma once

#include <any>
#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <typeindex>
#include <vector>

#include "pacer/sink.h"
#include "pacer/sinks/http_sink.h"
#include "pacer/sinks/push_sink.h"
#include "pacer/sinks/sink_keys.h"
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

  // The settings of a sink that keeps them in a struct of its own folder
  // (its keys' apply writes own<T>(), its factory reads it): one T per type,
  // default-constructed until a key sets it, copied with these settings.
  template <class T>
  T& own() {
    std::any& slot = own_[std::type_index(typeid(T))];
    if (!slot.has_value()) slot = T{};
    return std::any_cast<T&>(slot);
  }
  template <class T>
  const T& own() const {
    static const T kDefault{};
    auto it = own_.find(std::type_index(typeid(T)));
    return it == own_.end() ? kDefault : std::any_cast<const T&>(it->second);
  }

 private:
  std::map<std::type_index, std::any> own_;
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
  // Its configuration keys, sink.<kind>.* (pacer/sinks/sink_keys.h); kinds
  // of one folder may share them (apns and fcm: sink.push.*).
  std::vector<SinkKey> keys = {};
};

// Every kind, in the order --help names them. Built once; thread-safe.
const std::vector<SinkKind>& sinkKinds();
// The kind called `name`; nullptr if there is none.
const SinkKind* findSinkKind(std::string_view name);
// "stdout, null, http, ...": the names in order, for help and errors.
std::string sinkKindNames();
// Every kind's keys, in the kinds' order, each path once (the first kind's).
const std::vector<SinkKey>& sinkKeys();

}  // namespace pacer::sink
