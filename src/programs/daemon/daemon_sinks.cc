// pacerd's sinks: the default one and, with providers.<id>.sink, a routing
// sink in front of it and the providers' own.
#include <fmt/format.h>

#include "daemon_parts.h"
#include "pacer/sinks/kafka_sink.h"

namespace pacer::worker {
namespace {

SinkInterfacePtr makeHttp(const ProviderSinkOptions& o, const std::string& where) {
  sink::HttpSinkOptions h = o.http;
  h.max_in_flight = o.sink_in_flight;
  try {
    return sink::makeHttpSink(h);
  } catch (const InvalidError& e) {
    throw DaemonConfigError(fmt::format("{} http: {}", where, e.what()));
  }
}

SinkInterfacePtr makeKafka(const ProviderSinkOptions& o, const std::string& default_brokers, const std::string& where) {
  sink::KafkaSinkOptions k;
  k.brokers = o.sink_brokers.empty() ? default_brokers : o.sink_brokers;
  k.topic = o.sink_topic;
  k.max_in_flight = o.sink_in_flight;
  try {
    return sink::makeKafkaSink(k);
  } catch (const InvalidError& e) {
    throw DaemonConfigError(where == "sink" ? std::string(e.what()) : fmt::format("{}: {}", where, e.what()));
  }
}

// One sink; `where` names it in errors ("sink", "providers.sms.sink").
SinkInterfacePtr makeOneSink(const ProviderSinkOptions& o, const std::string& default_brokers,
                             const std::string& where) {
  if (o.sink == "stdout") return makeStdoutSink(stdout, o.sink_in_flight);
  if (o.sink == "null") return makeNullSink(o.sink_in_flight);
  if (o.sink == "http") return makeHttp(o, where);
  if (o.sink == "kafka") return makeKafka(o, default_brokers, where);
  throw DaemonConfigError(fmt::format("{}: '{}' is not one of stdout, null, http, kafka", where, o.sink));
}

}  // namespace

SinkInterfacePtr makeSink(const DaemonOptions& o, sink::ProviderOfCampaign provider_of) {
  SinkInterfacePtr main = makeOneSink(
      ProviderSinkOptions{o.sink, o.sink_in_flight, o.http, o.sink_topic, o.sink_brokers}, o.brokers, "sink");
  if (o.provider_sinks.empty()) return main;
  std::map<std::string, SinkInterfacePtr, std::less<>> by_provider;
  for (const auto& [id, ps] : o.provider_sinks)
    by_provider[id] = makeOneSink(ps, o.brokers, fmt::format("providers.{}.sink", id));
  return sink::makeRoutingSink(std::move(main), std::move(by_provider), std::move(provider_of));
}

}  // namespace pacer::worker
