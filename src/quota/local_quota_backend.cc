// The in-process QuotaBackend: the same buckets, adaptive rate and circuit
// breaker as src/quota/lease.lua, kept in this process behind one mutex so
// that a batch is atomic per request across threads.
#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <string>
#include <unordered_map>

#include "pacer/quota.h"

namespace pacer {
namespace {

constexpr Nanos kActiveWindow = std::chrono::seconds(2);

double seconds(Nanos d) { return std::chrono::duration<double>(d).count(); }
Nanos nanos(double s) {
  if (!(s < 1e9)) return kNever;
  return std::chrono::duration_cast<Nanos>(std::chrono::duration<double>(std::max(0.0, s)));
}

class LocalQuotaBackend final : public QuotaBackend {
 public:
  void acquire(std::span<const LeaseRequest> requests, MonoTime now, std::span<LeaseReply> replies) noexcept override {
    std::lock_guard<std::mutex> lock(mutex_);
    for (std::size_t i = 0; i < requests.size() && i < replies.size(); ++i) {
      try {
        replies[i] = one(requests[i], now);
      } catch (...) {  // out of memory: no grant
        replies[i] = LeaseReply{};
      }
    }
  }

 private:
  // Tokens may be negative: owed to grants made ahead of time (lookahead).
  struct Bucket {
    double tokens = 0;
    MonoTime at{};
  };
  struct ScopeState {
    std::optional<AdaptiveRate> rate;
    double ceiling = 0;
    std::optional<CircuitBreaker> breaker;
    std::unordered_map<std::uint64_t, MonoTime> workers;
  };
  struct Level {
    Bucket* bucket;
    double rate;
    double cap;
    double held;  // tokens before the grant
  };

  static bool usable(const RateLimit& l) {
    return std::isfinite(l.rate_per_s) && l.rate_per_s >= 0 && l.rate_per_s <= 1e9 && std::isfinite(l.burst) &&
           l.burst >= 0 && l.burst <= 1e12;
  }

  Bucket& bucket(const LeaseRequest& r, const QuotaLevel& level, double cap, MonoTime now) {
    key_.assign(r.scope).push_back('\0');
    key_.append(level.key);
    auto [it, created] = buckets_.try_emplace(key_);
    if (created) it->second = Bucket{r.fill_new ? cap : 0.0, now};
    return it->second;
  }

  // The adaptive state at `now` with this request's reports applied; sets
  // the reply's effective rate, pause and breaker state.
  AdaptiveRate* adaptive(const LeaseRequest& r, MonoTime now, LeaseReply& reply) {
    if (!r.adaptive || r.adaptive->level >= r.levels.size()) return nullptr;
    const double ceiling = r.levels[r.adaptive->level].limit.rate_per_s;
    if (!(ceiling > 0)) return nullptr;
    ScopeState& st = scopes_[r.scope];
    AdaptiveRateOptions o = r.adaptive->options;
    o.ceiling = ceiling;
    o.latency_threshold = Nanos{0};
    if (!st.rate) {
      st.rate.emplace(o, now);
      st.ceiling = ceiling;
    } else {
      st.rate->setTuning(o, now);
      if (st.ceiling != ceiling) st.rate->setCeiling(ceiling, now);
      st.ceiling = ceiling;
    }
    if (!st.breaker)
      st.breaker.emplace(r.adaptive->breaker, now);
    else
      st.breaker->setOptions(r.adaptive->breaker);
    if (r.adaptive->throttled >= Nanos{0}) st.rate->onThrottled(now, r.adaptive->throttled);
    if ((r.adaptive->ok > 0 || r.adaptive->faults > 0) && st.breaker->report(r.adaptive->ok, r.adaptive->faults, now))
      st.rate->onFaults(now, st.breaker->openUntil() - now);
    reply.effective_rate = st.rate->rate(now);
    reply.circuit_open = st.breaker->isOpen(now);
    const MonoTime until = std::max(st.rate->pausedUntil(), st.breaker->openUntil());
    if (now < until) reply.paused = until - now;
    return &*st.rate;
  }

  std::uint32_t countWorker(const LeaseRequest& r, MonoTime now) {
    if (r.worker == 0) return 0;
    auto& workers = scopes_[r.scope].workers;
    workers[r.worker] = now;
    std::erase_if(workers, [&](const auto& w) { return now - w.second >= kActiveWindow; });
    return static_cast<std::uint32_t>(workers.size());
  }

