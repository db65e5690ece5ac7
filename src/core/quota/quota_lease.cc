// QuotaLeaser's lease cycle: who asks, for how much, the batch to the backend and its answers, degraded mode and the
// providers' shared state (quota_leaser_impl.h).
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "quota_leaser_impl.h"

namespace pacer {

using quota_detail::fromSecs;
using quota_detail::kUnavailableRetry;
using quota_detail::secs;

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
  if (r.adaptive) r.adaptive->rates = p.own_rates;
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
    if (!throttle && !health && !(p.restore > 0) && !(p.noise_report >= 0)) continue;
    const Nanos pause = p.report;
    const double keep = p.keep;
    const double restore = p.restore;
    const double noise = p.noise_report;
    p.report = Nanos{-1};
    p.keep = 0;
    p.restore = 0;
    p.noise_report = -1;
    if (!p.adapts()) {
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
      r.adaptive = AdaptiveLevel{0, *p.adaptive, p.breaker, pause, 0, 0, keep, restore, noise, AcceptedRates{}};
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
  if (p.degraded ? now < p.unavailable_until : (now < c.retry_at || now < p.ranks[c.rank].retry_at)) return z;
  // This worker's share of the tightest rate that applies. A campaign's own
  // rate is split among live_workers (the configured count: a campaign's
  // messages usually sit in one partition, so one worker), or among the
  // workers seen asking when the campaign is its own scope.
  const double campaign_workers = p.own ? workersFor(c.provider) : options_.live_workers;
  double rate = c.limit ? c.limit->rate_per_s / campaign_workers : std::numeric_limits<double>::infinity();
  if (c.provider_level >= 0) {
    const double provider_rate = std::min(p.limit->rate_per_s, p.effective.value_or(p.limit->rate_per_s));
    const double weights = std::max(p.ranks[c.rank].active_weight, c.weight);
    rate = std::min(rate, provider_rate / static_cast<double>(workersFor(c.provider)) * c.weight / weights);
  }
  const double share = rate * secs(options_.horizon);
  z.target = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::ceil(std::min(share, 1e15))));
  z.held = c.lease->held(now);
  countForfeited(c);
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
  r.priority = c.request.priority;
  if (!p.asking) attachHealth(r, c.provider);
  if (r.adaptive) r.adaptive->rates = p.own_rates;
  if (r.adaptive && r.adaptive->ok + r.adaptive->faults > 0) p.reported_at = now;
  p.asking = true;
  asked_.push_back(id);
  request_provider_.push_back(c.provider);
}

std::size_t QuotaLeaser::refresh(MonoTime now, std::uint64_t room) noexcept {
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
    for (Provider::Rank& r : p.ranks) {  // retry_at is kept: a refusal holds for its wait
      r.active_weight = 0;
      r.target = r.held = 0;
    }
    p.asking = false;
  }
  for (CampaignId id : active)
    if (id < campaigns_.size() && campaigns_[id].alive)
      providers_[campaigns_[id].provider].ranks[campaigns_[id].rank].active_weight += campaigns_[id].weight;
  // A provider's campaigns ask together, when what this worker holds for the
  // provider falls below refill_fraction of its share: one round trip refills
  // them all, instead of one round trip per campaign as each runs low on its
  // own. (The scheduler spends them in proportion to their shares, so they
  // run low together.)
  try {
    sizes_.assign(active.size(), Sizing{});
    std::uint64_t held = 0;  // by every campaign of the worker, for the room
    for (std::size_t k = 0; k < active.size(); ++k) {
      const Sizing z = size(active[k], now);
      sizes_[k] = z;
      if (!z.eligible) continue;
      const Campaign& c = campaigns_[active[k]];
      Provider::Rank& pr = providers_[c.provider].ranks[c.rank];
      pr.target += z.target;
      pr.held += z.held;
      held += z.held;
    }
    // What the sink can take now, less what is held for it already.
    std::uint64_t budget = room > held ? room - held : 0;
    for (std::size_t j = 0; j < active.size() && budget > 0; ++j) {
      const std::size_t k = (first + j) % active.size();
      Sizing& z = sizes_[k];
      if (!z.eligible || z.goal <= z.held) continue;
      const Campaign& c = campaigns_[active[k]];
      const Provider::Rank& pr = providers_[c.provider].ranks[c.rank];
      if (static_cast<double>(pr.held) >= options_.refill_fraction * static_cast<double>(pr.target)) continue;
      z.goal = z.held + std::min(z.goal - z.held, budget);
      budget -= z.goal - z.held;
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
      unanswered(i, lead, now);
      continue;
    }
    leaveDegraded(pid, now);
    if (reply.active_workers > 0) p.workers = reply.active_workers;
    if (requests_[i].adaptive) {
      heardAdaptive(pid, reply, now, i < lead);
      // The sum holds what this request sent: the rest is the other workers'.
      p.recipient_elsewhere = std::max(0.0, reply.provider_rates.recipient - requests_[i].adaptive->rates.recipient);
    }
    if (i >= lead) handleReply(campaigns_[asked_[i - lead]], requests_[i], reply, now);
  }
  return n;
}

