#include "pacer/adaptive_rate.h"
#include "pacer/error.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace pacer {

namespace {

AdaptiveRateOptions clamped(AdaptiveRateOptions o) noexcept {
  o.decrease = std::clamp(o.decrease, 0.01, 0.99);
  o.hold_fraction = std::clamp(o.hold_fraction, 0.01, 1.0);
  o.ceiling = std::max(0.0, o.ceiling);
  return o;
}

}  // namespace

AdaptiveRate::AdaptiveRate(AdaptiveRateOptions options, MonoTime now) noexcept
    : options_(clamped(options)),
      rate_(options_.ceiling),
      limit_(options_.ceiling),
      updated_(now),
      last_decrease_(now),
      // As if the last pause ended a second ago: no "just resumed" estimate at start.
      paused_until_(now - std::chrono::seconds(1)) {}

void AdaptiveRate::climb(MonoTime now) noexcept {
  if (now <= updated_) return;  // time never runs backwards here
  const MonoTime from = std::max(updated_, paused_until_);
  updated_ = now;
  if (now <= from) return;
  double dt = std::chrono::duration<double>(now - from).count();
  // What was sent since the last pause ended, for its first second.
  const double window_left = 1.0 - std::chrono::duration<double>(from - paused_until_).count();
  double counted = std::clamp(window_left, 0.0, dt);
  const double ceiling = options_.ceiling;
  const double probe_s = std::chrono::duration<double>(options_.probe_time).count();
  // Walk the segments, each taking the time it needs.
  for (int segment = 0; segment < kMaxSegments && dt > 0 && rate_ < ceiling; ++segment) {
    const double hold_point = std::min(ceiling, limit_ * options_.hold_fraction);
    // The slow probe goes on past the limit twice as far as below it: a
    // limit measured a little low is passed without a burst of refusals.
    const double band_top = std::min(ceiling, limit_ * (1 + 2 * (1 - options_.hold_fraction)));
    double speed = options_.fast_climb_per_s * ceiling;
    double until = ceiling;
    if (rate_ < hold_point) {
      until = hold_point;
    } else if (rate_ < band_top || probe_s <= 0 || !(band_top > 0)) {
      if (probe_s > 0) speed = (limit_ - hold_point) / (probe_s * probe_scale_);
      until = band_top > rate_ ? band_top : ceiling;
    } else {
      // Past the band without a throttle: the limit is at least this. A
      // new probe from here, four times as quick as the last.
      limit_ = band_top;
      probe_scale_ = std::max(probe_scale_ / 4, kMinProbeScale);
      continue;
    }
    if (!(speed > 0)) break;
    const double step = std::min((until - rate_) / speed, dt);
    const double c = std::min(counted, step);
    sent_since_pause_ += rate_ * c + speed * c * c / 2;
    counted -= c;
    if (step >= dt) {
      rate_ += speed * dt;
      dt = 0;
      break;
    }
    rate_ = until;
    dt -= step;
  }
  rate_ = std::min(rate_, ceiling);
  sent_since_pause_ += rate_ * std::min(counted, dt);
}

double AdaptiveRate::rate(MonoTime now) noexcept {
  climb(now);
  return rate_;
}

bool AdaptiveRate::decrease(MonoTime now, Learn learn) noexcept {
  climb(now);
  if (decreased_once_ && now - last_decrease_ < options_.hold) return false;
  decreased_once_ = true;
  last_decrease_ = now;
  // A throttle below the hold point came while climbing back or holding: the
  // limit has dropped, so drop harder (decrease squared) to find it in fewer
  // pauses. At or above it, probing found the limit: a gentle step back.
  const bool dropped = rate_ < limit_ * options_.hold_fraction;
  // Where the provider said no: the rate now, or, within a second of a pause
  // (which emptied the provider's one-second window), what was sent since,
  // which is what the window held when it refused.
  const bool just_resumed = now >= paused_until_ && now - paused_until_ < std::chrono::seconds(1);
  if (learn == Learn::kWindow && just_resumed && window_emptied_ && sent_since_pause_ > 0)
    limit_ = std::min(rate_, sent_since_pause_);
  else if (learn != Learn::kNothing)
    limit_ = rate_;
  const double floor = std::min(std::max(0.0, options_.floor), options_.ceiling);
  const double from = learn != Learn::kNothing ? std::min(rate_, limit_) : rate_;
  rate_ = std::max(floor, from * (dropped ? options_.decrease * options_.decrease : options_.decrease));
  return true;
}

void AdaptiveRate::pauseUntil(MonoTime now, MonoTime until) noexcept {
  if (until <= paused_until_) return;
  paused_until_ = until;
  sent_since_pause_ = 0;
  // A pause of a second or more empties the provider's one-second window.
  window_emptied_ = until - now >= std::chrono::seconds(1);
}

