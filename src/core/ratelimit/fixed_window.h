// Fixed window: at most rate*window units per window; windows are aligned to
// the clock's epoch (the start of a simulation). A window's whole allowance may
// go at its first instant. Fractional allowances are spread over windows so
// the long-run rate is exact: window k allows floor((k+1)*x) - floor(k*x)
// units, x = rate * window. `burst` is ignored. Not thread-safe.
#pragma once

#include "pacer/rate_limiter.h"
#include "limit_math.h"

namespace pacer::ratelimit {

class FixedWindow final : public RateLimitingInterface {
 public:
  FixedWindow(RateLimit limit, Nanos window, MonoTime now) noexcept;

  bool tryAcquire(std::uint64_t n, MonoTime now) noexcept override;
  std::uint64_t available(MonoTime now, std::uint64_t max) noexcept override;
  Nanos timeUntil(std::uint64_t n, MonoTime now) noexcept override;
  void setLimit(RateLimit limit, MonoTime now) noexcept override;
  RateLimit limit() const noexcept override { return limit_; }
  Algorithm algorithm() const noexcept override { return Algorithm::kFixedWindow; }

 private:
  void roll(std::int64_t t_ns) noexcept;
  std::uint64_t allowance(std::int64_t k) const noexcept;

  RateLimit limit_;
  std::int64_t window_ns_;
  double per_window_;  // x = rate * window, units
  Monotonic clock_;
  std::int64_t index_;
  std::uint64_t used_ = 0;
};

}  // namespace pacer::ratelimit
