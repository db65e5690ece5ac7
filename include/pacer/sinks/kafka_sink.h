// The Kafka sink: produces each message to an outbound topic (key = campaign
// id, headers message-id and recipient, value = payload unchanged). A message
// is delivered when the broker acknowledged it (acks=all, idempotent
// producer); a delivery error is a retry with librdkafka's reason.
// Not thread-safe: one owner thread calls submit() and poll().
#pragma once

#include <map>
#include <string>

#include "pacer/sink.h"

namespace pacer::sink {

struct KafkaSinkOptions {
  std::string brokers;
  std::string topic;
  std::size_t max_in_flight = 1000;
  std::map<std::string, std::string> properties;  // any other producer property
};

// Throws InvalidError for a bad property or an empty topic.
SinkInterfacePtr makeKafkaSink(const KafkaSinkOptions& options);

}  // namespace pacer::sink
