#include "pacer/circuit_breaker.h"

#include <algorithm>
#include <cmath>

namespace pacer {

CircuitBreaker::CircuitBreaker(BreakerOptions options, MonoTime now) noexcept
    : options_(options), window_start_(now), open_until_(now) {}

void CircuitBreaker::roll(MonoTime now) noexcept {
  const Nanos window = std::max(options_.window, Nanos{1});
  if (now < window_start_ + window) return;
  const auto windows = (now - window_start_) / window;
  if (windows >= 2) {
    prev_ok_ = prev_faults_ = 0;
  } else {
    prev_ok_ = ok_;
    prev_faults_ = faults_;
  }
  ok_ = faults_ = 0;
  window_start_ += window * windows;
}

double CircuitBreaker::weight(MonoTime now) const noexcept {
  const double elapsed = std::chrono::duration<double>(now - window_start_).count();
  const double w = std::chrono::duration<double>(std::max(options_.window, Nanos{1})).count();
  return std::clamp(1.0 - elapsed / w, 0.0, 1.0);
}

double CircuitBreaker::faultRatio(MonoTime now) noexcept {
  roll(now);
  const double k = weight(now);
  const double f = faults_ + prev_faults_ * k;
  const double total = ok_ + faults_ + (prev_ok_ + prev_faults_) * k;
  return total > 0 ? f / total : 0.0;
}

bool CircuitBreaker::report(std::uint64_t ok, std::uint64_t faults, MonoTime now) noexcept {
  roll(now);
  if (now >= open_until_ + options_.window) opens_ = 0;  // a whole window closed: no longer in a row
  ok_ += static_cast<double>(ok);
  faults_ += static_cast<double>(faults);
  if (isOpen(now)) return false;
  const double k = weight(now);
  const double total = ok_ + faults_ + (prev_ok_ + prev_faults_) * k;
  const double f = faults_ + prev_faults_ * k;
  if (total < std::max<double>(1, options_.min_requests) || f < options_.threshold * total) return false;
  ++opens_;
  const double factor = std::exp2(std::min(opens_ - 1, 16));
  const double cool = std::min(std::chrono::duration<double>(options_.cooldown).count() * factor,
                               std::chrono::duration<double>(options_.max_cooldown).count());
  open_until_ = now + std::chrono::duration_cast<Nanos>(std::chrono::duration<double>(cool));
  ok_ = faults_ = prev_ok_ = prev_faults_ = 0;
  window_start_ = now;
  return true;
}

}  // namespace pacer
