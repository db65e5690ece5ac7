// What to do with an attempt that did not deliver: the retry policy, pure.
//
// The sink has already classified the provider's answer (SendOutcome):
//   - kThrottled: the provider asked everyone to slow down. The whole
//     provider pauses (for every worker, through the quota) for the
//     provider's Retry-After, or default_throttle_pause, and the message
//     retries after it. Throttled attempts are bounded by max_throttled.
//     A throttle of one recipient (SendResult::scope kRecipient, APNs 429
//     TooManyRequests) pauses nothing: the message alone retries after an
//     exponential, jittered backoff that grows with its throttled attempts
//     (at least the Retry-After, if one was named), within max_throttled.
//   - kFault: this attempt failed; the message retries after an exponential,
//     jittered backoff, at most max_attempts faulted attempts in all. The
//     provider's circuit breaker counts faults; the message does not pause
//     the provider.
//   - kPermanent / kInvalidToken: the message fails at once with the reason.
// Every attempt of every kind counts in the ledger's `attempts`, and no
// retry outlives max_age from the message's first attempt: an exhausted
// message fails with its last answer as the reason, never silently.
#pragma once

#include <string>

#include "pacer/sink.h"
#include "pacer/time.h"

namespace pacer {

struct RetryPolicy {
  int max_attempts = 5;                   // faulted attempts (kFault) a message may have, the last included; >= 1
  int max_throttled = 30;                 // throttled attempts (kThrottled) a message may have; >= 1
  Nanos max_age = std::chrono::hours(1);  // from the first attempt to the last retry; > 0
  Nanos base_delay = std::chrono::milliseconds(200);  // fault backoff before the second attempt
  Nanos max_delay = std::chrono::seconds(30);
  double jitter = 0.5;  // fraction of the delay that is random: delay * (1 - jitter + jitter * u)
  Nanos default_throttle_pause = std::chrono::seconds(1);  // a throttle that named no Retry-After
};

// What a message has been through so far, this attempt included.
struct AttemptHistory {
  int attempts = 1;   // every attempt
  int faults = 0;     // of them, answered kFault
  int throttled = 0;  // of them, answered kThrottled
  Nanos age{0};       // since its first attempt began
};

struct RetryDecision {
  enum class Kind { kDelivered, kRetry, kFail };
  Kind kind = Kind::kDelivered;
  Nanos delay{0};          // kRetry: wait at least this long before the next attempt
  bool throttled = false;  // kRetry: the provider asked everyone to pause for `delay`
  bool recipient_throttled = false;  // kRetry: only this recipient was throttled; nothing else pauses
  std::string reason;      // kFail: why, for the ledger row
};

// `history` counts this attempt's answer already (see AttemptHistory). `u`
// is a uniform random number in [0, 1) for the jitter; callers pass their
// generator's value so the policy stays pure.
RetryDecision decideRetry(const RetryPolicy& policy, const SendResult& result, const AttemptHistory& history,
                          double u) noexcept;

// The backoff before attempt `attempts + 1`: min(max_delay, base * 2^(attempts-1)) with jitter.
Nanos backoffDelay(const RetryPolicy& policy, int attempts, double u) noexcept;

}  // namespace pacer
