#include "pacer/quota_lease.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace pacer {

namespace {

double secs(Nanos d) { return std::chrono::duration<double>(d).count(); }

// While the quota does not answer, a provider's campaigns ask again this often.
constexpr Nanos kUnavailableRetry = std::chrono::milliseconds(50);

Nanos fromSecs(double s) {
  if (!(s < 1e9)) return kNever;
  return std::chrono::duration_cast<Nanos>(std::chrono::duration<double>(std::max(0.0, s)));
}

}  // namespace

// ---- LeaseLimiter -----------------------------------------------------------

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

// ---- QuotaLeaser ------------------------------------------------------------

struct QuotaLeaser::Provider {
  std::string name;
  std::optional<RateLimit> limit;
  DegradedMode mode = DegradedMode::kLocalShare;
  bool degraded = false;
  ProviderId local = kNoProvider;  // the scheduler's provider it applies locally
  MonoTime local_from{};           // degraded: the local shares give nothing before this
  MonoTime unavailable_until{};    // degraded: do not ask again before this
  bool own = false;                // the scope of one campaign without a provider
  std::vector<CampaignId> campaigns;
  // The provider's bucket refused a grant: none of its campaigns asks before
  // this (they come back together, in one batch).
  MonoTime retry_at{};
  double active_weight = 0;            // this worker's active campaigns of it, by weight (per refresh)
  bool asking = false;                 // one of its campaigns asks in this batch (per refresh)
  std::uint64_t target = 0, held = 0;  // summed over its eligible active campaigns (per refresh)
  std::optional<AdaptiveRateOptions> adaptive;
  BreakerOptions breaker;
  Nanos report{-1};                  // a throttle to report with the next refresh (< 0: none)
  std::uint64_t ok = 0, faults = 0;  // answers not yet reported to the breaker
  MonoTime reported_at{};            // the last report of answers
  std::optional<double> effective;   // the shared rate, as last heard
  MonoTime paused_until{};           // the shared pause, as last heard
  bool circuit_open = false;         // as last heard
  std::uint32_t workers = 0;         // workers asking for it, as last heard
};

struct QuotaLeaser::Campaign {
  bool alive = false;
  std::string name;
  std::optional<RateLimit> limit;
  double weight = 1.0;
  std::uint32_t provider = 0;
  LeaseLimiter* lease = nullptr;   // owned by the scheduler; null: no global limit applies
  LeaseRequest request;            // scope and levels, kept ready
  double min_rate = 0.0;           // the tightest level's configured rate
  MonoTime retry_at{};             // do not ask before this (the quota refused a grant)
  std::uint64_t expired_seen = 0;  // lease->expired() already counted in the metrics
  int provider_level = -1;         // index of the provider's level in request.levels, or -1
};

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
  c.request.adaptive.reset();
  if (c.provider_level >= 0 && p.adaptive && p.limit->rate_per_s > 0)
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
  const CampaignId id = scheduler_.addCampaign(cs, now);
  if (campaigns_.size() <= id) campaigns_.resize(id + 1);
  Campaign& c = campaigns_[id];
  c = Campaign{};
  c.alive = true;
  c.name = spec.name;
  c.limit = spec.limit;
  c.weight = spec.weight;
  c.provider = provider;
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

void QuotaLeaser::removeCampaign(CampaignId id) {
  if (id >= campaigns_.size() || !campaigns_[id].alive) throw SchedulerError(fmt::format("unknown campaign id {}", id));
  auto& list = providers_[campaigns_[id].provider].campaigns;
  list.erase(std::remove(list.begin(), list.end(), id), list.end());
  if (campaigns_[id].lease) metrics_.tokens_expired += campaigns_[id].lease->expired() - campaigns_[id].expired_seen;
  campaigns_[id] = Campaign{};
  scheduler_.removeCampaign(id);
}

std::uint32_t QuotaLeaser::workersFor(std::uint32_t provider) const {
  if (provider >= providers_.size()) throw SchedulerError(fmt::format("unknown quota provider {}", provider));
  return std::max(options_.live_workers, providers_[provider].workers);
}

