#include "pacer/quota_lease.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace pacer {

// ---- LeaseLimiter -----------------------------------------------------------

void LeaseLimiter::expire(MonoTime now) noexcept {
  if (tokens_ > 0 && now >= expires_at_) {
    expired_ += tokens_;
    tokens_ = 0;
  }
}

void LeaseLimiter::drop() noexcept {
  expired_ += tokens_;
  tokens_ = 0;
  drip_ = 0;
}

std::uint64_t LeaseLimiter::held(MonoTime now) noexcept {
  expire(now);
  return tokens_;
}

void LeaseLimiter::grant(std::uint64_t n, MonoTime now, Nanos ttl, Nanos spread, Nanos tick) noexcept {
  expire(now);
  if (n == 0) return;
  spendable(now);  // what has dripped so far stays
  tokens_ += n;
  expires_at_ = now + ttl;
  if (spread <= Nanos{0}) {
    drip_rate_ = 0;
    return;
  }
  // Everything held, spread over `spread` from now.
  drip_rate_ = static_cast<double>(tokens_) / std::chrono::duration<double>(spread).count();
  // A late tick (a busy loop) may catch up a little, not a whole lease.
  const double window = std::max(4 * std::chrono::duration<double>(tick).count(), 0.02);
  drip_cap_ = std::max(1.0, drip_rate_ * window);
  drip_at_ = now;
}

std::uint64_t LeaseLimiter::spendable(MonoTime now) noexcept {
  if (drip_rate_ <= 0) return tokens_;
  if (now > drip_at_) {
    drip_ = std::min(drip_cap_, drip_ + drip_rate_ * std::chrono::duration<double>(now - drip_at_).count());
    drip_at_ = now;
  }
  return std::min(tokens_, static_cast<std::uint64_t>(drip_));
}

std::uint64_t LeaseLimiter::available(MonoTime now, std::uint64_t max) noexcept {
  expire(now);
  const std::uint64_t lease = std::min(spendable(now), max);
  if (lease == max || !local_) return lease;
  return lease + local_->available(now, max - lease);
}

bool LeaseLimiter::tryAcquire(std::uint64_t n, MonoTime now) noexcept {
  expire(now);
  const std::uint64_t ready = spendable(now);
  if (n <= ready) {
    tokens_ -= n;
    if (drip_rate_ > 0) drip_ -= static_cast<double>(n);
    return true;
  }
  if (!local_ || !local_->tryAcquire(n - ready, now)) return false;
  tokens_ -= ready;
  if (drip_rate_ > 0) drip_ -= static_cast<double>(ready);
  return true;
}

Nanos LeaseLimiter::timeUntil(std::uint64_t n, MonoTime now) noexcept {
  expire(now);
  const std::uint64_t ready = spendable(now);
  if (n <= ready) return Nanos{0};
  if (n <= tokens_ && drip_rate_ > 0 && static_cast<double>(n) <= drip_cap_) {
    const double need = static_cast<double>(n) - drip_;
    return std::chrono::duration_cast<Nanos>(std::chrono::duration<double>(need / drip_rate_)) + Nanos{1};
  }
  if (local_) return local_->timeUntil(n - ready, now);
  return kNever;
}

void LeaseLimiter::setLimit(RateLimit limit, MonoTime /*now*/) noexcept { limit_ = limit; }

void LeaseLimiter::setLocalShare(std::optional<RateLimit> share, MonoTime now) {
  if (!share) {
    local_.reset();
    return;
  }
  local_ = makeLimiter(LimiterOptions{}, *share, now);
  local_->acquireUpTo(UINT64_MAX, now);  // starts empty: no burst on entering degraded mode
}

// ---- QuotaLeaser ------------------------------------------------------------

struct QuotaLeaser::Provider {
  std::string name;
  std::optional<RateLimit> limit;
  DegradedMode mode = DegradedMode::kLocalShare;
  bool degraded = false;
  std::vector<CampaignId> campaigns;
  // The provider's bucket was the one that ran dry: none of its campaigns
  // asks before this (they come back together, in one batch).
  MonoTime retry_at{};
  std::size_t active = 0;  // this worker's active campaigns of it (counted per refresh)
  std::optional<AdaptiveRateOptions> adaptive;
  Nanos report{-1};                     // a throttle to report with the next refresh (< 0: none)
  std::optional<double> effective;      // the shared rate, as last heard
  MonoTime paused_until{};              // the shared pause, as last heard
};

