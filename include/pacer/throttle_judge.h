// Tells a provider's capacity from its throttle noise, pure.
//
// A provider that refuses because it is sent too much (a strict window, a
// quota) refuses a share that falls to nothing once the rate is at or below
// its capacity. A provider that refuses at random (a busy node, a flaky
// front end) refuses the same share at any rate: lowering the rate only loses
// traffic. Lowering on every throttle cannot tell the two apart; this judge
// can, from the answers themselves.
//
// It counts one provider's answers as they come (a throttle, or anything
// else) in periods of at most `period`, and keeps `noise`, the share of
// throttles the provider gives when it is not overloaded (0 until learned).
//
//   - Excess: at the end of a period (of at least `min_answers` answers),
//     its throttles are significantly more than the noise explains (more
//     than answers * noise + z standard deviations, + 1 once noise is known;
//     with none known, a single throttle is excess, and so is one that any
//     worker saw in the provider's last second, providerRates(), measured
//     there). Verdict kCapacity with
//     keep = (1 - share) / (1 - noise): the fraction of the rate the provider
//     really takes, estimated from what it accepted (at least `min_keep`: a
//     provider refusing everything is pausing, and a real ceiling lower than
//     that is reached in a few cuts). The caller lowers the rate to that, and
//     the next period is a test. A cut deeper than `soft_keep` on a single
//     period's word could be a passing burst (a start, a reconnect): the
//     first is only a step back (keep 1: the limit is the rate it came at),
//     and the measured cut is made when the next judged period is excessive
//     too (or, if the test after the step back was quiet, the one after it:
//     the step back's pause may be all that quieted the test).
//   - The test: the period after a cut (after one more period of settling,
//     while the provider's window still holds what came before). A ceiling C
//     (what the cut period accepted) refuses only what is sent above C, so
//     at the lower rate the share falls to max(noise, 1 - C / rate); noise
//     refuses the same share at any rate. If the rate did fall (answers per
//     second at most `verify_rate_fall` of the cut period's) and the share
//     is nearer to noise's prediction (above the ceiling's by more than
//     `verify_fall` of the gap between the two), the throttles were noise:
//     verdict kNoise, noise becomes the share measured at the lower rate, and
//     the caller takes the cut back (as far as keep, the cut period judged
//     again with that noise, says: noise can come on top of a ceiling). Otherwise the cut stands (and a
//     still-significant excess cuts again).
//   - After a pause (a Retry-After, the judge's own or another worker's,
//     told through pausedUntil()), the provider's one-second window refills
//     from empty while the senders come back up to speed: for `period` after
//     the pause ends its throttles come in a lump at an uneven rate and say
//     little about the share at a steady one. Answers until then are not
//     judged (those in flight during the pause neither), and the period
//     after a cut that paused needs no other settling.
//   - A period with no excess and a share at most one standard deviation
//     above noise moves noise towards it (`noise_adapt`), so noise that goes
//     away is forgotten. A share higher than that does not raise it: it may
//     be a ceiling coming closer, which only a cut and its test tell apart.
//
// So a provider with a real ceiling is held at it (throttles stop), and a
// noisy one keeps its rate: each noisy throttle is only the message's retry,
// at the provider's pace, through the quota like any message.
//
// Not thread-safe; one per provider per worker. Time never goes backwards
// here: an earlier `now` counts as the last one.
#pragma once

#include <cstdint>

#include "pacer/accepted_meter.h"
#include "pacer/time.h"

namespace pacer {

struct ThrottleJudgeOptions {
  Nanos period = std::chrono::seconds(1);  // answers are judged over this long (longer until min_answers)
  std::uint32_t min_answers = 20;          // no verdict on fewer answers than this
  double z = 3;                            // standard deviations above the noise that count as excess
  double noise_adapt = 0.2;                // a quiet period's weight in the noise level, in [0, 1]
  double verify_fall = 0.5;                // after a cut: how far from the ceiling's share towards noise's is noise
  double verify_rate_fall = 0.95;          // ... provided the answer rate fell below this fraction
  double max_noise = 0.5;                  // noise above this is not believed (capped)
  double min_keep = 0.5;                   // one cut keeps at least this much of the rate (a provider
                                           // refusing all is a pause, not a capacity of 0)
  double soft_keep = 0.98;                 // a deeper cut needs two excessive periods in a row
  double raise_step = 0.02;                // a quiet test after a deep cut raises it by this much of the rate
  int max_raises = 1;                      // ... at most this many times after one cut (0: never)
};

struct ThrottleVerdict {
  enum class Kind : std::uint8_t { kNone, kCapacity, kNoise, kRaise };
  Kind kind = Kind::kNone;
  // kCapacity: the fraction of the rate the provider takes, in (0, 1]; kNoise:
  // the same for the cut period, judged again with the noise now known (1:
  // the cut was all noise; below 1: noise on top of a ceiling); kRaise: the
  // fraction of the rate before the cut the limit goes back to (a quiet test
  // after a deep cut: AdaptiveRate::restoreLimit, as for kNoise).
  double keep = 1;
  double share = 0;  // the throttle share of the judged period
  double noise = 0;  // the noise level after the verdict
  Nanos pause{0};    // kCapacity: the longest Retry-After the period's throttles named (0: none, or
                     // a cut of at most 1 - soft_keep whose Retry-After is at most a period)
};

class ThrottleJudge {
 public:
  ThrottleJudge(ThrottleJudgeOptions options, MonoTime now) noexcept;

