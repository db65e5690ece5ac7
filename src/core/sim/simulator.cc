#include "pacer/sim/simulator.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "pacer/scheduler.h"

namespace pacer::sim {
namespace {

// A backlogged campaign's backlog: more than any simulation can send.
constexpr std::uint64_t kEndless = std::uint64_t{1} << 60;

std::optional<RateLimit> limitOf(const std::optional<double>& rate, double burst) {
  if (!rate) return std::nullopt;
  return RateLimit{*rate, burst};
}

}  // namespace

SimResult simulate(const Scenario& s, bool keep_bins) {
  const auto tick_ns = static_cast<std::int64_t>(std::llround(s.tick_ms * 1e6));
  const auto ticks = static_cast<std::uint64_t>(std::ceil(s.duration_s * 1e9 / static_cast<double>(tick_ns) - 1e-9));
  const auto seconds = std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(s.duration_s - 1e-9)));
  const double series = static_cast<double>(s.campaigns.size() + s.providers.size());
  const double bytes = series * (static_cast<double>(seconds) + (keep_bins ? static_cast<double>(ticks) : 0.0)) * 8.0;
  if (bytes > 4.0 * (1u << 30)) {
    throw ScenarioError(
        fmt::format("the result would need about {:.1f} GiB ({} campaigns and providers x {} s{}): shorten duration_s, "
                    "raise tick_ms{}, or simulate fewer campaigns",
                    bytes / (1u << 30), s.campaigns.size() + s.providers.size(), seconds,
                    keep_bins ? " x per-tick bins" : "", keep_bins ? ", drop --bins" : ""));
  }

  SchedulerOptions options;
  options.limiter.algorithm = s.algorithm;
  options.limiter.window = Nanos{static_cast<std::int64_t>(std::llround(s.window_s * 1e9))};
  options.limiter.max_lateness = Nanos{tick_ns};
  Scheduler scheduler(options);

  SimResult out;
  out.tick_ms = s.tick_ms;
  out.ticks = ticks;
  std::map<std::string, ProviderId> provider_ids;
  std::vector<std::size_t> provider_index;  // ProviderId -> index in out.providers
  for (const ProviderScenario& p : s.providers) {
    ProviderId id = 0;
    try {
      id = scheduler.addProvider(ProviderSpec{limitOf(p.rate, p.burst)}, MonoTime{});
    } catch (const SchedulerError& e) {
      throw ScenarioError(fmt::format("providers[{}] ({}): {}", out.providers.size(), p.id, e.what()));
    }
    provider_ids[p.id] = id;
    provider_index.resize(id + 1);
    provider_index[id] = out.providers.size();
    out.providers.push_back(SeriesResult{p.id, p.rate, p.burst, 0, std::nullopt, {}, {}});
  }
  for (const CampaignScenario& c : s.campaigns) {
    out.campaigns.push_back(SeriesResult{c.id, c.rate, c.burst, 0, std::nullopt, {}, {}});
  }
  for (std::vector<SeriesResult>* r : {&out.campaigns, &out.providers}) {
    for (SeriesResult& x : *r) {
      x.per_s.assign(seconds, 0);
      if (keep_bins) x.bins.assign(ticks, 0);
    }
  }

  // Campaigns join at the first tick at or after start_s, in start order.
  std::vector<std::pair<std::uint64_t, std::size_t>> starts;
  for (std::size_t i = 0; i < s.campaigns.size(); ++i) {
    starts.emplace_back(
        static_cast<std::uint64_t>(std::ceil(s.campaigns[i].start_s * 1e9 / static_cast<double>(tick_ns) - 1e-9)), i);
  }
  std::sort(starts.begin(), starts.end());
  std::size_t next_start = 0;
  std::vector<std::size_t> by_id;  // CampaignId -> scenario index
  std::vector<ProviderId> provider_of(s.campaigns.size(), kNoProvider);

  const double cap_per_tick = s.capacity_per_s ? *s.capacity_per_s * static_cast<double>(tick_ns) / 1e9 : 0.0;
  for (std::uint64_t k = 0; k < ticks; ++k) {
    const MonoTime now{Nanos{static_cast<std::int64_t>(k) * tick_ns}};
    const double t_s = static_cast<double>(k) * static_cast<double>(tick_ns) / 1e9;
    for (; next_start < starts.size() && starts[next_start].first <= k; ++next_start) {
      const std::size_t i = starts[next_start].second;
      const CampaignScenario& c = s.campaigns[i];
      CampaignSpec spec{limitOf(c.rate, c.burst), c.weight, kNoProvider};
      if (c.provider) spec.provider = provider_ids.at(*c.provider);
      CampaignId id = 0;
      try {
        id = scheduler.addCampaign(spec, now);
      } catch (const SchedulerError& e) {
        throw ScenarioError(fmt::format("campaigns[{}] ({}): {}", i, c.id, e.what()));
      }
      by_id.resize(std::max<std::size_t>(by_id.size(), id + 1));
      by_id[id] = i;
      provider_of[i] = spec.provider;
      const std::uint64_t backlog = c.messages.value_or(kEndless);
      if (backlog == 0) out.campaigns[i].finished_s = std::nullopt;
      scheduler.addBacklog(id, backlog);
    }

    std::uint64_t capacity = kUnlimitedCapacity;
    if (s.capacity_per_s) {
      // Whole messages per tick that add up to exactly capacity_per_s.
      capacity = static_cast<std::uint64_t>(std::floor(static_cast<double>(k + 1) * cap_per_tick + 1e-9) -
                                            std::floor(static_cast<double>(k) * cap_per_tick + 1e-9));
    }
    for (const Stall& st : s.stalls) {
      if (t_s >= st.from_s - 1e-12 && t_s < st.to_s - 1e-12) capacity = 0;
    }

    const std::size_t second = std::min(seconds - 1, static_cast<std::size_t>(t_s + 1e-12));
    for (const Grant& g : scheduler.tick(now, capacity)) {
      const std::size_t i = by_id[g.campaign];
      SeriesResult& r = out.campaigns[i];
      r.sent += g.count;
      r.per_s[second] += g.count;
      if (keep_bins) r.bins[k] += g.count;
      if (s.campaigns[i].messages && r.sent == *s.campaigns[i].messages) r.finished_s = t_s;
      if (provider_of[i] != kNoProvider) {
        SeriesResult& p = out.providers[provider_index[provider_of[i]]];
        p.sent += g.count;
        p.per_s[second] += g.count;
        if (keep_bins) p.bins[k] += g.count;
      }
    }
  }
  return out;
}

}  // namespace pacer::sim
