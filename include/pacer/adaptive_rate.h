// Adaptive rate below a provider's configured ceiling (AIMD), pure.
//
// The configured provider rate is a ceiling, never exceeded. When the
// provider throttles (429/503) or its latency climbs above a threshold, the
// effective rate drops multiplicatively (at most once per `hold`, so one
// burst of 429s counts once); while it is healthy the rate climbs back
// additively, never above the ceiling and never below the floor. During a
// pause the provider asked for (Retry-After) it does not climb.
//
// Plain AIMD settles well below its target when the target moves
// (Netflix concurrency-limits #72): it halves from wherever it overshot and
// then crawls. Here the climb has three speeds, like TCP CUBIC's window:
// fast up to an estimate of the last rate that worked (the throttled rate
// times the square root of the decrease factor), slow on the plateau from
// there to the throttled rate (where the provider said no last time), and
// fast again above it (the provider's limit has moved). So a throttled
// sender settles just under the provider's limit instead of oscillating far
// below it, and recovery to the ceiling takes seconds, not minutes.
//
// Not thread-safe; one per provider per worker, or shared through the quota.
#pragma once

#include "pacer/rate_limiter.h"
#include "pacer/time.h"

namespace pacer {

struct AdaptiveRateOptions {
  double ceiling = 0;                           // messages/s: the configured provider rate
  double floor = 1;                             // messages/s: never below (clipped to the ceiling)
  double decrease = 0.5;                        // multiply by this on throttling, in (0, 1)
  double fast_climb_per_s = 0.25;               // climb per second, as a fraction of the ceiling, off the plateau
  double plateau_climb_per_s = 0.05;            // on the plateau below the last throttled rate
  Nanos hold = std::chrono::milliseconds(250);  // at most one decrease per hold
  Nanos latency_threshold{0};                   // 0: latency is not watched
};

class AdaptiveRate {
 public:
  AdaptiveRate(AdaptiveRateOptions options, MonoTime now) noexcept;

  // The effective rate at `now` (climbs with time while healthy).
  double rate(MonoTime now) noexcept;
  // The provider throttled: decrease, and do not climb before `now + pause`.
  void onThrottled(MonoTime now, Nanos pause) noexcept;
  // A response arrived after `latency`; a slow one counts like a throttle (without a pause).
  void onLatency(MonoTime now, Nanos latency) noexcept;
  // A new ceiling (the operator changed the provider's rate): the rate keeps
  // its value, clipped to the new ceiling.
  void setCeiling(double ceiling, MonoTime now) noexcept;
  // New decrease, floor and latency threshold (a configuration reload); the
  // ceiling, the rate and the plateau are kept (the rate raised to the floor).
  void setTuning(const AdaptiveRateOptions& tuning, MonoTime now) noexcept;
  MonoTime pausedUntil() const noexcept { return paused_until_; }

 private:
  void climb(MonoTime now) noexcept;
  void decrease(MonoTime now) noexcept;

  AdaptiveRateOptions options_;
  double rate_;
  double last_good_;     // below this the climb is fast
  double throttled_at_;  // the rate at the last decrease: the plateau ends here
  MonoTime updated_;
  MonoTime last_decrease_;
  MonoTime paused_until_;
  bool decreased_once_ = false;
};

// A provider's limit at an adaptive `rate` below its ceiling: the burst
// shrinks in proportion (at least 1), so a slowed provider does not get its
// full burst on top of the slower rate. (src/quota/lease.lua does the same
// inside Redis.)
RateLimit limitAtRate(RateLimit ceiling, double rate) noexcept;

}  // namespace pacer