struct QuotaLeaser::Campaign {
  bool alive = false;
  std::string name;
  std::optional<RateLimit> limit;
  std::uint32_t provider = 0;
  LeaseLimiter* lease = nullptr;   // owned by the scheduler; null: no global limit applies
  LeaseRequest request;            // scope and levels, kept ready
  double min_rate = 0.0;           // the tightest level's rate
  MonoTime retry_at{};             // do not ask before this (the quota said no token sooner)
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
  if (!(options_.refill_fraction > 0.0 && options_.refill_fraction <= 1.0))
    throw SchedulerError("refill_fraction must be in (0, 1]");
  spread_ = std::chrono::duration_cast<Nanos>(options_.horizon * std::max(1.0 - options_.refill_fraction, 0.1));
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
  providers_.push_back(std::move(p));
  return static_cast<std::uint32_t>(providers_.size() - 1);
}

void QuotaLeaser::setProviderLimit(std::uint32_t provider, std::optional<RateLimit> limit) {
  if (provider >= providers_.size()) throw SchedulerError(fmt::format("unknown quota provider {}", provider));
  checkLimit(limit);
  providers_[provider].limit = limit;
  for (CampaignId id : providers_[provider].campaigns) rebuildLevels(campaigns_[id]);
}

void QuotaLeaser::setProviderAdaptive(std::uint32_t provider, std::optional<AdaptiveRateOptions> adaptive) {
  if (provider >= providers_.size()) throw SchedulerError(fmt::format("unknown quota provider {}", provider));
  providers_[provider].adaptive = adaptive;
  for (CampaignId id : providers_[provider].campaigns) rebuildLevels(campaigns_[id]);
}

void QuotaLeaser::rebuildLevels(Campaign& c) {
  const Provider& p = providers_[c.provider];
  c.request.scope = p.name;
  c.request.levels.clear();
  c.provider_level = -1;
  c.min_rate = std::numeric_limits<double>::infinity();
  if (c.limit) {
    c.request.levels.push_back(QuotaLevel{"c:" + c.name, *c.limit});
    c.min_rate = std::min(c.min_rate, c.limit->rate_per_s);
  }
  if (p.limit) {
    c.provider_level = static_cast<int>(c.request.levels.size());
    c.request.levels.push_back(QuotaLevel{"p", *p.limit});
    c.min_rate = std::min(c.min_rate, p.limit->rate_per_s);
  }
  c.request.adaptive.reset();
  if (c.provider_level >= 0 && p.adaptive && p.limit->rate_per_s > 0)
    c.request.adaptive = AdaptiveLevel{static_cast<std::uint32_t>(c.provider_level), *p.adaptive, Nanos{-1}};
}

