#include "pacer/retry.h"

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

RetryDecision decideRetry(const RetryPolicy& policy, const SendResult& result, int attempts, double u) noexcept {
  RetryDecision d;
  switch (result.outcome) {
    case SendOutcome::kDelivered: d.kind = RetryDecision::Kind::kDelivered; return d;
    case SendOutcome::kPermanent:
      d.kind = RetryDecision::Kind::kFail;
      d.reason = result.reason.empty() ? "refused by the provider" : result.reason;
      return d;
    case SendOutcome::kRetry: break;
  }
  if (result.status == 429 || result.status == 503) {
    d.kind = RetryDecision::Kind::kRetry;
    d.throttled = true;
    d.delay = result.retry_after > Nanos{0} ? result.retry_after : policy.default_throttle_pause;
    return d;
  }
  if (attempts >= std::max(1, policy.max_attempts)) {
    d.kind = RetryDecision::Kind::kFail;
    d.reason = "gave up after " + std::to_string(attempts) +
               " attempts; last: " + (result.reason.empty() ? std::string("no reason given") : result.reason);
    return d;
  }
  d.kind = RetryDecision::Kind::kRetry;
  d.counts = true;
  d.delay = backoffDelay(policy, attempts, u);
  return d;
}

}  // namespace pacer
