#include "sliding_log.h"

namespace pacer::ratelimit {

SlidingLog::SlidingLog(RateLimit limit, Nanos window, std::uint64_t max_entries, MonoTime now)
    : limit_{}, window_ns_(std::max<std::int64_t>(1, window.count())), max_entries_(max_entries), clock_(toNs(now)) {
  setLimit(limit, now);
}

void SlidingLog::expire(std::int64_t t_ns) noexcept {
  // An entry at s counts while s > t - window.
  while (size_ > 0 && at(0) <= t_ns - window_ns_) {
    head_ = (head_ + 1) % log_.size();
    --size_;
  }
}

std::uint64_t SlidingLog::available(MonoTime now, std::uint64_t max) noexcept {
  expire(clock_.clamp(now));
  return cap_units_ > size_ ? std::min(max, cap_units_ - size_) : 0;
}

void SlidingLog::reshape(std::uint64_t capacity) {
  std::vector<std::int64_t> next(std::max<std::uint64_t>(capacity, 1));
  // Keep the newest entries that fit.
  const std::uint64_t keep = std::min<std::uint64_t>(size_, next.size());
  for (std::uint64_t i = 0; i < keep; ++i) next[i] = at(size_ - keep + i);
  log_.swap(next);
  head_ = 0;
  size_ = keep;
}

void SlidingLog::push(std::int64_t t_ns, std::uint64_t n) {
  if (size_ + n > log_.size()) {
    // Grow geometrically up to the cap; amortised, and an idle log stays small.
    reshape(std::min(cap_units_, std::max<std::uint64_t>(size_ + n, 2 * log_.size())));
  }
  for (std::uint64_t i = 0; i < n; ++i) {
    log_[(head_ + size_) % log_.size()] = t_ns;
    ++size_;
  }
}

bool SlidingLog::tryAcquire(std::uint64_t n, MonoTime now) noexcept {
  if (n == 0) return true;
  if (available(now, n) < n) return false;
  try {
    push(clock_.last(), n);
  } catch (...) {
    return false;  // out of memory: refuse rather than let work through unlogged
  }
  return true;
}

Nanos SlidingLog::timeUntil(std::uint64_t n, MonoTime now) noexcept {
  if (n == 0 || available(now, n) >= n) return Nanos{0};
  if (n > cap_units_) return kNever;
  // Room for n means the oldest (size + n - cap) entries must have expired.
  const std::uint64_t must_expire = size_ + n - cap_units_;
  const std::int64_t leaves_at = at(must_expire - 1) + window_ns_;
  return Nanos{std::max<std::int64_t>(0, leaves_at - clock_.last())};
}

void SlidingLog::setLimit(RateLimit limit, MonoTime now) noexcept {
  expire(clock_.clamp(now));
  limit_ = limit;
  const double units = sanitizeRate(limit.rate_per_s) * static_cast<double>(window_ns_) / 1e9;
  cap_units_ = std::min(max_entries_, floorCount(units));
  if (log_.size() > cap_units_ && log_.size() > 1) {
    try {
      reshape(cap_units_);
    } catch (...) {
      // Keeping the bigger buffer is harmless: cap_units_ still bounds use.
    }
  }
}

}  // namespace pacer::ratelimit
