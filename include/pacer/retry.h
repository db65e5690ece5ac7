// What to do with a send that did not go through: the retry policy, pure.
// Throttling (429, 503) is the provider asking to slow down, not a fault of
// the message: it is retried after the provider's pause and never counts
// towards max_attempts, so a message is never dropped for it. Faults (408,
// other 5xx, timeouts, lost connections) are retried with exponential
// backoff and jitter up to max_attempts, then the message fails with the
// last reason. A permanent refusal (other 4xx) fails at once.
#pragma once

#include <string>

#include "pacer/sink.h"
#include "pacer/time.h"

namespace pacer {

struct RetryPolicy {
  int max_attempts = 5;                               // attempts in all, the first included; >= 1
  Nanos base_delay = std::chrono::milliseconds(200);  // before the second attempt
  Nanos max_delay = std::chrono::seconds(30);
  double jitter = 0.5;  // fraction of the delay that is random: delay * (1 - jitter + jitter * u)
  Nanos default_throttle_pause = std::chrono::seconds(1);  // 429/503 without Retry-After
};

struct RetryDecision {
  enum class Kind { kDelivered, kRetry, kFail };
  Kind kind = Kind::kDelivered;
  Nanos delay{0};          // kRetry: wait at least this long before the next attempt
  bool throttled = false;  // kRetry: the provider asked everyone to pause for `delay`
  bool counts = false;     // kRetry: this attempt counts towards max_attempts
  std::string reason;      // kFail: why, for the ledger row
};

// `attempts` is how many attempts the message has had, this one included
// (throttled ones excluded). `u` is a uniform random number in [0, 1) for the
// jitter; callers pass their generator's value so the policy stays pure.
RetryDecision decideRetry(const RetryPolicy& policy, const SendResult& result, int attempts, double u) noexcept;

// The backoff before attempt `attempts + 1`: min(max_delay, base * 2^(attempts-1)) with jitter.
Nanos backoffDelay(const RetryPolicy& policy, int attempts, double u) noexcept;

}  // namespace pacer
