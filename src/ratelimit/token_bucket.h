// Token bucket: tokens arrive at `rate` per second up to `burst`; a unit of
// work takes one. Starts full. Not thread-safe (see rate_limiter.h).
//
// The state is one number, the instant at which the bucket would have been
// empty (`empty_at_`); tokens at time t are min(burst, (t - empty_at) * rate).
// That makes refill free and keeps the bound exact: in any window w at most
// rate*w + burst units go through.
#pragma once

#include "pacer/rate_limiter.h"
#include "ratelimit/limit_math.h"

namespace pacer::ratelimit {

class TokenBucket final : public RateLimitingInterface {
 public:
  TokenBucket(RateLimit limit, MonoTime now) noexcept;

  bool tryAcquire(std::uint64_t n, MonoTime now) noexcept override;
  std::uint64_t available(MonoTime now, std::uint64_t max) noexcept override;
  Nanos timeUntil(std::uint64_t n, MonoTime now) noexcept override;
  void setLimit(RateLimit limit, MonoTime now) noexcept override;
  RateLimit limit() const noexcept override { return limit_; }
  Algorithm algorithm() const noexcept override { return Algorithm::kTokenBucket; }

  // Tokens held at `now`, fractional. For tests and metrics.
  double tokens(MonoTime now) noexcept;

 private:
  // Tokens at `t` (ns, already clamped), relative to origin_.
  double tokensAt(std::int64_t t_ns) const noexcept {
    const double held = (static_cast<double>(t_ns - origin_ns_) - empty_at_) * rate_per_ns_;
    return held < burst_ ? held : burst_;
  }
  void take(double n, std::int64_t t_ns) noexcept;

  RateLimit limit_;
  double rate_per_ns_;
  double burst_;
  Monotonic clock_;
  // empty_at_ is kept relative to origin_ns_ so a double holds it to well
  // under a nanosecond; take() moves the origin forward now and then.
  std::int64_t origin_ns_;
  double empty_at_;
};

}  // namespace pacer::ratelimit