std::optional<RateLimit> QuotaLeaser::localShare(const Campaign& c) const {
  if (providers_[c.provider].mode == DegradedMode::kStop) return std::nullopt;
  const double k = options_.safety_factor / static_cast<double>(workersFor(c.provider));
  double rate = std::numeric_limits<double>::infinity();
  double burst = std::numeric_limits<double>::infinity();
  if (c.limit) {
    rate = c.limit->rate_per_s;
    burst = c.limit->burst;
  }
  const Provider& p = providers_[c.provider];
  if (!std::isfinite(rate)) {
    // Only the provider limits it: the provider's local share (applied to
    // the scheduler's provider limiter) does the limiting.
    if (!p.limit) return std::nullopt;
    rate = p.limit->rate_per_s;
    burst = p.limit->burst;
  }
  return RateLimit{rate * k, std::max(1.0, burst * k)};
}

std::optional<RateLimit> QuotaLeaser::providerShare(const Provider& p) const {
  if (!p.limit) return std::nullopt;
  const std::uint32_t id = static_cast<std::uint32_t>(&p - providers_.data());
  const double k = options_.safety_factor / static_cast<double>(workersFor(id));
  if (p.mode == DegradedMode::kStop) return RateLimit{0.0, 1.0};
  return RateLimit{p.limit->rate_per_s * k, std::max(1.0, p.limit->burst * k)};
}

void QuotaLeaser::applyProviderLimit(Provider& p, MonoTime now, bool start_empty) {
  if (p.local == kNoProvider) return;
  const std::optional<RateLimit> limit = p.degraded ? providerShare(p) : p.limit;
  scheduler_.setProviderLimit(p.local, limit, now);
  if (start_empty)
    if (RateLimitingInterface* l = scheduler_.providerLimiterOf(p.local)) l->acquireUpTo(UINT64_MAX, now);
}

void QuotaLeaser::enterDegraded(std::uint32_t provider, MonoTime now) noexcept {
  Provider& p = providers_[provider];
  if (p.degraded) return;
  p.degraded = true;
  ++metrics_.degraded_entered;
  ++metrics_.degraded_providers;
  // Tokens granted before the outage (this worker's and every other's) fall
  // due until a lookahead from now: the local shares start after that, and
  // empty, so that they never add to them. Meanwhile the leases held are
  // spent as they fall due: they were taken from the shared buckets.
  p.local_from = now + options_.lookahead + lag_;
  try {
    applyProviderLimit(p, now, true);
  } catch (...) {
  }
  for (CampaignId id : p.campaigns) {
    Campaign& c = campaigns_[id];
    if (c.lease == nullptr) continue;
    try {
      c.lease->setLocalShare(localShare(c), now, p.local_from);
    } catch (...) {  // cannot build the local bucket: send nothing more (safe)
      c.lease->setLocalShare(std::nullopt, now, now);
    }
  }
  if (observer_) observer_->onDegraded(p.name, p.mode, true);
}

void QuotaLeaser::leaveDegraded(std::uint32_t provider, MonoTime now) noexcept {
  Provider& p = providers_[provider];
  if (!p.degraded) return;
  p.degraded = false;
  ++metrics_.degraded_left;
  --metrics_.degraded_providers;
  try {
    applyProviderLimit(p, now, false);
  } catch (...) {
  }
  for (CampaignId id : p.campaigns) {
    Campaign& c = campaigns_[id];
    if (c.lease) c.lease->setLocalShare(std::nullopt, now, now);
    c.retry_at = MonoTime{};
  }
  if (observer_) observer_->onDegraded(p.name, p.mode, false);
}

void QuotaLeaser::attachHealth(LeaseRequest& r, std::uint32_t provider) {
  Provider& p = providers_[provider];
  if (!r.adaptive || (p.ok == 0 && p.faults == 0)) return;
  r.adaptive->ok = p.ok;
  r.adaptive->faults = p.faults;
  p.ok = p.faults = 0;
  ++metrics_.health_reports;
}

