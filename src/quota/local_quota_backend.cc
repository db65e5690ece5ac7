// The in-process QuotaBackend: one token bucket per (scope, level key), all
// behind one mutex so that a batch is atomic per request across threads.
#include <algorithm>
#include <cmath>
#include <mutex>
#include <string>
#include <unordered_map>

#include "pacer/quota.h"

namespace pacer {
namespace {

class LocalQuotaBackend final : public QuotaBackend {
 public:
  void acquire(std::span<const LeaseRequest> requests, MonoTime now, std::span<LeaseReply> replies) noexcept override {
    std::lock_guard<std::mutex> lock(mutex_);
    for (std::size_t i = 0; i < requests.size() && i < replies.size(); ++i) replies[i] = one(requests[i], now);
  }

 private:
  struct Bucket {
    RateLimitingInterfacePtr limiter;
    RateLimit limit;
  };

  // Finds or creates the bucket of `level`; null when its limit is invalid.
  RateLimitingInterface* bucket(const LeaseRequest& r, const QuotaLevel& level, MonoTime now) noexcept {
    try {
      key_.assign(r.scope).push_back('\0');
      key_.append(level.key);
      auto it = buckets_.find(key_);
      if (it == buckets_.end()) {
        Bucket b{makeLimiter(LimiterOptions{}, level.limit, now), level.limit};
        if (!r.fill_new) b.limiter->acquireUpTo(UINT64_MAX, now);
        it = buckets_.emplace(key_, std::move(b)).first;
      } else if (it->second.limit.rate_per_s != level.limit.rate_per_s || it->second.limit.burst != level.limit.burst) {
        validateLimit(level.limit, LimiterOptions{});
        it->second.limiter->setLimit(level.limit, now);
        it->second.limit = level.limit;
      }
      return it->second.limiter.get();
    } catch (...) {  // invalid limit or out of memory: no grant
      return nullptr;
    }
  }

  // The scope's adaptive state (created at the ceiling), or null when the
  // request has none or names a level it does not have.
  AdaptiveRate* adaptive(const LeaseRequest& r, MonoTime now) noexcept {
    if (!r.adaptive || r.adaptive->level >= r.levels.size()) return nullptr;
    const double ceiling = r.levels[r.adaptive->level].limit.rate_per_s;
    if (!(ceiling > 0)) return nullptr;
    try {
      auto it = adaptive_.find(r.scope);
      if (it == adaptive_.end()) {
        AdaptiveRateOptions o = r.adaptive->options;
        o.ceiling = ceiling;
        o.latency_threshold = Nanos{0};
        it = adaptive_.emplace(r.scope, AdaptiveState{AdaptiveRate(o, now), ceiling}).first;
      } else if (it->second.ceiling != ceiling) {
        it->second.rate.setCeiling(ceiling, now);
        it->second.ceiling = ceiling;
      }
      return &it->second.rate;
    } catch (...) {
      return nullptr;
    }
  }

  LeaseReply one(const LeaseRequest& r, MonoTime now) noexcept {
    LeaseReply reply;
    if (r.levels.empty()) return reply;
    scratch_.clear();
    std::uint64_t g = r.want;
    std::uint64_t bind_avail = UINT64_MAX;
    std::uint32_t bind = 0;
    AdaptiveRate* adapt = adaptive(r, now);
    if (adapt) {
      if (r.adaptive->throttled >= Nanos{0}) adapt->onThrottled(now, r.adaptive->throttled);
      reply.effective_rate = adapt->rate(now);
      if (now < adapt->pausedUntil()) {
        reply.status = QuotaStatus::kOk;
        reply.paused = adapt->pausedUntil() - now;
        reply.next_token = reply.paused;
        reply.full_in = reply.paused;
        reply.binding = r.adaptive->level;
        return reply;
      }
    }
    for (std::size_t i = 0; i < r.levels.size(); ++i) {
      QuotaLevel effective;
      const QuotaLevel* use = &r.levels[i];
      if (adapt && i == r.adaptive->level) {
        effective.key = use->key;
        effective.limit = limitAtRate(use->limit, reply.effective_rate);
        use = &effective;
      }
      const QuotaLevel& level = *use;
      RateLimitingInterface* b = bucket(r, level, now);
      if (b == nullptr) return reply;  // kUnavailable
      // Whole tokens it holds (capped, so the binding level is found even
      // when every level covers the request).
      const std::uint64_t avail = b->limit().rate_per_s > 0 ? b->available(now, UINT64_MAX / 2) : 0;
      if (avail < bind_avail) {
        bind_avail = avail;
        bind = static_cast<std::uint32_t>(scratch_.size());
      }
      scratch_.push_back(b);
      g = std::min(g, avail);
    }
    Nanos next{0};
    for (RateLimitingInterface* b : scratch_) {
      if (g > 0) b->tryAcquire(g, now);
      next = std::max(next, b->timeUntil(1, now));
    }
    RateLimitingInterface* binding = scratch_[bind];
    Nanos full = kNever;
    if (binding->limit().rate_per_s > 0) {
      const auto whole = static_cast<std::uint64_t>(std::max(1.0, std::floor(binding->limit().burst)));
      full = binding->timeUntil(whole, now);
    }
    reply.status = QuotaStatus::kOk;
    reply.granted = g;
    reply.binding = bind;
    reply.next_token = next;
    reply.full_in = full;
    return reply;
  }

  struct AdaptiveState {
    AdaptiveRate rate;
    double ceiling;
  };

  std::mutex mutex_;
  std::unordered_map<std::string, AdaptiveState> adaptive_;
  std::unordered_map<std::string, Bucket> buckets_;
  std::string key_;
  std::vector<RateLimitingInterface*> scratch_;
};

}  // namespace

QuotaBackendPtr makeLocalQuotaBackend() { return std::make_unique<LocalQuotaBackend>(); }

}  // namespace pacer
