// Token bucket: tokens arrive at `rate` per second up to `burst`; a unit of
// work takes one. Starts full. Not thread-safe (see rate_limiter.h): a bucket
// belongs to one scheduler thread, which is why it needs no lock.
//
// The state is one number, the instant at which the bucket would have been
// empty (`empty_at_`); tokens at time t are min(burst, (t - empty_at) * rate).
// Refill costs nothing, a grant moves empty_at_ forward by 1/rate, and the
// bound is exact: in any window w at most rate*w + burst units go through.
// A `now` earlier than one already seen finds fewer tokens, never more, so a
// clock that jumps back cannot grant anything extra.
//
// Times are integers in 1/4096 ns ("ticks"), relative to origin_ns_: a grant
// is then a compare, a max and an add on integers, the cheapest dependency
// chain a bucket can have. 1/rate is rounded *up* to whole ticks, so the rate
// is never exceeded; it falls short by less than 1/409,600 (0.00025%, at
// 1e7/s; less at lower rates), and a token due exactly at some instant may
// arrive a fraction of a nanosecond after it. A bucket tracks at most about
// 3.3 days of refill: a burst that takes longer than that to fill is clipped.
#pragma once

#include "pacer/rate_limiter.h"
#include "limit_math.h"

namespace pacer::ratelimit {

class TokenBucket final : public RateLimitingInterface {
 public:
  TokenBucket(RateLimit limit, MonoTime now) noexcept;

  bool canDoWork(MonoTime now) noexcept override;
  bool tryAcquire(std::uint64_t n, MonoTime now) noexcept override;
  std::uint64_t available(MonoTime now, std::uint64_t max) noexcept override;
  Nanos timeUntil(std::uint64_t n, MonoTime now) noexcept override;
  void setLimit(RateLimit limit, MonoTime now) noexcept override;
  RateLimit limit() const noexcept override { return limit_; }
  Algorithm algorithm() const noexcept override { return Algorithm::kTokenBucket; }

  // Tokens held at `now`, fractional. For tests and metrics.
  double tokens(MonoTime now) const noexcept;

 private:
  static constexpr int kSubNsBits = 12;  // 1/4096 ns resolution
  // How far from origin_ns_ a `now` is taken at face value (2^49 ns, ~6.5
  // days); farther ones are clamped, which only matters to a bucket that is
  // full (or empty, going backwards) anyway.
  static constexpr std::int64_t kMaxDistanceNs = std::int64_t{1} << 49;

  std::int64_t rel(MonoTime now) const noexcept {
    const std::int64_t d = std::clamp(toNs(now) - origin_ns_, -kMaxDistanceNs, kMaxDistanceNs);
    return d * (std::int64_t{1} << kSubNsBits);
  }
  // empty_at_ as it stands at `r` once a full bucket's overflow is dropped.
  std::int64_t emptyAt(std::int64_t r) const noexcept { return std::max(empty_at_, r - burst_span_); }
  // Whole tokens held in `span` ticks.
  std::uint64_t wholeTokens(std::int64_t span) const noexcept;
  // Records a grant that moves empty_at to `next`, computed at rel() = r, at `now`.
  void take(std::int64_t next, std::int64_t r, MonoTime now) noexcept;

  RateLimit limit_;
  bool stopped_ = true;          // rate 0: nothing passes
  std::int64_t per_token_ = 1;   // ticks per token, rounded up
  std::int64_t burst_span_ = 0;  // ticks a full bucket holds: burst * per_token_
  double burst_ = 1;
  std::int64_t origin_ns_;
  std::int64_t empty_at_ = 0;  // ticks relative to origin_ns_
};

}  // namespace pacer::ratelimit
