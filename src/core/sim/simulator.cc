#include "pacer/sim/simulator.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>

#include "flow.h"
#include "pacer/frequency_cap.h"
#include "pacer/quiet_hours.h"
#include "pacer/scheduler.h"
#include "provider_model.h"

namespace pacer::sim {
namespace {

std::optional<RateLimit> limitOf(const std::optional<double>& rate, double burst) {
  if (!rate) return std::nullopt;
  return RateLimit{*rate, burst};
}

// The campaign's one limiter, seen from another of its routes: a campaign's
// rate holds whichever provider carries its messages.
class SharedLimiter final : public RateLimitingInterface {
 public:
  explicit SharedLimiter(RateLimitingInterface* of) : of_(of) {}
  bool tryAcquire(std::uint64_t n, MonoTime now) noexcept override { return of_->tryAcquire(n, now); }
  std::uint64_t available(MonoTime now, std::uint64_t max) noexcept override { return of_->available(now, max); }
  Nanos timeUntil(std::uint64_t n, MonoTime now) noexcept override { return of_->timeUntil(n, now); }
  void setLimit(RateLimit limit, MonoTime now) noexcept override { of_->setLimit(limit, now); }
  RateLimit limit() const noexcept override { return of_->limit(); }
  Algorithm algorithm() const noexcept override { return of_->algorithm(); }

 private:
  RateLimitingInterface* of_;
};

// One simulation: the scheduler, the results, and who joins when.
class Run {
 public:
  Run(const Scenario& s, bool keep_bins)
      : s_(s),
        keep_bins_(keep_bins),
        tick_ns_(static_cast<std::int64_t>(std::llround(s.tick_ms * 1e6))),
        ticks_(static_cast<std::uint64_t>(std::ceil(s.duration_s * 1e9 / static_cast<double>(tick_ns_) - 1e-9))),
        seconds_(std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(s.duration_s - 1e-9)))),
        scheduler_(options(s, tick_ns_)),
        caps_(makeMemoryFrequencyCapStore()) {
    checkSize();
    if (s.zones) quiet_ = std::make_unique<QuietHours>(s.zones);
    for (std::size_t i = 0; i < s.campaigns.size(); ++i) flows_.emplace_back(s, i, tick_ns_, caps_.get(), quiet_.get());
    out_.tick_ms = s.tick_ms;
    out_.ticks = ticks_;
    addProviders();
    for (const CampaignScenario& c : s.campaigns)
      out_.campaigns.push_back(SeriesResult{c.id, c.rate, c.burst, 0, std::nullopt, {}, {}, {}, std::nullopt, {}});
    for (std::vector<SeriesResult>* r : {&out_.campaigns, &out_.providers}) {
      for (SeriesResult& x : *r) {
        x.per_s.assign(seconds_, 0);
        if (keep_bins_) x.bins.assign(ticks_, 0);
      }
    }
    // Campaigns join at the first tick at or after start_s, in start order.
    for (std::size_t i = 0; i < s.campaigns.size(); ++i)
      starts_.emplace_back(
          static_cast<std::uint64_t>(std::ceil(s.campaigns[i].start_s * 1e9 / static_cast<double>(tick_ns_) - 1e-9)),
          i);
    std::sort(starts_.begin(), starts_.end());
    provider_of_.assign(s.campaigns.size(), kNoProvider);
    routes_.resize(s.campaigns.size());
    for (const ProviderScenario& p : s.providers) any_outage_ = any_outage_ || !p.outages.empty();
    ids_.assign(s.campaigns.size(), 0);
    retry_ready_.assign(s.campaigns.size(), 0);
    retry_pending_.assign(s.campaigns.size(), 0);
    for (SeriesResult& p : out_.providers) {
      if (!p.answers) continue;
      p.answers->throttled_per_s.assign(seconds_, 0);
      p.answers->effective_per_s.assign(seconds_, 0);
    }
  }

  SimResult run() {
    for (std::uint64_t k = 0; k < ticks_; ++k) {
      const MonoTime now{Nanos{static_cast<std::int64_t>(k) * tick_ns_}};
      const double t_s = static_cast<double>(k) * static_cast<double>(tick_ns_) / 1e9;
      join(k, now);
      releaseRetries(k);
      const std::size_t second = std::min(seconds_ - 1, static_cast<std::size_t>(t_s + 1e-12));
      control(now, second);
      route(t_s);
      for (std::size_t n = 0; n < next_start_; ++n) {
        const std::size_t i = starts_[n].second;
        if (const std::uint64_t more = flows_[i].due(k)) scheduler_.addBacklog(ids_[i], more);
        if (const std::uint64_t gone = flows_[i].expire(k)) scheduler_.dropBacklog(ids_[i], gone);
        // Its last message may have expired (in the backlog or waiting for a retry).
        if (!out_.campaigns[i].finished_s && finished(i)) out_.campaigns[i].finished_s = t_s;
      }
      for (const Grant& g : scheduler_.tick(now, capacityAt(k, t_s))) record(g, k, second, t_s, now);
    }
    for (std::size_t i = 0; i < flows_.size(); ++i) out_.campaigns[i].rules = flows_[i].finish(ticks_);
    for (std::size_t j = 0; j < models_.size(); ++j) {
      if (!models_[j]) continue;
      SeriesResult::Answers& a = *out_.providers[j].answers;
      a.capacity_cuts = models_[j]->capacityVerdicts();
      a.noise_verdicts = models_[j]->noiseVerdicts();
      a.noise = models_[j]->noise();
    }
    return std::move(out_);
  }

