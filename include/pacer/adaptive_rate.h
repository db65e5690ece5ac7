// Adaptive rate below a provider's configured ceiling, pure.
//
// The configured provider rate is a ceiling, never exceeded. pacerd's worker
// lowers it through onCapacity(): a ThrottleJudge (throttle_judge.h) found
// the provider takes only a fraction `keep` of what it is sent, so the limit
// remembered is rate x keep and the rate goes just under it; a cut the judge
// later finds was noise is taken back (restoreLimit()). onThrottled() is the
// older decrease on a single throttle: it remembers the rate at which the
// throttle came as the limit and drops to a fraction of it (`decrease`).
// Either way at most once per `hold`, so one burst of 429s counts once, and
// the rate climbs back in three steps:
//
//   below hold_fraction x limit   fast (fast_climb_per_s x ceiling per second):
//                                 back to just under the limit within a second
//   from there to twice as far    slowly, additively, at (1 - hold_fraction) x
//   above the limit               limit per `probe_time` (so for 3 x
//                                 probe_time): a provider with a fixed hard
//                                 limit sees a throttle or two about once per
//                                 probe_time, and a limit measured a little low
//                                 is passed without a burst of refusals
//   above that                    no 429 came where the last one did, so the
//                                 limit has moved up: it is at least the top
//                                 of the band, and a new probe starts from
//                                 there, four times as quick as the last (down
//                                 to kMinProbeScale x probe_time): a limit
//                                 measured a little low is passed gently, a
//                                 raised one is found after a few probes that
//                                 quicken (the fast climb would run into the
//                                 real limit at full speed: a burst of
//                                 refusals and a pause every three probes)
//
// A measured cut that finds the ceiling again where the last one was (within
// kSameCeiling of the remembered limit, coming from the probe band) says the
// provider's limit is fixed: the next probe takes twice as long, up to
// kMaxProbeScale x probe_time, so a provider held at a fixed limit for long
// sees a throttle or two once every few minutes, not twice a minute. Any
// other cut, a cut taken back as noise or a new ceiling probes at the
// configured pace again (and a climb past the band quicker, as above).
//
// The rate is never above the ceiling and never below the floor. A throttle that comes
// while still climbing back (below the remembered limit) says the limit has
// dropped: the remembered limit becomes the rate it came at, and the drop is
// decrease squared, so that a storm is followed down in a few pauses, not
// many. A throttle within a second of the end of a pause (which emptied the
// provider's one-second window) says more: the provider refused once it had
// taken what was sent since, so that is the limit remembered. (For a provider
// that keeps a token bucket with a burst rather than a one-second window this
// guesses low, and the probe finds the rest.) During a pause
// the provider asked for (Retry-After) the rate does not climb. The price of
// few 429s is a slow discovery of a raised limit: about 3 x probe_time, then
// about probe_time more while the probes quicken, then 4% every
// 2 x kMinProbeScale x probe_time.
//
// Before any throttle the remembered limit is the ceiling, so a provider whose
// configured rate is right is held at it; the first 429 teaches the rest.
// src/quota/lease.lua keeps the same algorithm in Redis when the state is
// shared by every worker (the unit and Redis tests run the same scenarios).
//
// Not thread-safe; one per provider per worker, or shared through the quota.
#pragma once

#include "pacer/rate_limiter.h"
#include "pacer/time.h"

namespace pacer {

struct AdaptiveRateOptions {
  double ceiling = 0;              // messages/s: the configured provider rate
  double floor = 1;                // messages/s: never below (clipped to the ceiling)
  double decrease = 0.8;           // on a throttle: the rate it came at times this, in (0, 1)
  double hold_fraction = 0.98;     // the fast climb stops at this fraction of the remembered limit, in (0, 1]
  double fast_climb_per_s = 0.25;  // climb per second, as a fraction of the ceiling, off the probe
  Nanos probe_time = std::chrono::seconds(30);  // from the hold point up to the remembered limit
  Nanos hold = std::chrono::milliseconds(250);  // at most one decrease per hold
  Nanos latency_threshold{0};                   // 0: latency is not watched
};

class AdaptiveRate {
 public:
  AdaptiveRate(AdaptiveRateOptions options, MonoTime now) noexcept;

