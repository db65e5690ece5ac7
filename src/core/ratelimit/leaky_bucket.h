// Leaky bucket as strict pacing: units leave at a constant spacing of 1/rate.
// Each unit has a slot; a unit may start when its slot has come. Slots that
// pass unused are lost once they are more than `max_lateness` old, so idle
// time is never saved up: there is no burst beyond the slots of one
// scheduler tick. `burst` is ignored (kept only for limit()).
//
// Not thread-safe (see rate_limiter.h).
#pragma once

#include "pacer/rate_limiter.h"
#include "limit_math.h"

namespace pacer::ratelimit {

class LeakyBucket final : public RateLimitingInterface {
 public:
  LeakyBucket(RateLimit limit, Nanos max_lateness, MonoTime now) noexcept;

  bool tryAcquire(std::uint64_t n, MonoTime now) noexcept override;
  std::uint64_t available(MonoTime now, std::uint64_t max) noexcept override;
  Nanos timeUntil(std::uint64_t n, MonoTime now) noexcept override;
  void setLimit(RateLimit limit, MonoTime now) noexcept override;
  RateLimit limit() const noexcept override { return limit_; }
  Algorithm algorithm() const noexcept override { return Algorithm::kLeakyBucket; }

 private:
  // The first usable slot at t: slots older than max_lateness are dropped.
  double firstSlot(std::int64_t t_ns) const noexcept;

  RateLimit limit_;
  double spacing_ns_;  // 1e9 / rate; 0 when rate is 0 (and then nothing passes)
  double lateness_ns_;
  Monotonic clock_;
  std::int64_t origin_ns_;
  double next_slot_;  // relative to origin_ns_
};

}  // namespace pacer::ratelimit