std::size_t QuotaLeaser::addReports(MonoTime now) {
  reported_.clear();
  for (std::uint32_t pid = 0; pid < providers_.size(); ++pid) {
    Provider& p = providers_[pid];
    const bool throttle = p.report >= Nanos{0};
    const bool health = (p.ok > 0 || p.faults > 0) && now - p.reported_at >= options_.report_interval;
    if (!throttle && !health) continue;
    const Nanos pause = p.report;
    p.report = Nanos{-1};
    if (!p.adaptive || !p.limit || !(p.limit->rate_per_s > 0)) {
      p.ok = p.faults = 0;
      continue;
    }
    try {
      LeaseRequest& r = requestSlot(reported_.size());
      r = LeaseRequest{};
      r.scope = p.name;
      r.levels.assign(1, QuotaLevel{"p", tickSafe(*p.limit)});
      r.want = 0;
      r.fill_new = !p.degraded;
      r.worker = options_.seed;
      r.adaptive = AdaptiveLevel{0, *p.adaptive, p.breaker, pause, 0, 0};
      attachHealth(r, pid);
      p.reported_at = now;
      if (throttle) ++metrics_.throttle_reports;
      reported_.push_back(pid);
      request_provider_.push_back(pid);
    } catch (...) {  // out of memory: the local pause still holds
      break;
    }
  }
  return reported_.size();
}

QuotaLeaser::Sizing QuotaLeaser::size(CampaignId id, MonoTime now) {
  Sizing z;
  if (id >= campaigns_.size()) return z;
  Campaign& c = campaigns_[id];
  if (!c.alive || c.lease == nullptr || c.min_rate <= 0.0) return z;
  Provider& p = providers_[c.provider];
  if (p.degraded ? now < p.unavailable_until : (now < c.retry_at || now < p.retry_at)) return z;
  // This worker's share of the tightest rate that applies. A campaign's own
  // rate is split among live_workers (the configured count: a campaign's
  // messages usually sit in one partition, so one worker), or among the
  // workers seen asking when the campaign is its own scope.
  const double campaign_workers = p.own ? workersFor(c.provider) : options_.live_workers;
  double rate = c.limit ? c.limit->rate_per_s / campaign_workers : std::numeric_limits<double>::infinity();
  if (c.provider_level >= 0) {
    const double provider_rate = std::min(p.limit->rate_per_s, p.effective.value_or(p.limit->rate_per_s));
    const double weights = std::max(p.active_weight, c.weight);
    rate = std::min(rate, provider_rate / static_cast<double>(workersFor(c.provider)) * c.weight / weights);
  }
  const double share = rate * secs(options_.horizon);
  z.target = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::ceil(std::min(share, 1e15))));
  z.held = c.lease->held(now);
  metrics_.tokens_expired += c.lease->expired() - c.expired_seen;
  c.expired_seen = c.lease->expired();
  std::uint64_t backlog = 0;
  try {
    backlog = scheduler_.backlog(id);
  } catch (...) {
    return z;
  }
  z.goal = std::min(backlog, z.target);
  z.min_grant = std::max<std::uint64_t>(
      1, static_cast<std::uint64_t>(std::ceil(static_cast<double>(z.target) * options_.min_grant_fraction)));
  z.eligible = true;
  return z;
}

void QuotaLeaser::addCampaignRequest(CampaignId id, const Sizing& z, MonoTime now, std::size_t lead) {
  Campaign& c = campaigns_[id];
  Provider& p = providers_[c.provider];
  const std::uint64_t want = z.goal - z.held;
  LeaseRequest& r = requestSlot(lead + asked_.size());
  r.scope = c.request.scope;
  r.levels = c.request.levels;
  r.want = want;
  r.fill_new = !p.degraded;
  r.lookahead = options_.lookahead;
  // The campaign that brought the provider below its refill point asks for a
  // useful share or nothing; the others, topped up in the same round trip,
  // for what they lack or nothing.
  r.min_grant = std::min(z.min_grant, want);
  r.worker = options_.seed;
  // What this worker sent of the campaign on its local share in the last
  // second is not in the shared buckets: the first answer charges it, so the
  // quota's first grants after an outage do not come on top of it.
  r.debt = p.degraded ? c.lease->localSpentLastSecond(now) : 0;
  r.adaptive = c.request.adaptive;
  if (!p.asking) attachHealth(r, c.provider);
  if (r.adaptive && r.adaptive->ok + r.adaptive->faults > 0) p.reported_at = now;
  p.asking = true;
  asked_.push_back(id);
  request_provider_.push_back(c.provider);
}

