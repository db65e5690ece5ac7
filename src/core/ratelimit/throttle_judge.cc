#include "pacer/throttle_judge.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "pacer/error.h"

namespace pacer {

namespace {

// A period that gathered fewer than min_answers for this many periods is
// started again: counts that old say nothing about the rate now.
constexpr int kStalePeriods = 10;
// A measured cut (or a raise) waits this many periods at most for the
// provider's rates to be known (providerRates()).
constexpr int kRatesWait = 2;

double seconds(Nanos d) noexcept { return std::max(1e-3, std::chrono::duration<double>(d).count()); }

}  // namespace

ThrottleJudge::ThrottleJudge(ThrottleJudgeOptions options, MonoTime now) noexcept
    : options_(options), start_(now), last_(now) {
  options_.noise_adapt = std::clamp(options_.noise_adapt, 0.0, 1.0);
  options_.max_noise = std::clamp(options_.max_noise, 0.0, 0.99);
  options_.min_answers = std::max<std::uint32_t>(options_.min_answers, 1);
  options_.min_keep = std::clamp(options_.min_keep, 0.01, 1.0);
  options_.soft_keep = std::clamp(options_.soft_keep, options_.min_keep, 1.0);
  options_.raise_step = std::clamp(options_.raise_step, 0.0, 1.0);
  options_.max_raises = std::clamp(options_.max_raises, 0, 100);
}

void ThrottleJudge::providerRates(AcceptedRates rates) noexcept {
  const bool sane = std::isfinite(rates.accepted) && std::isfinite(rates.throttled) && rates.accepted < 1e12 &&
                    rates.throttled < 1e12;
  wide_ = sane ? rates : AcceptedRates{};
  wide_told_ = true;
}

// A period that would end now waits for the provider's rates when they
// decide the verdict: the measured cut that confirms a step back, or a
// raise after a quiet test.
bool ThrottleJudge::awaitingRates(Nanos elapsed) const noexcept {
  if (!wide_told_ || wide_.known() || elapsed >= options_.period * kRatesWait) return false;
  if (soft_pending_) return excessive();
  return testing_ && raise_keep_ > 0 && throttles_ == 0;
}

// The fraction of the rate the provider takes, measured: when known, from
// the whole provider's throttle share over the last clean second (every
// worker's answers), for the cut that confirms a step back or any deep
// excess; from this judge's own share for a small excess of its own (the
// probe touching the limit). The provider's share, not what it accepted:
// when the workers send less than the held rate (their leases, a loaded
// machine), what it accepted is what they sent, and a cut to it leaves the
// rate under the ceiling; its share of throttles says by how much what they
// sent was too much. The limit is the held rate times what was not refused
// (over 1 - noise); keep is that over the rate the cut applies to (the rate
// before the step back it confirms).
double ThrottleJudge::measuredKeep(double share) const noexcept {
  const double by_share = std::clamp((1 - share) / (1 - noise_), options_.min_keep, 1.0);
  const double answered = wide_.accepted + wide_.throttled;
  if ((by_share >= options_.soft_keep && !soft_pending_) || !wide_.known() || !(answered > 0)) return by_share;
  const double base = soft_pending_ && step_held_ > 0 ? step_held_ : held_;
  if (!(base > 0) || !(held_ > 0)) return by_share;
  const double limit = held_ * (wide_.accepted / answered) / (1 - noise_);
  const double by_provider = limit / base;
  return by_provider < 1 ? std::max(by_provider, options_.min_keep) : by_share;
}

bool ThrottleJudge::excessive() const noexcept {
  const double n = static_cast<double>(answers_);
  const double expected = n * noise_;
  const double sd = std::sqrt(n * noise_ * (1 - noise_));
  // With no noise known, any throttle is more than noise explains: found at
  // the first one, a ceiling costs the fewest throttles. With noise, one
  // more than its spread.
  return static_cast<double>(throttles_) > expected + options_.z * sd + (noise_ > 0 ? 1 : 0);
}

// While no noise is known, a throttle or two that any worker saw in the
// provider's last second (providerRates()), the probe touching its window,
// is an excess as much as one of this judge's own: the judge sees only its
// own part of the traffic, and four workers' probe drew one or two throttles
// at a time, three in four of them on the other workers, for seconds before
// one reached the judge (7.4 a minute over HTTP where the judge's own
// counted alone, bench/RESULTS.md). A deeper excess is the judge's own to
// see, or the refused worker's (max_noise); with noise known, its own
// share, on which the noise was learned, decides.
bool ThrottleJudge::wideExcess() const noexcept {
  return noise_ <= 0 && wide_.known() && wide_.throttled > 0 && wideShare() <= 1 - options_.soft_keep;
}

double ThrottleJudge::wideShare() const noexcept {
  const double answered = wide_.accepted + wide_.throttled;
  return wide_.known() && answered > 0 ? wide_.throttled / answered : 0;
}

ThrottleVerdict::Kind ThrottleJudge::excessOrNone() const noexcept {
  return excessive() || wideExcess() ? ThrottleVerdict::Kind::kCapacity : ThrottleVerdict::Kind::kNone;
}

ThrottleVerdict ThrottleJudge::answer(MonoTime now, bool throttled, Nanos retry_after) noexcept {
  now = std::max(now, last_);
  last_ = now;
  ThrottleVerdict v;
  if (now < refilled_) {
    // A pause and the refill after it: nothing counted; the period starts
    // when the window has refilled (and serves as the settling after a cut).
    settling_ = false;
    restart(now);
    return v;
  }
  const Nanos elapsed = now - start_;
  if (settling_ && elapsed >= options_.period) {
    // The provider's window still held what was sent before the cut: the
    // period after it says nothing, the one after that is the test.
    settling_ = false;
    restart(now);
  } else if (elapsed >= options_.period && answers_ >= options_.min_answers && !awaitingRates(elapsed)) {
    v = testing_ ? judgeTest(now) : close(now, excessOrNone());
  } else if (elapsed >= options_.period * kStalePeriods) {
    testing_ = false;  // too few answers for too long: start again, judge nothing
    close(now, ThrottleVerdict::Kind::kNone);
  }
  ++answers_;
  if (throttled) {
    ++throttles_;
    longest_retry_after_ = std::max(longest_retry_after_, retry_after);
  }
  return v;
}

// Ends the period with `kind` (kCapacity: a cut, tested by the next period;
// kNone: a quiet period, whose share the noise level follows) and starts the next.
ThrottleVerdict ThrottleJudge::close(MonoTime now, ThrottleVerdict::Kind kind) noexcept {
  ThrottleVerdict v;
  v.kind = kind;
  v.share = answers_ > 0 ? static_cast<double>(throttles_) / static_cast<double>(answers_) : 0;
  // An excess only the provider-wide second showed is measured there.
  if (kind == ThrottleVerdict::Kind::kCapacity && !excessive()) v.share = wideShare();
  if (kind == ThrottleVerdict::Kind::kCapacity) {
    // A deep cut on one period's word could be a passing burst (a start, a
    // reconnect): the first only steps back from the rate it came at (keep
    // 1); a second excessive period in a row makes the measured cut.
    const double measured = measuredKeep(v.share);
    const bool confirmed = measured >= options_.soft_keep || soft_pending_;
    v.keep = confirmed ? measured : 1.0;
    if (!confirmed) step_held_ = held_;
    // A deep measured cut is tested for being too deep too (judgeTest).
    raise_keep_ = confirmed && measured < options_.soft_keep && options_.max_raises > 0 ? measured : 0;
    raises_ = 0;
    soft_pending_ = !confirmed;
    // A small excess (the probe touching the limit: a throttle or two in a
    // hundred) asking to wait no longer than a period is the window's own
    // refill: the small cut is enough, and each throttled message waits its
    // Retry-After. A deeper excess, or a longer Retry-After (a provider's
    // penalty), pauses the provider.
    const bool small = measured >= options_.soft_keep && longest_retry_after_ <= options_.period;
    v.pause = small ? Nanos{0} : longest_retry_after_;
    testing_ = true;
    settling_ = true;
    cut_share_ = v.share;
    cut_rate_ = static_cast<double>(answers_) / seconds(now - start_);
    cut_held_ = held_;
    cut_answers_ = answers_;
    ++capacity_verdicts_;
  } else if (answers_ >= options_.min_answers) {
    soft_pending_ = false;
    noise_ = std::clamp(noise_ + options_.noise_adapt * (v.share - noise_), 0.0, options_.max_noise);
    noise_throttles_ += throttles_;
  }
  v.noise = noise_;
  restart(now);
  return v;
}

void ThrottleJudge::pausedUntil(MonoTime until) noexcept {
  if (until > MonoTime{}) refilled_ = std::max(refilled_, until + options_.period);
}

void ThrottleJudge::resume(MonoTime now, double noise) noexcept {
  now = std::max(now, last_);
  last_ = now;
  noise_ = std::isfinite(noise) ? std::clamp(noise, 0.0, options_.max_noise) : 0.0;
  testing_ = settling_ = soft_pending_ = false;
  raise_keep_ = 0;
  restart(now);
}

void ThrottleJudge::restart(MonoTime now) noexcept {
  start_ = now;
  answers_ = 0;
  throttles_ = 0;
  longest_retry_after_ = Nanos{0};
}

// The period after a cut: a rate that fell with a throttle share that did
// not says the throttles were noise.
ThrottleVerdict ThrottleJudge::judgeTest(MonoTime now) noexcept {
  testing_ = false;
  const double share = static_cast<double>(throttles_) / static_cast<double>(answers_);
  // The rates compared: what the sender was held to when known (heldTo),
  // else the answers' own rate.
  const bool held = cut_held_ > 0 && held_ > 0;
  const double rate = held ? held_ : static_cast<double>(answers_) / seconds(now - start_);
  const double cut_rate = held ? cut_held_ : cut_rate_;
  const bool rate_fell = rate <= options_.verify_rate_fall * cut_rate;
  // What each reading predicts for this period: a ceiling C (the cut period
  // accepted C = (1 - cut_share) x cut_rate) refuses what is above C; noise
  // refuses the same share as before. Noise if the share is nearer to that.
  const double ceiling_share = std::max(noise_, 1 - (1 - cut_share_) * cut_rate / rate);
  const bool share_stayed = throttles_ >= 2 && cut_share_ > ceiling_share &&
                            share > ceiling_share + options_.verify_fall * (cut_share_ - ceiling_share);
  // A step back (keep 1) did not lower the rate: a rate that fell after it
  // fell by chance (the sender's share of the traffic moved), and says
  // nothing of noise. Only a measured cut is tested.
  if (rate_fell && share_stayed && !soft_pending_) {
    noise_ = std::min(share, options_.max_noise);
    soft_pending_ = false;
    raise_keep_ = 0;
    ++noise_verdicts_;
    noise_throttles_ += throttles_;
    restart(now);
    ThrottleVerdict v;
    v.kind = ThrottleVerdict::Kind::kNoise;
    v.share = share;
    v.noise = noise_;
    // The cut period again with what is now known to be noise: the part of
    // its throttles above the noise (and its sampling spread) was a ceiling
    // still (1 when none was).
    const double spread = options_.z * std::sqrt(noise_ * (1 - noise_) / static_cast<double>(cut_answers_));
    v.keep = std::clamp((1 - cut_share_ + spread) / (1 - noise_), 0.01, 1.0);
    return v;
  }
  // No throttle at all after a deep cut, here nor (when known) anywhere:
  // the cut may have gone too deep (what the provider accepted in the cut
  // period can fall short of what it takes). A step back towards the rate
  // before the cut, and another test; the first throttle ends it.
  if (raise_keep_ > 0 && raises_ < options_.max_raises && throttles_ == 0 && wide_.known() && wide_.throttled == 0) {
    raise_keep_ = std::min(1.0, raise_keep_ + options_.raise_step);
    ThrottleVerdict v;
    v.kind = ThrottleVerdict::Kind::kRaise;
    v.keep = raise_keep_;
    v.noise = noise_;
    if (raise_keep_ >= 1 || ++raises_ >= options_.max_raises) {
      raise_keep_ = 0;
    } else {
      testing_ = true;
      settling_ = true;
    }
    restart(now);
    return v;
  }
  raise_keep_ = 0;
  // A test quiet only because the step back paused the provider (its
  // window emptied) does not end a pending step back: the next excessive
  // period still makes the measured cut, where two steps of 2% each several
  // seconds apart would walk down to a ceiling 20% below in a minute.
  const bool pending = soft_pending_;
  ThrottleVerdict v = close(now, excessOrNone());
  if (v.kind == ThrottleVerdict::Kind::kNone) soft_pending_ = pending;
  return v;
}

void validateThrottleJudge(const ThrottleJudgeOptions& o) {
  auto bad = [](const char* what) { throw InvalidError(std::string("throttle judge: ") + what); };
  if (o.period <= Nanos{0}) bad("period must be above 0");
  if (o.min_answers < 1) bad("min_answers must be at least 1");
  if (!(o.z >= 0) || !std::isfinite(o.z)) bad("z must be a finite number >= 0");
  if (!(o.noise_adapt >= 0 && o.noise_adapt <= 1)) bad("noise_adapt must be within [0, 1]");
  if (!(o.verify_fall >= 0 && o.verify_fall <= 1)) bad("verify_fall must be within [0, 1]");
  if (!(o.verify_rate_fall > 0 && o.verify_rate_fall <= 1)) bad("verify_rate_fall must be within (0, 1]");
  if (!(o.max_noise >= 0 && o.max_noise < 1)) bad("max_noise must be within [0, 1)");
  if (!(o.min_keep > 0 && o.min_keep <= 1)) bad("min_keep must be within (0, 1]");
  if (!(o.soft_keep >= o.min_keep && o.soft_keep <= 1)) bad("soft_keep must be within [min_keep, 1]");
  if (!(o.raise_step >= 0 && o.raise_step <= 1)) bad("raise_step must be within [0, 1]");
  if (o.max_raises < 0 || o.max_raises > 100) bad("max_raises must be within [0, 100]");
}

}  // namespace pacer
