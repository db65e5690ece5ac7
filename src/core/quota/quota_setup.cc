// QuotaLeaser's registration of providers and campaigns and their limits (quota_leaser_impl.h).
#include <fmt/format.h>

#include <limits>

#include "quota_leaser_impl.h"

namespace pacer {

using quota_detail::fromSecs;
using quota_detail::kUnavailableRetry;
using quota_detail::secs;

namespace {

void checkLimit(const std::optional<RateLimit>& limit) {
  if (!limit) return;
  try {
    validateLimit(*limit, LimiterOptions{});
  } catch (const InvalidLimitError& e) {
    throw SchedulerError(e.what());
  }
}

void checkName(const std::string& name, const char* what) {
  if (name.empty() || name.find_first_of("{}") != std::string::npos)
    throw SchedulerError(fmt::format("{} name must be non-empty and contain no '{{' or '}}': '{}'", what, name));
}

}  // namespace

QuotaLeaser::QuotaLeaser(Scheduler& scheduler, QuotaBackend& backend, LeaseOptions options, QuotaObserver* observer)
    : scheduler_(scheduler), backend_(backend), options_(options), observer_(observer), rng_(options.seed) {
  if (options_.live_workers == 0) throw SchedulerError("live_workers must be >= 1");
  if (!(options_.safety_factor > 0.0 && options_.safety_factor <= 1.0))
    throw SchedulerError(fmt::format("safety_factor must be in (0, 1], got {}", options_.safety_factor));
  if (options_.horizon <= Nanos{0} || options_.ttl <= Nanos{0})
    throw SchedulerError("lease horizon and ttl must be > 0");
  if (options_.lookahead < Nanos{0}) throw SchedulerError("lease lookahead must be >= 0");
  if (!(options_.refill_fraction > 0.0 && options_.refill_fraction <= 1.0))
    throw SchedulerError("refill_fraction must be in (0, 1]");
  if (!(options_.min_grant_fraction >= 0.0 && options_.min_grant_fraction <= 1.0))
    throw SchedulerError("min_grant_fraction must be in [0, 1]");
  if (options_.seed == 0) options_.seed = 1;  // 0 means "not counted" to the backend
  const PriorityLeaseOptions& pr = options_.priority;
  if (!(pr.floor >= 0.0 && pr.floor <= 0.5))
    throw SchedulerError(fmt::format("priority floor must be in [0, 0.5], got {}", pr.floor));
  if (pr.lower_lookahead < Nanos{0} || pr.top_lookahead < Nanos{0} || pr.active_window <= Nanos{0})
    throw SchedulerError("priority lookaheads must be >= 0 and its active window > 0");
  // A tick late, and half a tick more for a busy loop.
  lag_ = options_.tick + options_.tick / 2;
}

QuotaLeaser::~QuotaLeaser() = default;

std::uint32_t QuotaLeaser::addProvider(const QuotaProviderSpec& spec) {
  checkName(spec.name, "provider");
  checkLimit(spec.limit);
  Provider p;
  p.name = spec.name;
  p.limit = spec.limit;
  p.mode = spec.degraded;
  p.adaptive = spec.adaptive;
  p.breaker = spec.breaker;
  p.local = spec.local_provider;
  providers_.push_back(std::move(p));
  return static_cast<std::uint32_t>(providers_.size() - 1);
}

void QuotaLeaser::setProviderLimit(std::uint32_t provider, std::optional<RateLimit> limit, MonoTime now) {
  if (provider >= providers_.size()) throw SchedulerError(fmt::format("unknown quota provider {}", provider));
  checkLimit(limit);
  Provider& p = providers_[provider];
  p.limit = limit;
  for (CampaignId id : p.campaigns) rebuildLevels(campaigns_[id]);
  applyProviderLimit(p, now, false);
}

void QuotaLeaser::setProviderAdaptive(std::uint32_t provider, std::optional<AdaptiveRateOptions> adaptive) {
  if (provider >= providers_.size()) throw SchedulerError(fmt::format("unknown quota provider {}", provider));
  providers_[provider].adaptive = adaptive;
  for (CampaignId id : providers_[provider].campaigns) rebuildLevels(campaigns_[id]);
}

// A token is spent at most `lag` after it falls due (later it is forfeited),
// so the tokens spent in a window are among those due in a window `lag`
// longer. Asking the shared bucket for a burst `lag`'s worth smaller keeps
// what is sent within rate * w + burst for every window w (burst never below 1).
RateLimit QuotaLeaser::tickSafe(RateLimit limit) const noexcept {
  limit.burst = std::max(1.0, limit.burst - limit.rate_per_s * secs(lag_));
  return limit;
}

void QuotaLeaser::rebuildLevels(Campaign& c) {
  const Provider& p = providers_[c.provider];
  c.request.scope = p.name;
  c.request.levels.clear();
  c.provider_level = -1;
  c.min_rate = std::numeric_limits<double>::infinity();
  if (c.limit) {
    c.request.levels.push_back(QuotaLevel{"c:" + c.name, tickSafe(*c.limit)});
    c.min_rate = std::min(c.min_rate, c.limit->rate_per_s);
  }
  if (p.limit) {
    c.provider_level = static_cast<int>(c.request.levels.size());
    c.request.levels.push_back(QuotaLevel{"p", tickSafe(*p.limit)});
    c.min_rate = std::min(c.min_rate, p.limit->rate_per_s);
  }
  c.request.priority.reset();
  if (c.provider_level >= 0 && options_.priority.enabled && !p.own) {
    const PriorityLeaseOptions& o = options_.priority;
    c.request.priority = LeasePriority{static_cast<std::uint32_t>(c.provider_level), c.rank, o.floor,
                                       o.lower_lookahead, o.top_lookahead, o.active_window, o.memory};
  }
  c.request.adaptive.reset();
  if (c.provider_level >= 0 && p.adapts())
    c.request.adaptive =
        AdaptiveLevel{static_cast<std::uint32_t>(c.provider_level), *p.adaptive, p.breaker, Nanos{-1}, 0, 0};
}

CampaignId QuotaLeaser::addCampaign(const QuotaCampaignSpec& spec, MonoTime now) {
  checkName(spec.name, "campaign");
  checkLimit(spec.limit);
  std::uint32_t provider = spec.provider;
  if (provider == UINT32_MAX) {
    // No provider: the campaign is its own scope (hash tag), degraded on its own.
    QuotaProviderSpec own;
    own.name = "c:" + spec.name;
    provider = addProvider(own);
    providers_[provider].own = true;
  } else if (provider >= providers_.size()) {
    throw SchedulerError(fmt::format("unknown quota provider {}", provider));
  }
  CampaignSpec cs;
  cs.weight = spec.weight;
  cs.provider = spec.local_provider;
  cs.priority = spec.priority;
  const CampaignId id = scheduler_.addCampaign(cs, now);
  if (campaigns_.size() <= id) campaigns_.resize(id + 1);
  Campaign& c = campaigns_[id];
  c = Campaign{};
  c.alive = true;
  c.name = spec.name;
  c.limit = spec.limit;
  c.weight = spec.weight;
  c.provider = provider;
  c.rank = spec.priority;
  rebuildLevels(c);
  if (!c.request.levels.empty()) {
    auto lease = std::make_unique<LeaseLimiter>(RateLimit{c.min_rate, 1.0});
    c.lease = lease.get();
    scheduler_.setLimiter(id, std::move(lease));
    if (providers_[provider].degraded) c.lease->setLocalShare(localShare(c), now, providers_[provider].local_from);
  }
  providers_[provider].campaigns.push_back(id);
  return id;
}

void QuotaLeaser::setCampaignLimit(CampaignId id, std::optional<RateLimit> limit, MonoTime now) {
  if (id >= campaigns_.size() || !campaigns_[id].alive) throw SchedulerError(fmt::format("unknown campaign id {}", id));
  checkLimit(limit);
  Campaign& c = campaigns_[id];
  c.limit = limit;
  rebuildLevels(c);
  if (c.request.levels.empty()) {
    scheduler_.setLimiter(id, nullptr);
    c.lease = nullptr;
    return;
  }
  if (c.lease == nullptr) {
    auto lease = std::make_unique<LeaseLimiter>(RateLimit{c.min_rate, 1.0});
    c.lease = lease.get();
    scheduler_.setLimiter(id, std::move(lease));
  }
  c.lease->setLimit(RateLimit{c.min_rate, 1.0}, now);
  if (providers_[c.provider].degraded) c.lease->setLocalShare(localShare(c), now, providers_[c.provider].local_from);
  c.retry_at = MonoTime{};
}

void QuotaLeaser::setCampaignWeight(CampaignId id, double weight) {
  if (id >= campaigns_.size() || !campaigns_[id].alive) throw SchedulerError(fmt::format("unknown campaign id {}", id));
  scheduler_.setWeight(id, weight);
  campaigns_[id].weight = weight;
}

void QuotaLeaser::setCampaignPriority(CampaignId id, std::uint32_t rank) {
  if (id >= campaigns_.size() || !campaigns_[id].alive) throw SchedulerError(fmt::format("unknown campaign id {}", id));
  scheduler_.setPriority(id, rank);
  campaigns_[id].rank = rank;
  rebuildLevels(campaigns_[id]);
}

void QuotaLeaser::countForfeited(Campaign& c) noexcept {
  metrics_.tokens_expired += c.lease->expired() - c.expired_seen;
  c.expired_seen = c.lease->expired();
  metrics_.tokens_late += c.lease->late() - c.late_seen;
  c.late_seen = c.lease->late();
}

void QuotaLeaser::removeCampaign(CampaignId id) {
  if (id >= campaigns_.size() || !campaigns_[id].alive) throw SchedulerError(fmt::format("unknown campaign id {}", id));
  auto& list = providers_[campaigns_[id].provider].campaigns;
  list.erase(std::remove(list.begin(), list.end(), id), list.end());
  if (campaigns_[id].lease) countForfeited(campaigns_[id]);
  campaigns_[id] = Campaign{};
  scheduler_.removeCampaign(id);
}

}  // namespace pacer