  // One answer from the provider: `throttled` (429, ESME_RTHROTTLED, ...) or
  // anything else (accepted, refused, failed). `retry_after` is what a
  // throttle named (0: nothing). Returns a verdict when this answer ends a
  // judgement, kNone otherwise.
  ThrottleVerdict answer(MonoTime now, bool throttled, Nanos retry_after = Nanos{0}) noexcept;

  // The provider is paused until `until` (the latest pause known wins): the
  // answers before `until + period` are not judged.
  void pausedUntil(MonoTime until) noexcept;

  // The rate the sender is held to now (its effective rate; 0: not known).
  // When known, the test after a cut reads this rather than the answers'
  // own rate (did it fall; what would a ceiling refuse at it): a sender that
  // is one of several sees its share of the provider's traffic move by more
  // than a small cut.
  void heldTo(double rate) noexcept { held_ = rate > 0 && rate < 1e12 ? rate : 0; }

  // What the whole provider accepted and throttled per second over the last
  // full second without a pause or its refill (every worker's AcceptedMeter,
  // summed by the quota; one worker's own without one). Once told, a
  // measured cut (a deep excess) is made from the provider's throttle share
  // rather than this judge's: limit = held rate x accepted / (accepted +
  // throttled) / (1 - noise), keep = limit over the rate the cut applies to
  // (the rate before the step back it confirms, else the held rate); the
  // period waits up to one more period for a known figure. With them known,
  // a test after a deep cut that found no throttle at all, here and
  // provider-wide, raises the cut by `raise_step` (verdict kRaise) and tests
  // again, at most `max_raises` times, until a throttle or the rate before
  // the cut. Never told: the judge's own share, and no raise.
  void providerRates(AcceptedRates rates) noexcept;

  // Judges again from `now` after answers it did not see (another worker
  // judged them): the period starts afresh, no cut is pending or tested,
  // and `noise` (what the other judge learned) is the noise level.
  void resume(MonoTime now, double noise) noexcept;

  double noise() const noexcept { return noise_; }
  std::uint64_t capacityVerdicts() const noexcept { return capacity_verdicts_; }
  std::uint64_t noiseVerdicts() const noexcept { return noise_verdicts_; }
  // Throttles judged noise: those of periods without excess (no cut).
  std::uint64_t noiseThrottles() const noexcept { return noise_throttles_; }

 private:
  bool excessive() const noexcept;
  bool wideExcess() const noexcept;
  double wideShare() const noexcept;
  ThrottleVerdict::Kind excessOrNone() const noexcept;
  bool awaitingRates(Nanos elapsed) const noexcept;
  double measuredKeep(double share) const noexcept;
  ThrottleVerdict close(MonoTime now, ThrottleVerdict::Kind kind) noexcept;
  ThrottleVerdict judgeTest(MonoTime now) noexcept;
  void restart(MonoTime now) noexcept;

  ThrottleJudgeOptions options_;
  MonoTime start_;  // of the current period
  MonoTime last_;
  std::uint64_t answers_ = 0;
  std::uint64_t throttles_ = 0;
  Nanos longest_retry_after_{0};
  MonoTime refilled_{};  // answers before this are not judged (a pause and its refill)
  double noise_ = 0;
  // After a cut: the period it judged (share, answers per second), tested by the next one.
  bool testing_ = false;
  bool settling_ = false;      // the period right after a cut, before its test
  bool soft_pending_ = false;  // the last cut was only a step back: another excess makes the measured cut
  double cut_share_ = 0;
  double cut_rate_ = 0;
  double held_ = 0;      // heldTo(), as last told
  double cut_held_ = 0;  // ... when the cut period ended
  std::uint64_t cut_answers_ = 1;
  AcceptedRates wide_;        // providerRates(), as last told
  bool wide_told_ = false;    // ... ever
  double step_held_ = 0;      // held_ when the pending step back was taken (the rate before its round)
  double raise_keep_ = 0;     // > 0: the last deep cut's keep, raised by quiet tests
  int raises_ = 0;            // ... this many times
  std::uint64_t capacity_verdicts_ = 0;
  std::uint64_t noise_verdicts_ = 0;
  std::uint64_t noise_throttles_ = 0;
};

// Checks the options; throws InvalidError naming the bad one.
void validateThrottleJudge(const ThrottleJudgeOptions& options);

}  // namespace pacer