 private:
  static SchedulerOptions options(const Scenario& s, std::int64_t tick_ns) {
    SchedulerOptions o;
    o.limiter.algorithm = s.algorithm;
    o.limiter.window = Nanos{static_cast<std::int64_t>(std::llround(s.window_s * 1e9))};
    o.limiter.max_lateness = Nanos{tick_ns};
    return o;
  }

  void checkSize() const {
    const double series = static_cast<double>(s_.campaigns.size() + s_.providers.size());
    const double bytes =
        series * (static_cast<double>(seconds_) + (keep_bins_ ? static_cast<double>(ticks_) : 0.0)) * 8.0;
    if (bytes <= 4.0 * (1u << 30)) return;
    throw ScenarioError(
        fmt::format("the result would need about {:.1f} GiB ({} campaigns and providers x {} s{}): shorten duration_s, "
                    "raise tick_ms{}, or simulate fewer campaigns",
                    bytes / (1u << 30), s_.campaigns.size() + s_.providers.size(), seconds_,
                    keep_bins_ ? " x per-tick bins" : "", keep_bins_ ? ", drop --bins" : ""));
  }

  void addProviders() {
    for (const ProviderScenario& p : s_.providers) {
      ProviderId id = 0;
      try {
        id = scheduler_.addProvider(ProviderSpec{limitOf(p.rate, p.burst)}, MonoTime{});
      } catch (const SchedulerError& e) {
        throw ScenarioError(fmt::format("providers[{}] ({}): {}", out_.providers.size(), p.id, e.what()));
      }
      provider_ids_[p.id] = id;
      provider_index_.resize(id + 1);
      provider_index_[id] = out_.providers.size();
      out_.providers.push_back(SeriesResult{p.id, p.rate, p.burst, 0, std::nullopt, {}, {}, {}, std::nullopt, {}});
      models_.emplace_back();
      if (!p.modelled()) continue;
      models_.back().emplace(p, MonoTime{});
      out_.providers.back().answers.emplace();
      out_.providers.back().answers->would_accept = models_.back()->wouldAccept();
    }
  }

  // The campaigns whose start is due at tick k join the scheduler.
  void join(std::uint64_t k, MonoTime now) {
    for (; next_start_ < starts_.size() && starts_[next_start_].first <= k; ++next_start_) {
      const std::size_t i = starts_[next_start_].second;
      const CampaignScenario& c = s_.campaigns[i];
      std::vector<std::string> names;
      if (c.provider) names.push_back(*c.provider);
      names.insert(names.end(), c.fallbacks.begin(), c.fallbacks.end());
      if (names.empty()) names.emplace_back();  // no provider: one route of its own
      for (const std::string& name : names) {
        CampaignSpec spec{limitOf(c.rate, c.burst), c.weight, kNoProvider, c.priority};
        if (!name.empty()) spec.provider = provider_ids_.at(name);
        CampaignId id = 0;
        try {
          id = scheduler_.addCampaign(spec, now);
        } catch (const SchedulerError& e) {
          throw ScenarioError(fmt::format("campaigns[{}] ({}): {}", i, c.id, e.what()));
        }
        // Later routes take the first route's tokens: one campaign rate.
        if (!routes_[i].empty() && c.rate)
          scheduler_.setLimiter(id, std::make_unique<SharedLimiter>(scheduler_.limiterOf(routes_[i][0])));
        by_id_.resize(std::max<std::size_t>(by_id_.size(), id + 1), 0);
        route_pid_.resize(by_id_.size(), kNoProvider);
        by_id_[id] = i;
        route_pid_[id] = spec.provider;
        routes_[i].push_back(id);
        if (routes_[i].size() > 1) scheduler_.pause(id);
      }
      provider_of_[i] = route_pid_[routes_[i][0]];
      ids_[i] = routes_[i][0];
      if (!c.fallbacks.empty())
        for (const std::string& name : names) out_.campaigns[i].by_provider.emplace_back(name, 0);
      const std::uint64_t backlog = flows_[i].start(k);
      if (backlog > 0) scheduler_.addBacklog(ids_[i], backlog);
    }
  }

