#include "pacer/adaptive_rate.h"

#include <algorithm>
#include <cmath>

namespace pacer {

AdaptiveRate::AdaptiveRate(AdaptiveRateOptions options, MonoTime now) noexcept
    : options_(options),
      rate_(std::max(0.0, options.ceiling)),
      last_good_(rate_),
      throttled_at_(rate_),
      updated_(now),
      last_decrease_(now),
      paused_until_(now) {
  options_.decrease = std::clamp(options_.decrease, 0.01, 0.99);
}

namespace {
// A throttle at (or within 2% of) the ceiling says the provider's limit is
// about the configured one, and the 429 came from a momentary excess: the
// climb back skips the slow plateau. (Had the limit dropped, the next 429
// comes below the ceiling, and the plateau applies from there.)
constexpr double kAtCeiling = 0.98;
}  // namespace

void AdaptiveRate::climb(MonoTime now) noexcept {
  if (now <= updated_) return;  // time never runs backwards here
  const MonoTime from = std::max(updated_, paused_until_);
  updated_ = now;
  if (now <= from) return;
  double dt = std::chrono::duration<double>(now - from).count();
  const double ceiling = std::max(0.0, options_.ceiling);
  const double fast = options_.fast_climb_per_s * ceiling;
  const double plateau = options_.plateau_climb_per_s * ceiling;
  // Walk the three segments: fast below last_good_, plateau up to
  // throttled_at_, fast above it; each takes the time it needs.
  while (dt > 0 && rate_ < ceiling) {
    double speed = fast;
    double until = ceiling;
    if (rate_ < last_good_) {
      until = last_good_;
    } else if (rate_ < throttled_at_ && throttled_at_ < kAtCeiling * ceiling) {
      speed = plateau;
      until = throttled_at_;
    }
    if (speed <= 0) break;
    const double need = (std::min(until, ceiling) - rate_) / speed;
    if (need >= dt) {
      rate_ += speed * dt;
      break;
    }
    rate_ = std::min(until, ceiling);
    dt -= need;
  }
  rate_ = std::min(rate_, ceiling);
}

double AdaptiveRate::rate(MonoTime now) noexcept {
  climb(now);
  return rate_;
}

void AdaptiveRate::decrease(MonoTime now) noexcept {
  climb(now);
  if (decreased_once_ && now - last_decrease_ < options_.hold) return;
  decreased_once_ = true;
  last_decrease_ = now;
  // The rate that worked was somewhere below this one; climb fast back to a
  // bit under it, then probe slowly.
  throttled_at_ = rate_;
  last_good_ = rate_ * std::sqrt(options_.decrease);
  const double floor = std::min(std::max(0.0, options_.floor), std::max(0.0, options_.ceiling));
  rate_ = std::max(floor, rate_ * options_.decrease);
}

void AdaptiveRate::onThrottled(MonoTime now, Nanos pause) noexcept {
  decrease(now);
  paused_until_ = std::max(paused_until_, now + std::max(pause, Nanos{0}));
}

void AdaptiveRate::onLatency(MonoTime now, Nanos latency) noexcept {
  if (options_.latency_threshold > Nanos{0} && latency > options_.latency_threshold) decrease(now);
}

RateLimit limitAtRate(RateLimit ceiling, double rate) noexcept {
  const double f = ceiling.rate_per_s > 0 ? std::min(1.0, rate / ceiling.rate_per_s) : 1.0;
  return RateLimit{rate, std::max(1.0, ceiling.burst * f)};
}

void AdaptiveRate::setCeiling(double ceiling, MonoTime now) noexcept {
  climb(now);
  options_.ceiling = std::max(0.0, ceiling);
  rate_ = std::min(rate_, options_.ceiling);
  last_good_ = std::min(last_good_, options_.ceiling);
  throttled_at_ = std::min(throttled_at_, options_.ceiling);
}

void AdaptiveRate::setTuning(const AdaptiveRateOptions& tuning, MonoTime now) noexcept {
  climb(now);
  options_.decrease = std::clamp(tuning.decrease, 0.01, 0.99);
  options_.floor = std::min(tuning.floor, options_.ceiling);
  options_.latency_threshold = tuning.latency_threshold;
  rate_ = std::max(rate_, options_.floor);
}

}  // namespace pacer
