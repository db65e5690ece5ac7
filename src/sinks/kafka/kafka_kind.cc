// The registry's entry for the Kafka sink, and its keys (sink.kafka.*): its
// brokers default to the ones pacerd consumes from.
#include <fmt/format.h>

#include "pacer/error.h"
#include "pacer/sinks/kafka_sink.h"
#include "pacer/sinks/sink_registry.h"

namespace pacer::sink {
namespace {

std::vector<SinkKey> kafkaKeys() {
  return {
      {"sink.kafka.topic", KeyShape::kScalar, "--sink-topic", KeyFlag::kValue, false, "sink kafka: the outbound topic",
       [](const KeyValue& v, SinkSettings& s) { s.sink_topic = v.asString(); }},
      {"sink.kafka.brokers", KeyShape::kList, "--sink-brokers", KeyFlag::kValue, false,
       "sink kafka: bootstrap servers (default: --brokers)",
       [](const KeyValue& v, SinkSettings& s) {
         std::string joined;
         for (const std::string& b : v.asList()) joined += (joined.empty() ? "" : ",") + b;
         s.sink_brokers = joined;
       }},
  };
}

}  // namespace

SinkKind kafkaSinkKind() {
  return {"kafka", false,
          [](const SinkBuild& b) {
            const SinkSettings& s = b.settings;
            KafkaSinkOptions k;
            k.brokers = s.sink_brokers.empty() ? b.default_brokers : s.sink_brokers;
            k.topic = s.sink_topic;
            k.max_in_flight = s.sink_in_flight;
            try {
              return makeKafkaSink(k);
            } catch (const InvalidError& e) {
              if (b.where == "sink") throw;
              throw InvalidError(fmt::format("{}: {}", b.where, e.what()));
            }
          },
          kafkaKeys()};
}

}  // namespace pacer::sink