  // Whole messages per tick that add up to exactly capacity_per_s; none in a stall.
  std::uint64_t capacityAt(std::uint64_t k, double t_s) const {
    for (const Stall& st : s_.stalls)
      if (t_s >= st.from_s - 1e-12 && t_s < st.to_s - 1e-12) return 0;
    if (!s_.capacity_per_s) return kUnlimitedCapacity;
    const double per_tick = *s_.capacity_per_s * static_cast<double>(tick_ns_) / 1e9;
    return static_cast<std::uint64_t>(std::floor(static_cast<double>(k + 1) * per_tick + 1e-9) -
                                      std::floor(static_cast<double>(k) * per_tick + 1e-9));
  }

  void record(const Grant& g, std::uint64_t k, std::size_t second, double t_s, MonoTime now) {
    const std::size_t i = by_id_[g.campaign];
    // Retries of refused messages go first; the rules may hold or suppress
    // some of the fresh ones.
    const std::uint64_t again = std::min(g.count, retry_ready_[i]);
    retry_ready_[i] -= again;
    std::uint64_t sent = again + flows_[i].take(k, g.count - again);
    const ProviderId pid = route_pid_[g.campaign];
    const std::size_t pj = pid == kNoProvider ? 0 : provider_index_[pid];
    if (pid != kNoProvider && models_[pj])
      sent = answer(*models_[pj], *out_.providers[pj].answers, i, sent, k, second, now);
    SeriesResult& r = out_.campaigns[i];
    r.sent += sent;
    if (!r.by_provider.empty())
      r.by_provider[static_cast<std::size_t>(std::find(routes_[i].begin(), routes_[i].end(), g.campaign) -
                                             routes_[i].begin())]
          .second += sent;
    r.per_s[second] += sent;
    if (keep_bins_) r.bins[k] += sent;
    if (!r.finished_s && finished(i)) r.finished_s = t_s;
    if (pid == kNoProvider) return;
    SeriesResult& p = out_.providers[pj];
    p.sent += sent;
    p.per_s[second] += sent;
    if (keep_bins_) p.bins[k] += sent;
  }

  // A modelled provider answers each of `n` requests of campaign i: returns
  // how many it accepted; the others wait retry_s and are backlog again.
  std::uint64_t answer(ProviderModel& m, SeriesResult::Answers& a, std::size_t i, std::uint64_t n, std::uint64_t k,
                       std::size_t second, MonoTime now) {
    std::uint64_t accepted = 0, refused = 0;
    // With a lifetime the flow keeps which messages were refused, so each
    // retries with its own deadline; otherwise they are counted here.
    const bool by_message = s_.campaigns[i].lifetimeS().has_value();
    refused_.clear();
    for (std::uint64_t x = 0; x < n; ++x) {
      const ProviderModel::Answer ans = m.send(now);
      if (ans == ProviderModel::Answer::kAccepted) {
        ++accepted;
        continue;
      }
      ++refused;
      if (by_message) refused_.push_back(flows_[i].taken()[x]);
      if (ans == ProviderModel::Answer::kThrottled) {
        ++a.throttled;
        ++a.throttled_per_s[second];
      } else {
        ++a.faults;
      }
    }
    a.attempts += n;
    if (refused > 0) {
      const double retry_s = s_.providers[provider_index_[provider_of_[i]]].retry_s;
      const auto wait = static_cast<std::uint64_t>(std::ceil(retry_s * 1e9 / static_cast<double>(tick_ns_) - 1e-9));
      const std::uint64_t due = k + std::max<std::uint64_t>(1, wait);
      if (by_message) {
        flows_[i].retry(due, refused_);
      } else {
        retries_.emplace(due, std::make_pair(i, refused));
        retry_pending_[i] += refused;
      }
    }
    return accepted;
  }

  // Refused messages whose retry is due are backlog again.
  void releaseRetries(std::uint64_t k) {
    while (!retries_.empty() && retries_.begin()->first <= k) {
      const auto [i, n] = retries_.begin()->second;
      retries_.erase(retries_.begin());
      retry_pending_[i] -= n;
      retry_ready_[i] += n;
      scheduler_.addBacklog(ids_[i], n);
    }
  }

  // Every message of campaign i sent, suppressed or expired, none waiting for a retry.
  bool finished(std::size_t i) const { return flows_[i].done() && retry_pending_[i] == 0 && retry_ready_[i] == 0; }

  bool hasOutages(ProviderId pid) const {
    return pid != kNoProvider && !s_.providers[provider_index_[pid]].outages.empty();
  }

