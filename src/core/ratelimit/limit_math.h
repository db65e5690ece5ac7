// Small shared helpers for the limiters. Private to src/ratelimit.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "pacer/rate_limiter.h"

namespace pacer::ratelimit {

inline std::int64_t toNs(MonoTime t) noexcept { return t.time_since_epoch().count(); }

// A limiter counts in nanoseconds from its own origin, re-based once the
// origin is this far behind (~18 minutes), so the counts stay small.
inline constexpr std::int64_t kRebaseAfterNs = std::int64_t{1} << 40;

// A rate a limiter can run with: NaN, negatives and infinities become 0
// ("nothing passes"), the safe direction; validateLimit refuses them earlier.
inline double sanitizeRate(double rate_per_s) noexcept {
  return (std::isfinite(rate_per_s) && rate_per_s > 0.0) ? rate_per_s : 0.0;
}

// Bursts below one unit would let nothing start; they count as one.
inline double sanitizeBurst(double burst) noexcept { return (std::isfinite(burst) && burst > 1.0) ? burst : 1.0; }

// Converts a non-negative double count to uint64 without overflow.
inline std::uint64_t floorCount(double x) noexcept {
  if (!(x > 0.0)) return 0;
  if (x >= 1.8e19) return UINT64_MAX;
  return static_cast<std::uint64_t>(x);
}

// Nanoseconds as a Nanos, rounded up, saturating at kNever.
inline Nanos ceilNanos(double ns) noexcept {
  if (!(ns > 0.0)) return Nanos{0};
  if (ns >= 9.2e18) return kNever;
  return Nanos{static_cast<std::int64_t>(std::ceil(ns))};
}

// Time never runs backwards inside a limiter: an earlier `now` counts as the
// latest one seen.
class Monotonic {
 public:
  explicit Monotonic(std::int64_t start_ns) noexcept : last_ns_(start_ns) {}
  std::int64_t clamp(MonoTime now) noexcept {
    last_ns_ = std::max(last_ns_, toNs(now));
    return last_ns_;
  }
  std::int64_t last() const noexcept { return last_ns_; }

 private:
  std::int64_t last_ns_;
};

}  // namespace pacer::ratelimit