std::size_t QuotaLeaser::refresh(MonoTime now) noexcept {
  asked_.clear();
  request_provider_.clear();
  const std::size_t lead = addReports(now);
  // Requests are served in order, so the campaign asked first gets first go
  // at a shared provider bucket: start one further on each time.
  const std::span<const CampaignId> active = scheduler_.activeCampaigns();
  const std::size_t first = active.empty() ? 0 : rotate_++ % active.size();
  // A provider's share is split among this worker's active campaigns of it
  // by weight, so what a worker holds for a provider stays about one horizon
  // of its share however many campaigns it has.
  for (Provider& p : providers_) {
    p.active_weight = 0;
    p.asking = false;
    p.target = p.held = 0;
  }
  for (CampaignId id : active)
    if (id < campaigns_.size() && campaigns_[id].alive)
      providers_[campaigns_[id].provider].active_weight += campaigns_[id].weight;
  // A provider's campaigns ask together, when what this worker holds for the
  // provider falls below refill_fraction of its share: one round trip refills
  // them all, instead of one round trip per campaign as each runs low on its
  // own. (The scheduler spends them in proportion to their shares, so they
  // run low together.)
  try {
    sizes_.assign(active.size(), Sizing{});
    for (std::size_t k = 0; k < active.size(); ++k) {
      const Sizing z = size(active[k], now);
      sizes_[k] = z;
      if (!z.eligible) continue;
      Provider& p = providers_[campaigns_[active[k]].provider];
      p.target += z.target;
      p.held += z.held;
    }
    for (std::size_t j = 0; j < active.size(); ++j) {
      const std::size_t k = (first + j) % active.size();
      const Sizing& z = sizes_[k];
      if (!z.eligible || z.goal <= z.held) continue;
      Provider& p = providers_[campaigns_[active[k]].provider];
      if (static_cast<double>(p.held) >= options_.refill_fraction * static_cast<double>(p.target)) continue;
      addCampaignRequest(active[k], z, now, lead);
    }
  } catch (...) {  // out of memory: what was added goes
  }
  const std::size_t n = lead + asked_.size();
  if (n == 0) return 0;
  for (std::size_t i = 0; i < n; ++i) replies_[i] = LeaseReply{};
  ++metrics_.batches;
  metrics_.requests += n;
  backend_.acquire(std::span<const LeaseRequest>(requests_.data(), n), now, std::span<LeaseReply>(replies_.data(), n));
  for (std::size_t i = 0; i < n; ++i) last_answer_ = std::max(last_answer_, replies_[i].answered_at);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t pid = request_provider_[i];
    Provider& p = providers_[pid];
    const LeaseReply& reply = replies_[i];
    if (reply.status != QuotaStatus::kOk) {
      ++metrics_.unavailable;
      if (requests_[i].adaptive) {  // the answers were not counted: keep them for the next report
        p.ok += requests_[i].adaptive->ok;
        p.faults += requests_[i].adaptive->faults;
      }
      enterDegraded(pid, now);
      // Asked again in a moment, not every tick (the backend's own reconnect
      // backoff paces the real attempts).
      p.unavailable_until = now + kUnavailableRetry;
      continue;
    }
    leaveDegraded(pid, now);
    if (reply.active_workers > 0) p.workers = reply.active_workers;
    if (requests_[i].adaptive) heardAdaptive(pid, reply, now, i < lead);
    if (i >= lead) handleReply(campaigns_[asked_[i - lead]], requests_[i], reply, now);
  }
  return n;
}

void QuotaLeaser::handleReply(Campaign& c, const LeaseRequest& request, const LeaseReply& reply, MonoTime now) {
  Provider& p = providers_[c.provider];
  if (reply.granted > 0) {
    // From the reply's arrival: timed from `now` (before the round trip), a
    // slow answer would make every token due early by its latency.
    const MonoTime from = std::max(now, reply.answered_at);
    c.lease->grant(reply.granted, reply.start_tokens, reply.schedule_rate, from, options_.ttl, lag_);
    metrics_.tokens_granted += reply.granted;
    c.retry_at = MonoTime{};
    return;
  }
  if (request.want == 0) return;
  ++metrics_.refused;
  // Nothing granted: come back when min_grant fits (or the pause ends),
  // a little late at random so that workers refused together do not return
  // together.
  const Nanos wait = reply.next_token == kNever ? std::chrono::seconds(1) : std::max(reply.next_token, options_.tick);
  const Nanos jittered = wait + std::chrono::duration_cast<Nanos>(wait * (0.2 * unitRandom()));
  c.retry_at = now + jittered;
  if (c.provider_level >= 0 && reply.binding == static_cast<std::uint32_t>(c.provider_level))
    p.retry_at = std::max(p.retry_at, c.retry_at);
}

