#include "ratelimit/token_bucket.h"

namespace pacer::ratelimit {
namespace {
// Re-base empty_at_ once the origin is this far behind (~17 minutes), long
// before the double loses sub-nanosecond precision (2^53 ns is 104 days).
constexpr std::int64_t kRebaseAfterNs = std::int64_t{1} << 40;
}  // namespace

TokenBucket::TokenBucket(RateLimit limit, MonoTime now) noexcept
    : limit_{}, rate_per_ns_(0), burst_(1), clock_(toNs(now)), origin_ns_(toNs(now)), empty_at_(0) {
  setLimit(limit, now);
  // Start full.
  empty_at_ = rate_per_ns_ > 0 ? -burst_ / rate_per_ns_ : 0.0;
}

void TokenBucket::take(double n, std::int64_t t_ns) noexcept {
  const double rel = static_cast<double>(t_ns - origin_ns_);
  // A full bucket wastes what arrives while it is full: move empty_at_ up so
  // that it holds exactly `burst` tokens at t, then take n.
  const double full_since = rel - burst_ / rate_per_ns_;
  if (empty_at_ < full_since) empty_at_ = full_since;
  empty_at_ += n / rate_per_ns_;
  if (t_ns - origin_ns_ > kRebaseAfterNs) {
    empty_at_ -= static_cast<double>(t_ns - origin_ns_);
    origin_ns_ = t_ns;
  }
}

bool TokenBucket::tryAcquire(std::uint64_t n, MonoTime now) noexcept {
  const std::int64_t t = clock_.clamp(now);
  if (n == 0) return true;
  if (rate_per_ns_ <= 0.0) return false;
  const double want = static_cast<double>(n);
  if (tokensAt(t) < want) return false;
  take(want, t);
  return true;
}

std::uint64_t TokenBucket::available(MonoTime now, std::uint64_t max) noexcept {
  const std::int64_t t = clock_.clamp(now);
  if (rate_per_ns_ <= 0.0) return 0;
  return std::min(max, floorCount(tokensAt(t)));
}

double TokenBucket::tokens(MonoTime now) noexcept {
  const std::int64_t t = clock_.clamp(now);
  if (rate_per_ns_ <= 0.0) return 0.0;
  return std::max(0.0, tokensAt(t));
}

Nanos TokenBucket::timeUntil(std::uint64_t n, MonoTime now) noexcept {
  const std::int64_t t = clock_.clamp(now);
  if (n == 0) return Nanos{0};
  const double want = static_cast<double>(n);
  if (rate_per_ns_ <= 0.0 || want > burst_) return kNever;
  const double missing = want - tokensAt(t);
  return ceilNanos(missing / rate_per_ns_);
}

void TokenBucket::setLimit(RateLimit limit, MonoTime now) noexcept {
  const std::int64_t t = clock_.clamp(now);
  const double held = rate_per_ns_ > 0.0 ? std::max(0.0, tokensAt(t)) : 0.0;
  limit_ = limit;
  const double rate = sanitizeRate(limit.rate_per_s);
  rate_per_ns_ = rate / 1e9;
  burst_ = sanitizeBurst(limit.burst);
  // Keep what has accumulated (clipped to the new burst) under the new rate.
  origin_ns_ = t;
  empty_at_ = rate_per_ns_ > 0.0 ? -std::min(held, burst_) / rate_per_ns_ : 0.0;
}

}  // namespace pacer::ratelimit
