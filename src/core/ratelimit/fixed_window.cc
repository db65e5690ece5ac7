#include "fixed_window.h"

namespace pacer::ratelimit {

FixedWindow::FixedWindow(RateLimit limit, Nanos window, MonoTime now) noexcept
    : limit_{}, window_ns_(std::max<std::int64_t>(1, window.count())), per_window_(0), clock_(toNs(now)), index_(0) {
  index_ = toNs(now) / window_ns_;
  setLimit(limit, now);
}

void FixedWindow::roll(std::int64_t t_ns) noexcept {
  const std::int64_t k = t_ns / window_ns_;
  if (k != index_) {
    index_ = k;
    used_ = 0;
  }
}

std::uint64_t FixedWindow::allowance(std::int64_t k) const noexcept {
  const double kd = static_cast<double>(k);
  return floorCount(std::floor((kd + 1.0) * per_window_) - std::floor(kd * per_window_));
}

std::uint64_t FixedWindow::available(MonoTime now, std::uint64_t max) noexcept {
  roll(clock_.clamp(now));
  const std::uint64_t allow = allowance(index_);
  return allow > used_ ? std::min(max, allow - used_) : 0;
}

bool FixedWindow::tryAcquire(std::uint64_t n, MonoTime now) noexcept {
  if (n == 0) return true;
  if (available(now, n) < n) return false;
  used_ += n;
  return true;
}

Nanos FixedWindow::timeUntil(std::uint64_t n, MonoTime now) noexcept {
  if (n == 0 || available(now, n) >= n) return Nanos{0};
  if (per_window_ <= 0.0 || static_cast<double>(n) > std::ceil(per_window_)) return kNever;
  const std::int64_t t = clock_.last();
  std::int64_t k = index_ + 1;
  if (per_window_ < 1.0) {
    // n == 1 here: the next window whose allowance is 1 is the first k with
    // floor((k+1)x) > floor(kx), i.e. k+1 = ceil((floor((index+1)x) + 1) / x).
    const double next_unit = std::floor(static_cast<double>(index_ + 1) * per_window_) + 1.0;
    k = static_cast<std::int64_t>(std::ceil(next_unit / per_window_)) - 1;
    if (k <= index_) k = index_ + 1;
  } else {
    for (int i = 0; i < 64 && allowance(k) < n; ++i) ++k;
    if (allowance(k) < n) return kNever;
  }
  const double wait = static_cast<double>(k) * static_cast<double>(window_ns_) - static_cast<double>(t);
  return ceilNanos(wait);
}

void FixedWindow::setLimit(RateLimit limit, MonoTime now) noexcept {
  roll(clock_.clamp(now));
  limit_ = limit;
  // Units already used in this window stay used.
  per_window_ = sanitizeRate(limit.rate_per_s) * static_cast<double>(window_ns_) / 1e9;
}

}  // namespace pacer::ratelimit
