// The registry's entry for the Kafka sink (sink.kafka.*): its brokers
// default to the ones pacerd consumes from.
#include <fmt/format.h>

#include "pacer/error.h"
#include "pacer/sinks/kafka_sink.h"
#include "pacer/sinks/sink_registry.h"

namespace pacer::sink {

SinkKind kafkaSinkKind() {
  return {"kafka", false, [](const SinkBuild& b) {
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
          }};
}

}  // namespace pacer::sink