  // The effective rate at `now` (climbs with time while healthy).
  double rate(MonoTime now) noexcept;
  // The provider throttled: remember the rate as its limit, decrease, and do
  // not climb before `now + pause`.
  void onThrottled(MonoTime now, Nanos pause) noexcept;
  // The provider takes only `keep` (in (0, 1]) of what it is sent, as a
  // ThrottleJudge measured from its answers (include/pacer/throttle_judge.h):
  // remember rate * keep as its limit, go to hold_fraction of that (then the
  // probe), and do not climb before `now + pause`. Cuts within kCutRound of
  // the first of a round (several workers judging the same moment, and a
  // judge's measured cut two periods after its first step back) do not
  // compound: the mean of the round's measured keeps (those below 1; a keep
  // of 1 is a judge's first step back) applies to the rate before the round,
  // and they do not pause again unless for longer than the round's first
  // (every worker's judge sees the same overshoot: one pause is enough).
  void onCapacity(MonoTime now, Nanos pause, double keep) noexcept;
  static constexpr Nanos kCutRound = std::chrono::seconds(5);
  // The last round of onCapacity() cuts answered noise, not a ceiling (in
  // whole or in part): the limit becomes the rate before the round times
  // `keep` (1: all of it, never above the limit the round replaced, nor below
  // the limit now), and the rate climbs back to it fast.
  void restoreLimit(MonoTime now, double keep = 1) noexcept;
  // Sustained faults (the circuit breaker opened): decrease without learning
  // a limit, and do not climb before `now + pause`.
  void onFaults(MonoTime now, Nanos pause) noexcept;
  // A response arrived after `latency`; a slow one decreases like a throttle (without a pause).
  void onLatency(MonoTime now, Nanos latency) noexcept;
  // A new ceiling (the operator changed the provider's rate): the rate keeps
  // its value, clipped to the new ceiling; the remembered limit is clipped too.
  void setCeiling(double ceiling, MonoTime now) noexcept;
  // New tuning (a configuration reload); the ceiling, the rate and the
  // remembered limit are kept (the rate raised to the floor).
  void setTuning(const AdaptiveRateOptions& tuning, MonoTime now) noexcept;
  MonoTime pausedUntil() const noexcept { return paused_until_; }
  // The provider's limit as learned from its last throttle (the ceiling before any).
  double limit() const noexcept { return limit_; }
  // How many probe_times the slow probe takes now (1, 2, 4, ... kMaxProbeScale).
  double probeScale() const noexcept { return probe_scale_; }
  static constexpr double kSameCeiling = 0.03;
  static constexpr double kMaxProbeScale = 4;
  static constexpr double kMinProbeScale = 1.0 / 256;
  static constexpr int kMaxSegments = 64;  // of the climb walked in one call (then it goes on at the next)

 private:
  // What a decrease teaches about the provider's limit: nothing (faults),
  // the rate now (a slow answer), or, for a throttle, the rate now or what
  // the provider's window held (within a second of a pause).
  enum class Learn { kNothing, kRate, kWindow };
  void climb(MonoTime now) noexcept;
  bool decrease(MonoTime now, Learn learn) noexcept;
  void pauseUntil(MonoTime now, MonoTime until) noexcept;

  AdaptiveRateOptions options_;
  double rate_;
  double limit_;                 // the rate at the last throttle; the probe stops there
  double cut_from_ = 0;          // the limit before the last round of cuts (0: none to restore)
  double cut_rate_ = 0;          // the rate before it
  MonoTime last_cut_{};          // when that round began
  Nanos cut_pause_{0};           // and how long it paused
  double keep_sum_ = 0;          // the measured keeps (below 1) of that round
  int keeps_ = 0;                // how many
  double sent_since_pause_ = 0;  // the rate integrated over the first second after the last pause
  bool window_emptied_ = false;  // the last pause lasted a second or more
  MonoTime updated_;
  MonoTime last_decrease_;
  MonoTime paused_until_;
  bool decreased_once_ = false;
  double probe_scale_ = 1;  // the slow probe takes probe_time times this
};

// A provider's limit at an adaptive `rate` below its ceiling: the burst
// shrinks in proportion (at least 1), so a slowed provider does not get its
// full burst on top of the slower rate. (src/quota/lease.lua does the same
// inside Redis.)
RateLimit limitAtRate(RateLimit ceiling, double rate) noexcept;

// Checks tuning values; throws std::invalid_argument naming the bad one.
void validateAdaptive(const AdaptiveRateOptions& options);

}  // namespace pacer
