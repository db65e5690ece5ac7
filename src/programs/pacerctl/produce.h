// `pacerctl produce`: test messages into Kafka in the shape of README
// "Message contract" (key = campaign id, headers message-id and recipient,
// the payload as value), with a librdkafka idempotent producer (acks=all),
// optionally paced to a rate on the steady clock, waiting for every delivery
// report. Not thread-safe: one call at a time per thread; it owns its producer.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace pacer::control {

struct ProduceOptions {
  std::string brokers;  // bootstrap.servers
  std::string topic;
  std::string campaign;  // the Kafka key
  std::int64_t count = 1;
  std::optional<double> rate;    // msg/s, > 0; nullopt: as fast as librdkafka takes them
  std::string id_prefix;         // message-id header = id_prefix + index (0, 1, ...); must make ids unique
  std::string recipient_prefix;  // recipient header = prefix + index; empty: no recipient header
  std::optional<std::int64_t> recipients;  // > 0: recipient = prefix + (index mod recipients), repeating ids
  std::vector<std::string> time_zones;     // tz header, round-robin by index; empty: no tz header
  std::string payload;           // the value, the same for every message
  std::optional<int> partition;  // nullopt: librdkafka's partitioner on the key (one partition per campaign)
  int timeout_ms = 30000;        // message.timeout.ms: a message not acknowledged by then fails
  // Called from the producing thread with the messages acknowledged since the
  // last call: at most about once a second while producing, and once at the
  // end. May throw; the exception propagates (messages in flight are purged).
  std::function<void(std::int64_t newly_delivered)> on_delivered;
};

struct ProduceResult {
  std::int64_t delivered = 0;
  std::int64_t failed = 0;
  bool unreachable = false;  // no broker could be reached: nothing was (or could be) delivered
  bool transient = false;    // every failure was a timeout or a transport error (else a broker refused one)
  std::string error;         // the first failure, or what librdkafka said about the brokers; empty when none
  double seconds = 0;        // from the first produce to the last delivery report
};

// Message `index`'s recipient header ("" for none) and tz header ("" for
// none), as produceMessages sets them. Pure.
std::string recipientOf(const ProduceOptions& o, std::int64_t index);
std::string_view timeZoneOf(const ProduceOptions& o, std::int64_t index) noexcept;

// Produces options.count messages. Throws InvalidValueError (control/values.h)
// when librdkafka refuses the configuration (a malformed broker list).
// Returns once every message has a delivery report, or, when no broker can be
// reached before anything was delivered, purges what is queued and returns
// with `unreachable` set instead of waiting for timeout_ms.
ProduceResult produceMessages(const ProduceOptions& options);

}  // namespace pacer::control
