#include "sliding_window.h"

namespace pacer::ratelimit {

SlidingWindow::SlidingWindow(RateLimit limit, Nanos window, MonoTime now) noexcept
    : limit_{}, window_ns_(std::max<std::int64_t>(1, window.count())), per_window_(0), clock_(toNs(now)), index_(0) {
  index_ = toNs(now) / window_ns_;
  setLimit(limit, now);
}

void SlidingWindow::roll(std::int64_t t_ns) noexcept {
  const std::int64_t k = t_ns / window_ns_;
  if (k == index_) return;
  previous_ = (k == index_ + 1) ? current_ : 0.0;
  current_ = 0.0;
  index_ = k;
}

double SlidingWindow::estimate(std::int64_t t_ns) const noexcept {
  const double elapsed = static_cast<double>(t_ns - index_ * window_ns_) / static_cast<double>(window_ns_);
  return current_ + previous_ * (1.0 - elapsed);
}

std::uint64_t SlidingWindow::available(MonoTime now, std::uint64_t max) noexcept {
  const std::int64_t t = clock_.clamp(now);
  roll(t);
  // A tiny allowance for rounding so that exactly-at-limit counts pass.
  return std::min(max, floorCount(per_window_ - estimate(t) + 1e-9));
}

bool SlidingWindow::tryAcquire(std::uint64_t n, MonoTime now) noexcept {
  if (n == 0) return true;
  if (available(now, n) < n) return false;
  current_ += static_cast<double>(n);
  return true;
}

Nanos SlidingWindow::timeUntil(std::uint64_t n, MonoTime now) noexcept {
  if (n == 0 || available(now, n) >= n) return Nanos{0};
  const double need = static_cast<double>(n);
  if (need > per_window_ + 1e-9) return kNever;
  const std::int64_t t = clock_.last();
  const double w = static_cast<double>(window_ns_);
  const double window_start = static_cast<double>(index_ * window_ns_);
  // In this window: current + previous * (1 - f) + n <= x  =>  f >= 1 - (x - n - current) / previous.
  const double room_now = per_window_ - need - current_;
  if (room_now >= 0.0 && previous_ > 0.0) {
    const double f = 1.0 - room_now / previous_;
    return ceilNanos(window_start + f * w - static_cast<double>(t));
  }
  // Otherwise in the next window, where previous = current and current = 0.
  const double f = current_ > 0.0 ? std::max(0.0, 1.0 - (per_window_ - need) / current_) : 0.0;
  return ceilNanos(window_start + w + f * w - static_cast<double>(t));
}

void SlidingWindow::setLimit(RateLimit limit, MonoTime now) noexcept {
  roll(clock_.clamp(now));
  limit_ = limit;
  per_window_ = sanitizeRate(limit.rate_per_s) * static_cast<double>(window_ns_) / 1e9;
}

}  // namespace pacer::ratelimit