void AdaptiveRate::onThrottled(MonoTime now, Nanos pause) noexcept {
  decrease(now, Learn::kWindow);
  pauseUntil(now, now + std::max(pause, Nanos{0}));
}

void AdaptiveRate::onCapacity(MonoTime now, Nanos pause, double keep) noexcept {
  climb(now);
  keep = std::clamp(keep, 0.01, 1.0);
  const double floor = std::min(std::max(0.0, options_.floor), options_.ceiling);
  // A keep below 1 was measured; 1 is a judge's first step back, which
  // only says the limit is the rate it came at.
  const bool measured = keep < 1;
  pause = std::max(pause, Nanos{0});
  if (cut_from_ > 0 && now - last_cut_ < kCutRound) {
    // The round paused once already: only a longer pause pauses again.
    if (pause > cut_pause_)
      cut_pause_ = pause;
    else
      pause = Nanos{0};
    // Another judge's word on the same moment (every worker judges the same
    // provider), never one cut on top of another: the measured keeps of the
    // round are averaged (each judge sees only its own share of the answers,
    // so the deepest of several is biased low) and applied to the rate
    // before the round.
    if (measured) {
      keep_sum_ += keep;
      ++keeps_;
      limit_ = std::max(floor, cut_rate_ * keep_sum_ / keeps_);
    }
    rate_ = std::min(rate_, std::max(floor, limit_ * options_.hold_fraction));
  } else if (!(decreased_once_ && now - last_decrease_ < options_.hold)) {
    cut_from_ = limit_;
    cut_rate_ = rate_;
    last_cut_ = now;
    cut_pause_ = pause;
    keep_sum_ = measured ? keep : 0;
    keeps_ = measured ? 1 : 0;
    limit_ = std::max(floor, rate_ * keep);
    // The ceiling found again where it was, by the probe: probe less often.
    const bool same = measured && cut_rate_ >= cut_from_ * options_.hold_fraction &&
                      std::abs(limit_ - cut_from_) <= kSameCeiling * cut_from_;
    probe_scale_ = same ? std::min(2 * probe_scale_, kMaxProbeScale) : 1;
    rate_ = std::max(floor, limit_ * options_.hold_fraction);
  }
  decreased_once_ = true;
  last_decrease_ = now;
  pauseUntil(now, now + pause);
}

void AdaptiveRate::restoreLimit(MonoTime now, double keep) noexcept {
  climb(now);
  const double back = std::min({cut_from_, cut_rate_ * std::clamp(keep, 0.0, 1.0), options_.ceiling});
  if (back > limit_) limit_ = back;
  probe_scale_ = 1;
  // What the round measured was (in part) noise: a later cut in the round is
  // averaged only with those that come after this.
  keep_sum_ = 0;
  keeps_ = 0;
}

void AdaptiveRate::onFaults(MonoTime now, Nanos pause) noexcept {
  decrease(now, Learn::kNothing);
  pauseUntil(now, now + std::max(pause, Nanos{0}));
}

void AdaptiveRate::onLatency(MonoTime now, Nanos latency) noexcept {
  if (options_.latency_threshold > Nanos{0} && latency > options_.latency_threshold) decrease(now, Learn::kRate);
}

RateLimit limitAtRate(RateLimit ceiling, double rate) noexcept {
  const double f = ceiling.rate_per_s > 0 ? std::min(1.0, rate / ceiling.rate_per_s) : 1.0;
  return RateLimit{rate, std::max(1.0, ceiling.burst * f)};
}

void AdaptiveRate::setCeiling(double ceiling, MonoTime now) noexcept {
  climb(now);
  options_.ceiling = std::max(0.0, ceiling);
  rate_ = std::min(rate_, options_.ceiling);
  limit_ = std::min(limit_, options_.ceiling);
  if (limit_ <= 0) limit_ = options_.ceiling;
  probe_scale_ = 1;
}

void AdaptiveRate::setTuning(const AdaptiveRateOptions& tuning, MonoTime now) noexcept {
  climb(now);
  const double ceiling = options_.ceiling;
  options_ = clamped(tuning);
  options_.ceiling = ceiling;
  options_.floor = std::min(tuning.floor, ceiling);
  rate_ = std::max(rate_, options_.floor);
}

void validateAdaptive(const AdaptiveRateOptions& o) {
  auto bad = [](const char* what) { throw InvalidError(std::string("adaptive ") + what); };
  if (!(o.decrease > 0 && o.decrease < 1)) bad("decrease must be above 0 and below 1");
  if (!(o.hold_fraction > 0 && o.hold_fraction <= 1)) bad("hold_fraction must be above 0 and at most 1");
  if (!(o.floor >= 0) || !std::isfinite(o.floor)) bad("floor must be a finite rate >= 0");
  if (!(o.fast_climb_per_s >= 0) || !std::isfinite(o.fast_climb_per_s)) bad("fast climb must be finite and >= 0");
  if (o.probe_time < Nanos{0}) bad("probe time must be >= 0");
}

}  // namespace pacer