  // Where a grant's tokens start (LeaseReply::start_tokens): with t_i the
  // tokens level i held before the grant and r_i its rate, every level holds
  // a token again after tau0 = max(0, max -t_i / r_i); from then on the
  // slowest level's rate R is a lower bound on how fast all of them refill,
  // so t(tau) = m0 + R (tau - tau0), m0 = min(t_i + r_i tau0), is never ahead
  // of any level. Returned as its value at tau = 0: m0 - R tau0.
  double scheduleStart() const {
    double tau0 = 0;
    double slowest = std::numeric_limits<double>::infinity();
    for (const Level& l : levels_) {
      if (l.rate <= 0) return 0;
      tau0 = std::max(tau0, -l.held / l.rate);
      slowest = std::min(slowest, l.rate);
    }
    double m0 = std::numeric_limits<double>::infinity();
    for (const Level& l : levels_) m0 = std::min(m0, l.held + l.rate * tau0);
    return m0 - slowest * tau0;
  }

  LeaseReply one(const LeaseRequest& r, MonoTime now) {
    LeaseReply reply;
    if (r.levels.empty()) return reply;
    for (const QuotaLevel& l : r.levels)
      if (!usable(l.limit)) return reply;  // kUnavailable: never a grant on a bad limit
    reply.active_workers = countWorker(r, now);
    AdaptiveRate* adapt = adaptive(r, now, reply);
    if (reply.paused > Nanos{0}) {
      reply.status = QuotaStatus::kOk;
      reply.next_token = reply.paused;
      reply.full_in = reply.paused;
      reply.binding = r.adaptive->level;
      return reply;
    }
    const double ahead = seconds(r.lookahead);
    levels_.clear();
    double want = static_cast<double>(r.want);
    double grant = want;
    double least = 0;  // the fewest tokens over the levels: the binding one
    for (std::size_t i = 0; i < r.levels.size(); ++i) {
      RateLimit limit = r.levels[i].limit;
      if (adapt && i == r.adaptive->level) limit = limitAtRate(limit, reply.effective_rate);
      const double cap = std::max(1.0, limit.burst);
      Bucket& b = bucket(r, r.levels[i], cap, now);
      if (now > b.at) {
        b.tokens = std::min(cap, b.tokens + limit.rate_per_s * seconds(now - b.at));
        b.at = now;
      }
      b.tokens = std::min(b.tokens, cap) - static_cast<double>(r.debt);
      const double avail = limit.rate_per_s > 0 ? std::floor(b.tokens + limit.rate_per_s * ahead) : -1.0;
      grant = std::min(grant, std::max(avail, 0.0));
      if (i == 0 || b.tokens < least) {
        least = b.tokens;
        reply.binding = static_cast<std::uint32_t>(i);
      }
      levels_.push_back(Level{&b, limit.rate_per_s, cap, b.tokens});
    }
    const double min_grant = std::min<double>(std::max<std::uint64_t>(r.min_grant, 1), want);
    if (grant < min_grant) grant = 0;
    reply.start_tokens = scheduleStart();
    Nanos next{0};
    for (const Level& l : levels_) {
      l.bucket->tokens -= grant;
      if (l.rate <= 0) {
        next = kNever;
        continue;
      }
      // Not granted: until min_grant fits; granted: until a whole token is held.
      const double need =
          grant > 0 || want == 0 ? 1.0 - l.bucket->tokens : min_grant - (l.bucket->tokens + l.rate * ahead);
      if (next != kNever) next = std::max(next, nanos(need / l.rate));
    }
    const Level& bind = levels_[reply.binding];
    reply.full_in = bind.rate > 0 ? nanos((bind.cap - bind.bucket->tokens) / bind.rate) : kNever;
    reply.status = QuotaStatus::kOk;
    reply.granted = static_cast<std::uint64_t>(grant);
    reply.next_token = next;
    return reply;
  }

  std::mutex mutex_;
  std::unordered_map<std::string, ScopeState> scopes_;
  std::unordered_map<std::string, Bucket> buckets_;
  std::string key_;
  std::vector<Level> levels_;
};

}  // namespace

QuotaBackendPtr makeLocalQuotaBackend() { return std::make_unique<LocalQuotaBackend>(); }

}  // namespace pacer