CampaignId QuotaLeaser::addCampaign(const QuotaCampaignSpec& spec, MonoTime now) {
  checkName(spec.name, "campaign");
  checkLimit(spec.limit);
  std::uint32_t provider = spec.provider;
  if (provider == UINT32_MAX) {
    // No provider: the campaign is its own scope (hash tag), degraded on its own.
    provider = addProvider(QuotaProviderSpec{"c:" + spec.name, std::nullopt, DegradedMode::kLocalShare, std::nullopt});
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
  c.provider = provider;
  rebuildLevels(c);
  if (!c.request.levels.empty()) {
    auto lease = std::make_unique<LeaseLimiter>(RateLimit{c.min_rate, 1.0});
    c.lease = lease.get();
    scheduler_.setLimiter(id, std::move(lease));
    if (providers_[provider].degraded) c.lease->setLocalShare(localShare(c), now);
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
  if (providers_[c.provider].degraded) c.lease->setLocalShare(localShare(c), now);
  c.retry_at = MonoTime{};
}

void QuotaLeaser::removeCampaign(CampaignId id) {
  if (id >= campaigns_.size() || !campaigns_[id].alive) throw SchedulerError(fmt::format("unknown campaign id {}", id));
  auto& list = providers_[campaigns_[id].provider].campaigns;
  list.erase(std::remove(list.begin(), list.end(), id), list.end());
  if (campaigns_[id].lease) metrics_.tokens_expired += campaigns_[id].lease->expired() - campaigns_[id].expired_seen;
  campaigns_[id] = Campaign{};
  scheduler_.removeCampaign(id);
}

std::optional<RateLimit> QuotaLeaser::localShare(const Campaign& c) const {
  if (providers_[c.provider].mode == DegradedMode::kStop) return std::nullopt;
  const double k = options_.safety_factor / static_cast<double>(options_.live_workers);
  double burst = std::numeric_limits<double>::infinity();
  for (const QuotaLevel& l : c.request.levels) burst = std::min(burst, l.limit.burst);
  return RateLimit{c.min_rate * k, std::max(1.0, burst * k)};
}

void QuotaLeaser::enterDegraded(std::uint32_t provider, MonoTime now) noexcept {
  Provider& p = providers_[provider];
  if (p.degraded) return;
  p.degraded = true;
  ++metrics_.degraded_entered;
  ++metrics_.degraded_providers;
  for (CampaignId id : p.campaigns) {
    Campaign& c = campaigns_[id];
    if (c.lease == nullptr) continue;
    try {
      c.lease->setLocalShare(localShare(c), now);
    } catch (...) {  // cannot build the local bucket: send nothing more (safe)
      c.lease->setLocalShare(std::nullopt, now);
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
  for (CampaignId id : p.campaigns) {
    Campaign& c = campaigns_[id];
    if (c.lease) c.lease->setLocalShare(std::nullopt, now);
    c.retry_at = MonoTime{};
  }
  if (observer_) observer_->onDegraded(p.name, p.mode, false);
}

std::size_t QuotaLeaser::refresh(MonoTime now) noexcept {
  asked_.clear();
  reported_.clear();
  // Throttle reports lead the batch, each a request of its own for the
  // provider's bucket alone (want 0: it takes nothing).
  for (std::uint32_t pid = 0; pid < providers_.size(); ++pid) {
    Provider& p = providers_[pid];
    if (p.report < Nanos{0}) continue;
    const Nanos pause = p.report;
    p.report = Nanos{-1};
    if (!p.adaptive || !p.limit || !(p.limit->rate_per_s > 0)) continue;
    try {
      LeaseRequest& r = requestSlot(reported_.size());
      r.scope = p.name;
      r.levels.assign(1, QuotaLevel{"p", *p.limit});
      r.want = 0;
      r.fill_new = !p.degraded;
      r.adaptive = AdaptiveLevel{0, *p.adaptive, pause};
      reported_.push_back(pid);
    } catch (...) {  // out of memory: the local pause still holds
      break;
    }
  }
  const std::size_t lead = reported_.size();
  const double horizon_s = std::chrono::duration<double>(options_.horizon).count();
  // Requests are served in order, so the campaign asked first gets first go
  // at a shared provider bucket: start one further on each time.
  const std::span<const CampaignId> active = scheduler_.activeCampaigns();
  const std::size_t first = active.empty() ? 0 : rotate_++ % active.size();
  // A provider's rate is split among this worker's active campaigns of it
  // when sizing their leases, so what a worker may hold for a provider stays
  // about one horizon of its share however many campaigns it has.
  for (Provider& p : providers_) p.active = 0;
  for (CampaignId id : active)
    if (id < campaigns_.size() && campaigns_[id].alive) ++providers_[campaigns_[id].provider].active;
  for (std::size_t k = 0; k < active.size(); ++k) {
    const CampaignId id = active[(first + k) % active.size()];
    if (id >= campaigns_.size()) continue;
    Campaign& c = campaigns_[id];
    if (!c.alive || c.lease == nullptr || c.min_rate <= 0.0) continue;
    const bool degraded = providers_[c.provider].degraded;
    if (!degraded && (now < c.retry_at || now < providers_[c.provider].retry_at)) continue;
    double rate = c.min_rate;
    const Provider& prov = providers_[c.provider];
    if (c.provider_level >= 0 && prov.limit && prov.active > 1)
      rate = std::min(rate, prov.limit->rate_per_s / static_cast<double>(prov.active));
    const double share = rate / static_cast<double>(options_.live_workers) * horizon_s;
    const std::uint64_t target =
        std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::ceil(std::min(share, 1e15))));
    const std::uint64_t held = c.lease->held(now);
    metrics_.tokens_expired += c.lease->expired() - c.expired_seen;
    c.expired_seen = c.lease->expired();
    if (static_cast<double>(held) >= static_cast<double>(target) * options_.refill_fraction) continue;
    std::uint64_t backlog = 0;
    try {
      backlog = scheduler_.backlog(id);
    } catch (...) {
      continue;
    }
    const std::uint64_t goal = std::min(backlog, target);
    if (goal <= held) continue;
    try {
      LeaseRequest& r = requestSlot(lead + asked_.size());
      r.scope = c.request.scope;
      r.levels = c.request.levels;
      r.want = goal - held;
      r.fill_new = !degraded;
      r.adaptive = c.request.adaptive;
      asked_.push_back(id);
    } catch (...) {  // out of memory: ask next tick
      break;
    }
  }
  const std::size_t n = lead + asked_.size();
  if (n == 0) return 0;
  for (std::size_t i = 0; i < n; ++i) replies_[i] = LeaseReply{};
  ++metrics_.batches;
  metrics_.requests += n;
  metrics_.throttle_reports += lead;
  backend_.acquire(std::span<const LeaseRequest>(requests_.data(), n), now, std::span<LeaseReply>(replies_.data(), n));
  for (std::size_t i = 0; i < lead; ++i) {
    const LeaseReply& reply = replies_[i];
    if (reply.status != QuotaStatus::kOk) {
      ++metrics_.unavailable;
      enterDegraded(reported_[i], now);
      continue;
    }
    leaveDegraded(reported_[i], now);
    heardAdaptive(reported_[i], reply, now, true);
  }
  for (std::size_t i = lead; i < n; ++i) {
    Campaign& c = campaigns_[asked_[i - lead]];
    const LeaseReply& reply = replies_[i];
    if (reply.status != QuotaStatus::kOk) {
      ++metrics_.unavailable;
      enterDegraded(c.provider, now);
      continue;
    }
    leaveDegraded(c.provider, now);
    if (requests_[i].adaptive) heardAdaptive(c.provider, reply, now, false);
    // Spent evenly until about when the next lease is asked for, not all in
    // one tick: several workers spending whole leases at once would reach
    // the provider as bursts above its own bucket's (and be answered 429).
    // ... and spent before the binding bucket is full again, when this
    // campaign asks next: tokens still held then would keep it from asking,
    // and a small bucket would overflow meanwhile.
    Nanos spread = spread_;
    if (reply.full_in != kNever) spread = std::min(spread, std::max(reply.full_in - options_.tick, Nanos{0}));
    c.lease->grant(reply.granted, now, options_.ttl, spread, options_.tick);
    metrics_.tokens_granted += reply.granted;
    // Not all we asked for, or all of it but the bucket is now dry (no whole
    // token left): let it fill for as long as a refill covers
    // (horizon * (1 - refill_fraction)) before asking again. It keeps what
    // accrues, up to its burst, so nothing is lost, and a dry bucket then
    // costs as few round trips as a full one. (Without the second condition a
    // worker that spends its lease within a tick asks again at once, gets the
    // crumbs that accrued meanwhile, and pays two round trips per refill.)
    if (reply.granted < requests_[i].want || reply.next_token > Nanos{0}) {
      // How long: horizon * (1 - refill_fraction), but ending one tick before
      // the first level is full again (reply.full_in): a bucket nobody asks
      // of after that wastes what accrues, and a worker alone on the quota
      // would lose it. Then shortened by up to 20% at random: workers that
      // found the bucket dry at the same moment would otherwise all come
      // back at the same moment, one would take everything, and the others
      // would pay a round trip for nothing, in step, for ever.
      double pause_s =
          std::chrono::duration<double>(options_.horizon).count() * std::max(1.0 - options_.refill_fraction, 0.1);
      if (reply.full_in != kNever)
        pause_s = std::min(pause_s, std::chrono::duration<double>(reply.full_in - options_.tick).count());
      pause_s = std::max(pause_s, 0.0) * (0.8 + 0.2 * unitRandom());
      const auto pause = std::chrono::duration_cast<Nanos>(std::chrono::duration<double>(pause_s));
      c.retry_at = reply.next_token == kNever ? now + std::chrono::seconds(1) : now + std::max(reply.next_token, pause);
      // The provider's bucket bound: its other campaigns would find it dry
      // too, so they wait with this one.
      if (c.provider_level >= 0 && reply.binding == static_cast<std::uint32_t>(c.provider_level))
        providers_[c.provider].retry_at = std::max(providers_[c.provider].retry_at, c.retry_at);
    } else
      c.retry_at = MonoTime{};
  }
  return n;
}

void QuotaLeaser::heardAdaptive(std::uint32_t provider, const LeaseReply& reply, MonoTime now, bool own) noexcept {
  Provider& p = providers_[provider];
  p.effective = reply.effective_rate;
  if (reply.paused <= Nanos{0}) return;
  const MonoTime until = now + reply.paused;
  // A pause this worker did not know of (another worker's 429, or one longer
  // than its own): its leases would go out into the pause, so they go now.
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

void QuotaLeaser::queueReport(std::uint32_t provider, Nanos pause) noexcept {
  Nanos& report = providers_[provider].report;
  report = std::max(report, std::max(pause, Nanos{0}));  // several before a refresh go as one
}

LeaseRequest& QuotaLeaser::requestSlot(std::size_t i) {
  if (i == requests_.size()) {
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
