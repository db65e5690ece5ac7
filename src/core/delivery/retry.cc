#include "pacer/retry.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace pacer {

Nanos backoffDelay(const RetryPolicy& policy, int attempts, double u) noexcept {
  const double base = static_cast<double>(policy.base_delay.count());
  const double cap = static_cast<double>(policy.max_delay.count());
  const double exp = std::min(cap, base * std::exp2(std::clamp(attempts - 1, 0, 62)));
  const double jitter = std::clamp(policy.jitter, 0.0, 1.0);
  const double d = exp * (1.0 - jitter + jitter * std::clamp(u, 0.0, 1.0));
  return Nanos{static_cast<std::int64_t>(d)};
}

namespace {

std::string lastAnswer(const SendResult& r) {
  return r.reason.empty() ? std::string(outcomeName(r.outcome)) : r.reason;
}

RetryDecision fail(std::string reason) {
  RetryDecision d;
  d.kind = RetryDecision::Kind::kFail;
  d.reason = std::move(reason);
  return d;
}

}  // namespace

RetryDecision decideRetry(const RetryPolicy& policy, const SendResult& result, const AttemptHistory& history,
                          double u) noexcept {
  try {
    switch (result.outcome) {
      case SendOutcome::kDelivered: return RetryDecision{};
      case SendOutcome::kPermanent: return fail(result.reason.empty() ? "refused by the provider" : result.reason);
      case SendOutcome::kInvalidToken:
        return fail(result.reason.empty() ? "invalid token" : "invalid token: " + result.reason);
      case SendOutcome::kThrottled:
      case SendOutcome::kFault: break;
    }
    const bool throttled = result.outcome == SendOutcome::kThrottled;
    if (throttled && history.throttled >= std::max(1, policy.max_throttled))
      return fail(fmt::format("gave up after {} attempts ({} throttled); last: {}", history.attempts, history.throttled,
                              lastAnswer(result)));
    if (!throttled && history.faults >= std::max(1, policy.max_attempts))
      return fail(fmt::format("gave up after {} attempts ({} failed); last: {}", history.attempts, history.faults,
                              lastAnswer(result)));
    RetryDecision d;
    d.kind = RetryDecision::Kind::kRetry;
    // One recipient throttled (APNs TooManyRequests): this message backs off
    // alone, longer with each throttled attempt; the provider is not paused.
    const bool recipient = throttled && result.scope == AnswerScope::kRecipient;
    d.throttled = throttled && !recipient;
    d.recipient_throttled = recipient;
    if (recipient)
      d.delay = std::max(result.retry_after, backoffDelay(policy, std::max(1, history.throttled), u));
    else
      d.delay = throttled ? (result.retry_after > Nanos{0} ? result.retry_after : policy.default_throttle_pause)
                          : backoffDelay(policy, std::max(1, history.faults), u);
    if (history.age + d.delay > policy.max_age)
      return fail(fmt::format("gave up after {} attempts over {:.0f} s (max age {:.0f} s); last: {}", history.attempts,
                              std::chrono::duration<double>(history.age).count(),
                              std::chrono::duration<double>(policy.max_age).count(), lastAnswer(result)));
    return d;
  } catch (...) {  // formatting ran out of memory: fail, with as much as can be said
    RetryDecision d;
    d.kind = RetryDecision::Kind::kFail;
    return d;
  }
}

}  // namespace pacer
