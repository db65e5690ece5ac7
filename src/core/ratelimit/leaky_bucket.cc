#include "leaky_bucket.h"

namespace pacer::ratelimit {

LeakyBucket::LeakyBucket(RateLimit limit, Nanos max_lateness, MonoTime now) noexcept
    : limit_{},
      spacing_ns_(0),
      lateness_ns_(static_cast<double>(std::max<std::int64_t>(0, max_lateness.count()))),
      clock_(toNs(now)),
      origin_ns_(toNs(now)),
      next_slot_(0) {
  setLimit(limit, now);
}

double LeakyBucket::firstSlot(std::int64_t t_ns) const noexcept {
  const double rel = static_cast<double>(t_ns - origin_ns_);
  return std::max(next_slot_, rel - lateness_ns_);
}

std::uint64_t LeakyBucket::available(MonoTime now, std::uint64_t max) noexcept {
  const std::int64_t t = clock_.clamp(now);
  if (spacing_ns_ <= 0.0) return 0;
  const double rel = static_cast<double>(t - origin_ns_);
  const double first = firstSlot(t);
  if (first > rel) return 0;
  // Slots first, first+s, ..., all <= rel.
  return std::min(max, floorCount((rel - first) / spacing_ns_) + 1);
}

bool LeakyBucket::tryAcquire(std::uint64_t n, MonoTime now) noexcept {
  if (n == 0) return true;
  if (available(now, n) < n) return false;
  const std::int64_t t = clock_.last();
  next_slot_ = firstSlot(t) + static_cast<double>(n) * spacing_ns_;
  if (t - origin_ns_ > kRebaseAfterNs) {
    next_slot_ -= static_cast<double>(t - origin_ns_);
    origin_ns_ = t;
  }
  return true;
}

Nanos LeakyBucket::timeUntil(std::uint64_t n, MonoTime now) noexcept {
  const std::int64_t t = clock_.clamp(now);
  if (n == 0) return Nanos{0};
  if (spacing_ns_ <= 0.0) return kNever;
  // The n-th unit's slot, if the first slot is used as soon as it comes.
  const double rel = static_cast<double>(t - origin_ns_);
  const double last_slot = std::max(next_slot_, rel - lateness_ns_) + static_cast<double>(n - 1) * spacing_ns_;
  // Waiting longer than max_lateness would lose the first slot again, so n
  // units at one instant need (n-1) spacings to fit inside max_lateness.
  if (static_cast<double>(n - 1) * spacing_ns_ > lateness_ns_) return kNever;
  return ceilNanos(last_slot - rel);
}

void LeakyBucket::setLimit(RateLimit limit, MonoTime now) noexcept {
  const std::int64_t t = clock_.clamp(now);
  limit_ = limit;
  const double rate = sanitizeRate(limit.rate_per_s);
  // The next slot keeps its place; only the spacing after it changes.
  const double rel_next = next_slot_ + static_cast<double>(origin_ns_ - t);
  origin_ns_ = t;
  next_slot_ = rel_next;
  spacing_ns_ = rate > 0.0 ? 1e9 / rate : 0.0;
}

}  // namespace pacer::ratelimit
