// LeaseLimiter (include/pacer/quota_lease.h): a campaign's limiter spending the tokens its leases granted, on the chord
// schedule the quota answered.
#include <fmt/format.h>

#include <limits>

#include "quota_leaser_impl.h"

namespace pacer {

using quota_detail::fromSecs;
using quota_detail::kUnavailableRetry;
using quota_detail::secs;

void LeaseLimiter::drop() noexcept {
  expired_ += tokens_;
  tokens_ = 0;
  segments_.clear();
}

std::uint64_t LeaseLimiter::Segment::dueBy(MonoTime t) const noexcept {
  if (t < t0) return 0;  // nothing is due before it was granted
  const double k = start + rate * secs(t - t0);
  if (!(k >= 1.0)) return 0;
  return k >= static_cast<double>(n) ? n : static_cast<std::uint64_t>(k);
}

void LeaseLimiter::advance(MonoTime now) noexcept {
  now_ = now;
  if (tokens_ > 0 && now >= expires_at_) drop();
  for (Segment& g : segments_) {
    // Due longer ago than the lag allows: forfeited, never spent late.
    const std::uint64_t overdue = g.dueBy(now - lag_);
    if (overdue > g.used) {
      const std::uint64_t lost = overdue - g.used;
      g.used = overdue;
      tokens_ -= lost;
      expired_ += lost;
      late_ += lost;
    }
  }
  std::erase_if(segments_, [](const Segment& g) { return g.used >= g.n; });
}

std::uint64_t LeaseLimiter::due() const noexcept {
  // Called after advance(): every segment's `used` is current.
  std::uint64_t n = 0;
  for (const Segment& g : segments_) n += g.dueBy(now_) - std::min(g.used, g.dueBy(now_));
  return n;
}

std::uint64_t LeaseLimiter::held(MonoTime now) noexcept {
  advance(now);
  return tokens_;
}

void LeaseLimiter::grant(std::uint64_t n, double start, double rate, MonoTime now, Nanos ttl, Nanos lag) noexcept {
  lag_ = lag;
  advance(now);
  if (n == 0 || !(rate > 0)) return;
  Segment g;
  g.t0 = now;
  g.start = start;
  g.rate = rate;
  g.n = n;
  try {
    segments_.push_back(g);
  } catch (...) {
    expired_ += n;  // cannot hold it: forfeited (only ever sends less)
    return;
  }
  tokens_ += n;
  expires_at_ = now + ttl;
}

std::uint64_t LeaseLimiter::available(MonoTime now, std::uint64_t max) noexcept {
  advance(now);
  const std::uint64_t lease = std::min(due(), max);
  if (lease == max || !local_ || now < local_from_) return lease;
  return lease + local_->available(now, max - lease);
}

bool LeaseLimiter::tryAcquire(std::uint64_t n, MonoTime now) noexcept {
  advance(now);
  const std::uint64_t ready = due();
  const std::uint64_t from_local = n > ready ? n - ready : 0;
  if (from_local > 0) {
    if (!local_ || now < local_from_ || !local_->tryAcquire(from_local, now)) return false;
    try {
      local_spent_.emplace_back(now, from_local);
    } catch (...) {
    }
  }
  std::uint64_t take = n - from_local;
  for (Segment& g : segments_) {
    if (take == 0) break;
    const std::uint64_t due_now = g.dueBy(now);
    if (due_now <= g.used) continue;
    const std::uint64_t k = std::min(take, due_now - g.used);
    g.used += k;
    tokens_ -= k;
    take -= k;
  }
  std::erase_if(segments_, [](const Segment& g) { return g.used >= g.n; });
  return true;
}

Nanos LeaseLimiter::timeUntil(std::uint64_t n, MonoTime now) noexcept {
  advance(now);
  const std::uint64_t ready = due();
  if (n <= ready) return Nanos{0};
  if (n <= tokens_) {
    // When the next lease token falls due (a lower bound for more than one).
    Nanos soonest = kNever;
    for (const Segment& g : segments_)
      if (g.used < g.n && g.rate > 0)
        soonest = std::min(
            soonest, fromSecs((static_cast<double>(g.used) + 1.0 - g.start) / g.rate - secs(now - g.t0)) + Nanos{1});
    if (soonest != kNever) return soonest;
  }
  if (local_) return std::max(local_from_ - now, local_->timeUntil(n - ready, now));
  return kNever;
}

void LeaseLimiter::setLimit(RateLimit limit, MonoTime /*now*/) noexcept { limit_ = limit; }

void LeaseLimiter::setLocalShare(std::optional<RateLimit> share, MonoTime now, MonoTime from) {
  local_spent_.clear();
  if (!share) {
    local_.reset();
    return;
  }
  // Empty at `from`: nothing accrued while it waited, no burst on entry.
  const MonoTime start = std::max(now, from);
  local_ = makeLimiter(LimiterOptions{}, *share, start);
  local_->acquireUpTo(UINT64_MAX, start);
  local_from_ = start;
}

std::uint64_t LeaseLimiter::localSpentLastSecond(MonoTime now) noexcept {
  std::erase_if(local_spent_, [&](const auto& e) { return now - e.first >= std::chrono::seconds(1); });
  std::uint64_t n = 0;
  for (const auto& e : local_spent_) n += e.second;
  return n;
}

}  // namespace pacer