void QuotaLeaser::heardAdaptive(std::uint32_t provider, const LeaseReply& reply, MonoTime now, bool own) noexcept {
  Provider& p = providers_[provider];
  p.effective = reply.effective_rate;
  p.circuit_open = reply.circuit_open;
  if (reply.paused <= Nanos{0}) return;
  const MonoTime until = now + reply.paused;
  // A pause this worker did not know of (another worker's 429, an open
  // breaker, or one longer than its own): its leases would go out into the
  // pause, so they go now.
  if (until > p.paused_until + options_.tick) {
    if (!own && p.paused_until <= now) ++metrics_.shared_pauses;
    dropLeases(provider);
  }
  p.paused_until = std::max(p.paused_until, until);
  p.retry_at = std::max(p.retry_at, until);
}

void QuotaLeaser::reportThrottle(std::uint32_t provider, Nanos pause) noexcept {
  if (provider >= providers_.size()) return;
  dropLeases(provider);
  queueReport(provider, pause);
}

void QuotaLeaser::reportSlow(std::uint32_t provider) noexcept {
  if (provider < providers_.size()) queueReport(provider, Nanos{0});
}

void QuotaLeaser::reportAnswer(std::uint32_t provider, bool fault) noexcept {
  if (provider >= providers_.size()) return;
  Provider& p = providers_[provider];
  if (!p.adaptive) return;
  if (fault)
    ++p.faults;
  else
    ++p.ok;
}

bool QuotaLeaser::circuitOpen(std::uint32_t provider) const {
  if (provider >= providers_.size()) throw SchedulerError(fmt::format("unknown quota provider {}", provider));
  return providers_[provider].circuit_open;
}

void QuotaLeaser::queueReport(std::uint32_t provider, Nanos pause) noexcept {
  Nanos& report = providers_[provider].report;
  report = std::max(report, std::max(pause, Nanos{0}));  // several before a refresh go as one
}

LeaseRequest& QuotaLeaser::requestSlot(std::size_t i) {
  while (requests_.size() <= i) {
    requests_.emplace_back();
    replies_.emplace_back();
  }
  return requests_[i];
}

std::optional<double> QuotaLeaser::effectiveRate(std::uint32_t provider) const {
  if (provider >= providers_.size()) throw SchedulerError(fmt::format("unknown quota provider {}", provider));
  return providers_[provider].effective;
}

MonoTime QuotaLeaser::pausedUntil(std::uint32_t provider) const {
  if (provider >= providers_.size()) throw SchedulerError(fmt::format("unknown quota provider {}", provider));
  return providers_[provider].paused_until;
}

double QuotaLeaser::unitRandom() noexcept {  // splitmix64, in [0, 1)
  std::uint64_t z = (rng_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

void QuotaLeaser::dropLeases(std::uint32_t provider) noexcept {
  if (provider >= providers_.size()) return;
  for (CampaignId id : providers_[provider].campaigns)
    if (campaigns_[id].lease) campaigns_[id].lease->drop();
}

void QuotaLeaser::setLiveWorkers(std::uint32_t n) {
  if (n == 0) throw SchedulerError("live_workers must be >= 1");
  options_.live_workers = n;
}

std::uint64_t QuotaLeaser::held(CampaignId id, MonoTime now) {
  if (id >= campaigns_.size() || !campaigns_[id].alive) throw SchedulerError(fmt::format("unknown campaign id {}", id));
  return campaigns_[id].lease ? campaigns_[id].lease->held(now) : 0;
}

bool QuotaLeaser::degraded(std::uint32_t provider) const {
  if (provider >= providers_.size()) throw SchedulerError(fmt::format("unknown quota provider {}", provider));
  return providers_[provider].degraded;
}

}  // namespace pacer
