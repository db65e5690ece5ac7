// Sliding window counter (seed 004's weighted formula): counts per fixed
// window, and estimates the count in the sliding window ending now as
//   current + previous * (1 - elapsed fraction of the current window).
// A unit may start if estimate + 1 <= rate * window. Memory is two counters;
// the price is that the estimate assumes the previous window's units were
// spread evenly. `burst` is ignored. Not thread-safe.
#pragma once

#include "pacer/rate_limiter.h"
#include "limit_math.h"

namespace pacer::ratelimit {

class SlidingWindow final : public RateLimitingInterface {
 public:
  SlidingWindow(RateLimit limit, Nanos window, MonoTime now) noexcept;

  bool tryAcquire(std::uint64_t n, MonoTime now) noexcept override;
  std::uint64_t available(MonoTime now, std::uint64_t max) noexcept override;
  Nanos timeUntil(std::uint64_t n, MonoTime now) noexcept override;
  void setLimit(RateLimit limit, MonoTime now) noexcept override;
  RateLimit limit() const noexcept override { return limit_; }
  Algorithm algorithm() const noexcept override { return Algorithm::kSlidingWindow; }

 private:
  void roll(std::int64_t t_ns) noexcept;
  double estimate(std::int64_t t_ns) const noexcept;

  RateLimit limit_;
  std::int64_t window_ns_;
  double per_window_;
  Monotonic clock_;
  std::int64_t index_;
  double current_ = 0;
  double previous_ = 0;
};

}  // namespace pacer::ratelimit