// Request `i` of the last batch got no grant: Redis did not answer (degraded
// mode), or answered a typed refusal of a limit it cannot hold (no degraded
// mode, which would flap with every answer; the campaign asks again in a
// second and the backend names the level in its log).
void QuotaLeaser::unanswered(std::size_t i, std::size_t lead, MonoTime now) {
  const std::uint32_t pid = request_provider_[i];
  Provider& p = providers_[pid];
  if (requests_[i].adaptive) {  // the answers were not counted: keep them for the next report
    p.ok += requests_[i].adaptive->ok;
    p.faults += requests_[i].adaptive->faults;
  }
  if (replies_[i].status == QuotaStatus::kRefusedLimit) {
    if (i >= lead) handleReply(campaigns_[asked_[i - lead]], requests_[i], replies_[i], now);
    return;
  }
  ++metrics_.unavailable;
  enterDegraded(pid, now);
  // Asked again in a moment, not every tick (the backend's own reconnect
  // backoff paces the real attempts).
  p.unavailable_until = now + kUnavailableRetry;
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
    for (std::uint32_t r = c.rank; r < kMaxPriorityRanks; ++r)  // a higher rank may still be granted
      p.ranks[r].retry_at = std::max(p.ranks[r].retry_at, c.retry_at);
}

void QuotaLeaser::heardAdaptive(std::uint32_t provider, const LeaseReply& reply, MonoTime now, bool own) noexcept {
  Provider& p = providers_[provider];
  p.effective = reply.effective_rate;
  p.circuit_open = reply.circuit_open;
  p.judge = reply.judge;
  p.shared_noise = reply.noise;
  p.wide_rates = reply.provider_rates;
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
  for (Provider::Rank& r : p.ranks) r.retry_at = std::max(r.retry_at, until);
}

void QuotaLeaser::reportThrottle(std::uint32_t provider, Nanos pause) noexcept {
  if (provider >= providers_.size()) return;
  dropLeases(provider);
  queueReport(provider, pause);
}

void QuotaLeaser::reportCapacity(std::uint32_t provider, Nanos pause, double keep) noexcept {
  if (provider >= providers_.size()) return;
  dropLeases(provider);
  queueReport(provider, pause);
  double& k = providers_[provider].keep;
  keep = std::clamp(keep, 0.01, 1.0);
  k = k > 0 ? std::min(k, keep) : keep;
}

void QuotaLeaser::reportNoise(std::uint32_t provider, double keep) noexcept {
  if (provider < providers_.size()) providers_[provider].restore = std::clamp(keep, 0.01, 1.0);
}

void QuotaLeaser::reportNoiseLevel(std::uint32_t provider, double noise) noexcept {
  if (provider < providers_.size()) providers_[provider].noise_report = std::clamp(noise, 0.0, 1.0);
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

void QuotaLeaser::reportRates(std::uint32_t provider, AcceptedRates rates) noexcept {
  if (provider < providers_.size()) providers_[provider].own_rates = rates;
}

AcceptedRates QuotaLeaser::providerRates(std::uint32_t provider) const {
  if (provider >= providers_.size()) throw SchedulerError(fmt::format("unknown quota provider {}", provider));
  const Provider& p = providers_[provider];
  return p.degraded ? AcceptedRates{} : p.wide_rates;
}

double QuotaLeaser::recipientThrottlesElsewhere(std::uint32_t provider) const {
  if (provider >= providers_.size()) throw SchedulerError(fmt::format("unknown quota provider {}", provider));
  const Provider& p = providers_[provider];
  return p.degraded ? 0 : p.recipient_elsewhere;
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

bool QuotaLeaser::judges(std::uint32_t provider) const {
  if (provider >= providers_.size()) throw SchedulerError(fmt::format("unknown quota provider {}", provider));
  const Provider& p = providers_[provider];
  return !p.adapts() || p.degraded || p.judge;
}

double QuotaLeaser::sharedNoise(std::uint32_t provider) const {
  if (provider >= providers_.size()) throw SchedulerError(fmt::format("unknown quota provider {}", provider));
  return providers_[provider].shared_noise;
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