  bool outAt(ProviderId pid, double t_s) const {
    if (pid == kNoProvider) return false;
    for (const Stall& o : s_.providers[provider_index_[pid]].outages)
      if (t_s >= o.from_s - 1e-12 && t_s < o.to_s - 1e-12) return true;
    return false;
  }

  // Each joined campaign sends through the first of its providers that is
  // not out (its backlog moves there); its other routes, and every route
  // whose provider is out, are paused: nothing is granted, no token taken.
  void route(double t_s) {
    if (!any_outage_) return;
    for (std::size_t n = 0; n < next_start_; ++n) {
      const std::size_t i = starts_[n].second;
      const std::vector<CampaignId>& rs = routes_[i];
      // Only campaigns whose providers can be out: a modelled provider (never
      // out, never in a list) pauses its campaigns itself (control()).
      if (std::none_of(rs.begin(), rs.end(), [&](CampaignId id) { return hasOutages(route_pid_[id]); })) continue;
      CampaignId to = ids_[i];
      for (const CampaignId id : rs) {
        if (outAt(route_pid_[id], t_s)) continue;
        to = id;
        break;
      }
      if (to != ids_[i]) {
        scheduler_.addBacklog(to, scheduler_.dropBacklog(ids_[i], scheduler_.backlog(ids_[i])));
        ids_[i] = to;
      }
      for (const CampaignId id : rs) {
        const bool pause = id != to || outAt(route_pid_[id], t_s);
        if (pause == scheduler_.paused(id)) continue;
        if (pause)
          scheduler_.pause(id);
        else
          scheduler_.resume(id);
      }
    }
  }

  // Each modelled provider's controller sets its limit in the scheduler (when
  // it moved by more than 1%, as the worker core does) and pauses its campaigns.
  void control(MonoTime now, std::size_t second) {
    for (std::size_t j = 0; j < models_.size(); ++j) {
      if (!models_[j]) continue;
      ProviderModel& m = *models_[j];
      const RateLimit l = m.limit(now);
      auto& applied = applied_[j];
      if (std::abs(l.rate_per_s - applied) > 0.01 * applied || applied == 0) {
        scheduler_.setProviderLimit(provider_ids_.at(s_.providers[j].id), l, now);
        applied = l.rate_per_s;
      }
      out_.providers[j].answers->effective_per_s[second] = l.rate_per_s;
      const bool paused = m.paused(now);
      if (paused == paused_[j]) continue;
      paused_[j] = paused;
      const ProviderId pid = provider_ids_.at(s_.providers[j].id);
      for (std::size_t i = 0; i < next_start_; ++i) {
        const std::size_t c = starts_[i].second;
        if (provider_of_[c] != pid) continue;
        if (paused)
          scheduler_.pause(ids_[c]);
        else
          scheduler_.resume(ids_[c]);
      }
    }
  }

  const Scenario& s_;
  const bool keep_bins_;
  const std::int64_t tick_ns_;
  const std::uint64_t ticks_;
  const std::size_t seconds_;
  Scheduler scheduler_;
  SimResult out_;
  std::map<std::string, ProviderId> provider_ids_;
  std::vector<std::size_t> provider_index_;  // ProviderId -> index in out_.providers
  std::vector<std::pair<std::uint64_t, std::size_t>> starts_;
  std::size_t next_start_ = 0;
  std::vector<std::size_t> by_id_;  // CampaignId -> scenario index
  std::vector<ProviderId> provider_of_;
  std::vector<CampaignId> ids_;                  // scenario index -> the CampaignId of the route in use (once joined)
  std::vector<std::vector<CampaignId>> routes_;  // scenario index -> one scheduler campaign per provider, in order
  std::vector<ProviderId> route_pid_;            // CampaignId -> its route's provider
  bool any_outage_ = false;
  FrequencyCapStorePtr caps_;    // one store; each campaign is its own scope
  std::unique_ptr<QuietHours> quiet_;
  std::vector<Flow> flows_;  // by scenario index
  // Modelled providers (by index in out_.providers) and their refused messages.
  std::vector<std::optional<ProviderModel>> models_;
  std::map<std::size_t, double> applied_;  // the limit last given to the scheduler
  std::map<std::size_t, bool> paused_;
  std::multimap<std::uint64_t, std::pair<std::size_t, std::uint64_t>> retries_;  // due tick -> campaign, messages
  std::vector<std::uint64_t> retry_ready_;    // per campaign: backlog again, not yet granted
  std::vector<std::uint64_t> retry_pending_;  // per campaign: waiting for their retry
  std::vector<std::uint64_t> refused_;        // scratch of answer(): seqs refused
};

}  // namespace

SimResult simulate(const Scenario& s, bool keep_bins) { return Run(s, keep_bins).run(); }

}  // namespace pacer::sim
