// The in-process QuotaBackend: the same buckets, adaptive rate and circuit
// breaker as src/quota/lease.lua, kept in this process behind one mutex so
// that a batch is atomic per request across threads.
#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>

#include "pacer/quota.h"

namespace pacer {
namespace {

constexpr Nanos kActiveWindow = std::chrono::seconds(2);
constexpr Nanos kJudgeSilence = std::chrono::seconds(2);  // lease.lua: a judge with no answers this long is replaced

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
      replies[i].answered_at = now;
    }
  }

 private:
  // A bucket is the time it is full again (GCRA's theoretical arrival time),
  // as in lease.lua: a grant made at a lower rate keeps its place when the
  // rate rises. Later than now + burst / rate: it owes tokens to grants made
  // ahead of time (lookahead).
  struct Bucket {
    MonoTime tat{};
    double rate = 0;  // what tat was reckoned at
    double cap = 0;
  };
  struct ScopeState {
    std::optional<AdaptiveRate> rate;
    double ceiling = 0;
    std::optional<CircuitBreaker> breaker;
    std::unordered_map<std::uint64_t, MonoTime> workers;
    std::unordered_map<std::uint32_t, MonoTime> classes;  // priority rank -> last ask with want > 0
    std::uint64_t judge = 0;  // the worker that judges the throttles (lease.lua's jw), and when it last asked
    MonoTime judge_seen{};
    double noise = 0;
    // Each worker's last AdaptiveLevel::rates and when it came (lease.lua's ar).
    std::unordered_map<std::uint64_t, std::pair<AcceptedRates, MonoTime>> rates;
  };
  // How priority changes a request (LeasePriority in quota.h).
  struct PriorityView {
    std::size_t level = SIZE_MAX;  // the shared level; SIZE_MAX: no priority
    double ahead = 0;              // lookahead on it, seconds
    double cap_fraction = 1;       // below 1: the class's own bucket at this fraction of the level's rate
    bool higher_asking = false;
  };
  struct Level {
    Bucket* bucket;
    double rate;
    double cap;
    double held;      // tokens before the grant
    double ahead;     // lookahead on this level, seconds
    double left = 0;  // after it
  };

  // As lease.lua's unholdable(): out of range, or a burst whose refill at
  // the rate outlasts the longest key lifetime (10^15 ms; a time past it
  // cannot be held in a MonoTime either).
  static LimitRefusal refusal(const RateLimit& l) {
    const bool in_range = std::isfinite(l.rate_per_s) && l.rate_per_s >= 0 && l.rate_per_s <= 1e9 &&
                          std::isfinite(l.burst) && l.burst >= 0 && l.burst <= 1e12;
    if (!in_range) return LimitRefusal::kOutOfRange;
    if (l.rate_per_s > 0 && std::max(l.burst, 1.0) * 1000 / l.rate_per_s > 1e15) return LimitRefusal::kRefillTooLong;
    return LimitRefusal::kNone;
  }

  Bucket& bucket(const LeaseRequest& r, std::string_view level_key, double rate, double cap, MonoTime now) {
    key_.assign(r.scope).push_back('\0');
    key_.append(level_key);
    auto [it, created] = buckets_.try_emplace(key_);
    if (created) it->second = Bucket{r.fill_new || !(rate > 0) ? now : now + nanos(cap / rate), rate, cap};
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
    if (r.adaptive->throttled >= Nanos{0}) {
      if (r.adaptive->keep > 0)
        st.rate->onCapacity(now, r.adaptive->throttled, r.adaptive->keep);
      else
        st.rate->onThrottled(now, r.adaptive->throttled);
    }
    if (r.adaptive->restore > 0) st.rate->restoreLimit(now, r.adaptive->restore);
    if (r.worker != 0) {  // one worker judges for all, as in lease.lua
      const bool answered = r.adaptive->ok + r.adaptive->faults > 0;
      if (st.judge == r.worker) {
        if (answered) st.judge_seen = now;
      } else if (answered && (st.judge == 0 || now - st.judge_seen > kJudgeSilence)) {
        st.judge = r.worker;
        st.judge_seen = now;
      }
      reply.judge = st.judge == r.worker;
      if (reply.judge && r.adaptive->noise >= 0) st.noise = std::min(r.adaptive->noise, 1.0);
    }
    reply.noise = st.noise;
    if (r.worker != 0) reply.provider_rates = sumRates(st, r, now, reply.active_workers);
    if ((r.adaptive->ok > 0 || r.adaptive->faults > 0) && st.breaker->report(r.adaptive->ok, r.adaptive->faults, now))
      st.rate->onFaults(now, st.breaker->openUntil() - now);
    reply.effective_rate = st.rate->rate(now);
    reply.circuit_open = st.breaker->isOpen(now);
    const MonoTime until = std::max(st.rate->pausedUntil(), st.breaker->openUntil());
    if (now < until) reply.paused = until - now;
    return &*st.rate;
  }

  // Every active worker's last rates, summed (as lease.lua does): unknown
  // when one is, or fewer reported than are asking; the recipients'
  // throttles summed over those that reported, always.
  static AcceptedRates sumRates(ScopeState& st, const LeaseRequest& r, MonoTime now, std::uint32_t active) {
    st.rates[r.worker] = {r.adaptive->rates, now};
    std::erase_if(st.rates, [&](const auto& w) { return now - w.second.second > kActiveWindow; });
    AcceptedRates sum{0, 0};
    bool known = st.rates.size() >= active;
    for (const auto& [id, w] : st.rates) {
      known = known && w.first.known();
      sum.accepted += w.first.accepted;
      sum.throttled += w.first.throttled;
      sum.recipient += w.first.recipient;
    }
    if (known) return sum;
    return AcceptedRates{-1, -1, sum.recipient};
  }

  std::uint32_t countWorker(const LeaseRequest& r, MonoTime now) {
    if (r.worker == 0) return 0;
    auto& workers = scopes_[r.scope].workers;
    workers[r.worker] = now;
    std::erase_if(workers, [&](const auto& w) { return now - w.second >= kActiveWindow; });
    return static_cast<std::uint32_t>(workers.size());
  }

  // Records this request's class as asking (want > 0) and says how the
  // classes asking shape it (lease.lua does the same).
  PriorityView priority(const LeaseRequest& r, MonoTime now) {
    PriorityView v;
    v.ahead = seconds(r.lookahead);
    if (!r.priority || r.priority->level >= r.levels.size()) return v;
    const LeasePriority& p = *r.priority;
    auto& classes = scopes_[r.scope].classes;
    if (r.want > 0) classes[p.rank] = now;
    std::erase_if(classes, [&](const auto& c) { return now - c.second >= std::max(p.memory, p.active_window); });
    std::uint32_t higher = 0, lower = 0, higher_seen = 0;
    for (const auto& [rank, at] : classes) {
      if (rank < p.rank) ++higher_seen;
      if (now - at >= p.active_window) continue;
      if (rank < p.rank) ++higher;
      if (rank > p.rank) ++lower;
    }
    v.level = p.level;
    v.higher_asking = higher > 0;
    if (higher > 0) {
      v.ahead = seconds(p.lower_lookahead) * (1.0 + static_cast<double>(lower) / (higher + lower));
    } else if (lower > 0 || higher_seen > 0) {
      v.ahead = std::min(v.ahead, seconds(p.top_lookahead));
      if (lower > 0) v.cap_fraction = 1.0 - std::min(std::clamp(p.floor, 0.0, 0.5) * lower, 0.9);
    }
    return v;
  }

  // The schedule of a grant of n tokens (LeaseReply::start_tokens and
  // schedule_rate). With t_i the tokens level i held before the grant and r_i
  // its rate, token k is due when f(tau) = min_i (t_i + r_i tau) reaches k.
  // f is concave, so the chord from tau_a (when every level holds a token
  // again, f = m0 >= 0) to tau_n (f = n) lies under it: following the chord a
  // token is never spent before every level would have held it, and, the
  // chord hugging f where one level binds, hardly later. Returned as its
  // value at 0 (m0 - R tau_a) and its slope R.
  std::pair<double, double> schedule(double n) const {
    double tau_a = 0, tau_n = 0;
    for (const Level& l : levels_) {
      if (l.rate <= 0) return {0, 0};
      tau_a = std::max(tau_a, -l.held / l.rate);
      tau_n = std::max(tau_n, (n - l.held) / l.rate);
    }
    double m0 = std::numeric_limits<double>::infinity();
    for (const Level& l : levels_) m0 = std::min(m0, l.held + l.rate * tau_a);
    if (m0 >= n || tau_n <= tau_a) return {n, levels_.front().rate};  // all due at once
    const double slope = (n - m0) / (tau_n - tau_a);
    return {m0 - slope * tau_a, slope};
  }

  // While the scope is paused it grants nothing and says how long is left.
  static LeaseReply pausedReply(const LeaseRequest& r, LeaseReply reply) {
    reply.status = QuotaStatus::kOk;
    reply.next_token = reply.paused;
    reply.full_in = reply.paused;
    reply.binding = r.adaptive->level;
    return reply;
  }

  // A limit it cannot hold: the typed refusal lease.lua answers, never a grant.
  static bool refusedLimit(const LeaseRequest& r, LeaseReply& reply) {
    for (std::size_t i = 0; i < r.levels.size(); ++i) {
      const LimitRefusal why = refusal(r.levels[i].limit);
      if (why == LimitRefusal::kNone) continue;
      reply.status = QuotaStatus::kRefusedLimit;
      reply.refusal = why;
      reply.binding = static_cast<std::uint32_t>(i);
      return true;
    }
    return false;
  }

  LeaseReply one(const LeaseRequest& r, MonoTime now) {
    LeaseReply reply;
    if (r.levels.empty()) return reply;
    if (refusedLimit(r, reply)) return reply;
    reply.active_workers = countWorker(r, now);
    AdaptiveRate* adapt = adaptive(r, now, reply);
    if (reply.paused > Nanos{0}) return pausedReply(r, std::move(reply));
    const PriorityView pv = priority(r, now);
    levels_.clear();
    double want = static_cast<double>(r.want);
    double grant = want;
    double least = 0;  // the fewest tokens over the levels: the binding one
    auto addLevel = [&](std::string_view key, RateLimit limit, double ahead) {
      const double cap = std::max(1.0, limit.burst);
      Bucket& b = bucket(r, key, limit.rate_per_s, cap, now);
      // Beyond the burst's refill, tat is time owed to grants made ahead:
      // kept as time when the rate changes (a grant made at a lower rate
      // keeps its place); within it, tokens missing: kept as tokens (lease.lua).
      double tokens = 0;
      if (limit.rate_per_s > 0) {
        const double d = std::max(0.0, seconds(b.tat - now));
        const double owed = b.rate > 0 ? std::max(0.0, d - b.cap / b.rate) : 0.0;
        const double in_burst = b.rate > 0 ? std::max(0.0, b.cap - (d - owed) * b.rate) : cap;
        tokens = std::min(cap, in_burst) - owed * limit.rate_per_s;
      }
      tokens -= static_cast<double>(r.debt);
      const double avail = limit.rate_per_s > 0 ? std::floor(tokens + limit.rate_per_s * ahead) : -1.0;
      grant = std::min(grant, std::max(avail, 0.0));
      if (levels_.empty() || tokens < least) {
        least = tokens;
        reply.binding = static_cast<std::uint32_t>(levels_.size());
      }
      levels_.push_back(Level{&b, limit.rate_per_s, cap, tokens, ahead});
    };
    RateLimit shared{};
    for (std::size_t i = 0; i < r.levels.size(); ++i) {
      RateLimit limit = r.levels[i].limit;
      if (adapt && i == r.adaptive->level) limit = limitAtRate(limit, reply.effective_rate);
      if (i == pv.level) shared = limit;
      addLevel(r.levels[i].key, limit, i == pv.level ? pv.ahead : seconds(r.lookahead));
    }
    if (pv.cap_fraction < 1.0) {
      key_class_ = "k" + std::to_string(r.priority->rank);
      addLevel(key_class_, RateLimit{shared.rate_per_s * pv.cap_fraction, shared.burst}, pv.ahead);
    }
    double min_grant = std::min<double>(std::max<std::uint64_t>(r.min_grant, 1), want);
    if (pv.higher_asking) {  // never ask more of the shared level than it can give this class at once
      const Level& l = levels_[pv.level];
      min_grant = std::min(min_grant, std::max(1.0, std::floor(l.cap + l.rate * l.ahead)));
    }
    if (grant < min_grant) grant = 0;
    if (grant > 0) std::tie(reply.start_tokens, reply.schedule_rate) = schedule(grant);
    Nanos next{0};
    for (Level& l : levels_) {
      l.left = l.held - grant;
      if (l.rate <= 0) {
        next = kNever;
        continue;
      }
      l.bucket->tat = now + nanos((l.cap - l.left) / l.rate);
      l.bucket->rate = l.rate;
      l.bucket->cap = l.cap;
      // Not granted: until min_grant fits; granted: until a whole token is held.
      const double need = grant > 0 || want == 0 ? 1.0 - l.left : min_grant - (l.left + l.rate * l.ahead);
      if (next != kNever) next = std::max(next, nanos(need / l.rate));
    }
    const Level& bind = levels_[reply.binding];
    reply.full_in = bind.rate > 0 ? nanos((bind.cap - bind.left) / bind.rate) : kNever;
    // The class's own bucket (a floor) stands for the shared level it is a share of.
    if (reply.binding >= r.levels.size()) reply.binding = static_cast<std::uint32_t>(pv.level);
    reply.status = QuotaStatus::kOk;
    reply.granted = static_cast<std::uint64_t>(grant);
    reply.next_token = next;
    return reply;
  }

  std::mutex mutex_;
  std::unordered_map<std::string, ScopeState> scopes_;
  std::unordered_map<std::string, Bucket> buckets_;
  std::string key_;
  std::string key_class_;
  std::vector<Level> levels_;
};

}  // namespace

QuotaBackendPtr makeLocalQuotaBackend() { return std::make_unique<LocalQuotaBackend>(); }

}  // namespace pacer
