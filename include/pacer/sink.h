// Where messages go: a provider's HTTP API, a Kafka topic, stdout, nowhere.
// A sink is asynchronous: submit() hands a message over without blocking and
// poll() collects what has finished. Every submitted message comes back from
// poll() exactly once, with an outcome; nothing is dropped silently.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "pacer/message.h"
#include "pacer/time.h"

namespace pacer {

enum class SendOutcome {
  kDelivered,  // the provider took it
  kRetry,      // try again later (throttled, 5xx, timeout, connection lost)
  kPermanent,  // the provider refused it for good (a 4xx other than 408/429)
};

struct SendResult {
  std::uint64_t ticket = 0;  // the caller's handle from submit()
  SendOutcome outcome = SendOutcome::kDelivered;
  Nanos retry_after{0};  // kRetry: the provider's Retry-After, 0 if it gave none
  int status = 0;        // protocol status where there is one (HTTP), else 0
  std::string reason;    // why, when not delivered
  Nanos latency{0};      // request to answer, where the sink measures it (HTTP); 0 otherwise
};

// Thread-safety: one owner thread.
class SinkInterface {
 public:
  virtual ~SinkInterface() = default;
  // Hands `message` over. False, without taking it, when maxInFlight()
  // messages are already in flight: try again after the next poll().
  virtual bool submit(const Message& message, std::uint64_t ticket) = 0;
  // Appends finished sends to `out`; never blocks.
  virtual void poll(std::vector<SendResult>& out) = 0;
  virtual std::size_t inFlight() const = 0;
  virtual std::size_t maxInFlight() const = 0;
  // Blocks up to `max` until an in-flight send may have progressed (the
  // worker's idle wait). Sinks that finish at once return immediately.
  virtual void wait(Nanos max) { (void)max; }
};
using SinkInterfacePtr = std::unique_ptr<SinkInterface>;

// Counts and forgets: for benchmarks.
SinkInterfacePtr makeNullSink(std::size_t max_in_flight);

// One line per message on `out` (stdout in demos):
//   <campaign> <message id> <recipient or -> <payload>
// with the payload's newlines, tabs, backslashes, control bytes and invalid
// UTF-8 escaped (\n, \t, \\, \xNN), so one message is always one line.
// A failed write is reported as kRetry with the error.
SinkInterfacePtr makeStdoutSink(std::FILE* out, std::size_t max_in_flight);

// The escaping the stdout sink applies to payloads.
std::string escapeForLine(const std::string& bytes);

}  // namespace pacer
