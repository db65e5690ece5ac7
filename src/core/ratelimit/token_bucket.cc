#include "token_bucket.h"

#include <cmath>

namespace pacer::ratelimit {
namespace {
// The longest span the bucket tracks, in ticks (2^48 ns, ~3.3 days): a burst
// longer than that to fill is clipped to it. Half of rel()'s range, so
// r - burst_span_ never overflows.
constexpr std::int64_t kMaxSpan = std::int64_t{1} << 60;
}  // namespace

TokenBucket::TokenBucket(RateLimit limit, MonoTime now) noexcept : origin_ns_(toNs(now)) {
  setLimit(limit, now);
  empty_at_ = -burst_span_;  // start full
}

void TokenBucket::take(std::int64_t next, std::int64_t r, MonoTime now) noexcept {
  empty_at_ = next;
  const std::int64_t t = toNs(now);
  if (t - origin_ns_ > kRebaseAfterNs) {
    // `next` was computed where now is r (rel() clamps long idle spells), so
    // re-base by r itself: now becomes 0 at origin t, consistently.
    empty_at_ = next - r;
    origin_ns_ = t;
  }
}

bool TokenBucket::canDoWork(MonoTime now) noexcept {
  const std::int64_t r = rel(now);
  const std::int64_t e = emptyAt(r);
  // Rate 0 keeps burst_span_ at 0, so r - e <= 0 and nothing passes.
  if (r - e < per_token_) return false;
  take(e + per_token_, r, now);
  return true;
}

std::uint64_t TokenBucket::wholeTokens(std::int64_t span) const noexcept {
  if (span <= 0) return 0;  // always so at rate 0 (burst_span_ is 0)
  return static_cast<std::uint64_t>(span / per_token_);
}

bool TokenBucket::tryAcquire(std::uint64_t n, MonoTime now) noexcept {
  if (n == 0) return true;
  const std::int64_t r = rel(now);
  const std::int64_t e = emptyAt(r);
  if (wholeTokens(r - e) < n) return false;
  take(e + static_cast<std::int64_t>(n) * per_token_, r, now);
  return true;
}

std::uint64_t TokenBucket::available(MonoTime now, std::uint64_t max) noexcept {
  const std::int64_t r = rel(now);
  return std::min(max, wholeTokens(r - emptyAt(r)));
}

double TokenBucket::tokens(MonoTime now) const noexcept {
  if (stopped_) return 0.0;
  const std::int64_t r = rel(now);
  return std::max(0.0, static_cast<double>(r - emptyAt(r)) / static_cast<double>(per_token_));
}

Nanos TokenBucket::timeUntil(std::uint64_t n, MonoTime now) noexcept {
  if (n == 0) return Nanos{0};
  // More than a full bucket (burst, as clipped to the tracked span) never fits.
  if (stopped_ || n > static_cast<std::uint64_t>(burst_span_ / per_token_)) return kNever;
  const std::int64_t r = rel(now);
  const std::int64_t missing = static_cast<std::int64_t>(n) * per_token_ - (r - emptyAt(r));
  if (missing <= 0) return Nanos{0};
  // Round up to whole nanoseconds.
  return Nanos{(missing + (std::int64_t{1} << kSubNsBits) - 1) >> kSubNsBits};
}

void TokenBucket::setLimit(RateLimit limit, MonoTime now) noexcept {
  // Tokens held at `now`, negative when `now` is before grants already made
  // (a clock that went back): that debt is carried over, never forgiven.
  double held = 0.0;
  if (!stopped_) {
    const std::int64_t r = rel(now);
    held = static_cast<double>(r - emptyAt(r)) / static_cast<double>(per_token_);
  }
  limit_ = limit;
  const double rate = sanitizeRate(limit.rate_per_s);
  burst_ = sanitizeBurst(limit.burst);
  stopped_ = rate <= 0.0;
  if (stopped_) {
    per_token_ = 1;
    burst_span_ = 0;
  } else {
    const double per_token = std::ceil(1e9 * double(std::int64_t{1} << kSubNsBits) / rate);
    per_token_ = static_cast<std::int64_t>(std::min(per_token, double(kMaxSpan)));
    burst_span_ = static_cast<std::int64_t>(std::min(burst_ * double(per_token_), double(kMaxSpan)));
  }
  // Keep what has accumulated (clipped to the new burst) under the new rate.
  origin_ns_ = toNs(now);
  empty_at_ = -static_cast<std::int64_t>(std::min(held, burst_) * static_cast<double>(per_token_));
  if (stopped_) empty_at_ = 0;
}

}  // namespace pacer::ratelimit
