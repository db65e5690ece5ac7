// Sliding log: remembers the start time of every unit in the last `window`
// and lets a unit start if fewer than floor(rate*window) started in
// (now - window, now]. Exact, but memory grows with the limit: one 8-byte
// timestamp per unit in the window, at most `max_log_entries` (a larger
// limit is refused by validateLimit, and clipped to the cap by setLimit).
// The log grows as it fills, so an idle limiter costs little. `burst` is
// ignored. Not thread-safe.
#pragma once

#include <vector>

#include "pacer/rate_limiter.h"
#include "limit_math.h"

namespace pacer::ratelimit {

class SlidingLog final : public RateLimitingInterface {
 public:
  SlidingLog(RateLimit limit, Nanos window, std::uint64_t max_entries, MonoTime now);

  bool tryAcquire(std::uint64_t n, MonoTime now) noexcept override;
  std::uint64_t available(MonoTime now, std::uint64_t max) noexcept override;
  Nanos timeUntil(std::uint64_t n, MonoTime now) noexcept override;
  void setLimit(RateLimit limit, MonoTime now) noexcept override;
  RateLimit limit() const noexcept override { return limit_; }
  Algorithm algorithm() const noexcept override { return Algorithm::kSlidingLog; }

  std::uint64_t entries() const noexcept { return size_; }

 private:
  void expire(std::int64_t t_ns) noexcept;
  std::int64_t at(std::uint64_t i) const noexcept { return log_[(head_ + i) % log_.size()]; }
  void push(std::int64_t t_ns, std::uint64_t n);
  void reshape(std::uint64_t capacity);

  RateLimit limit_;
  std::int64_t window_ns_;
  std::uint64_t max_entries_;
  std::uint64_t cap_units_ = 0;  // floor(rate * window), clipped to max_entries_
  Monotonic clock_;
  std::vector<std::int64_t> log_;  // ring buffer, oldest at head_
  std::uint64_t head_ = 0;
  std::uint64_t size_ = 0;
};

}  // namespace pacer::ratelimit
