// The scheduler's state, shared by scheduler.cc (registration and control)
// and scheduler_tick.cc (the tick). Private to src/core/scheduler.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <span>
#include <vector>

#include "pacer/scheduler.h"

namespace pacer {
namespace scheduler_detail {

constexpr std::uint32_t kNotActive = UINT32_MAX;
constexpr double kInf = std::numeric_limits<double>::infinity();

struct CampaignSlot {
  bool alive = false;
  bool paused = false;
  double weight = 1.0;
  ProviderId provider = kNoProvider;
  std::uint64_t backlog = 0;
  double credit = 0.0;  // messages owed (+) or given ahead (-), within [-1, 1]
  std::uint32_t active_pos = kNotActive;
  std::uint32_t rank = 0;            // priority rank: lower ranks are served first
  RateLimitingInterfacePtr limiter;  // null: unlimited
};

struct ProviderSlot {
  RateLimitingInterfacePtr limiter;  // null: unlimited
  std::uint32_t campaigns = 0;
  // Per-tick scratch, valid when stamp == the tick's stamp.
  std::uint64_t stamp = 0;
  std::uint64_t available = 0;         // integer tokens at this tick
  std::uint64_t granted = 0;           // integer units handed out this tick
  double real_left = 0.0;              // budget left in the real-valued fill
  double weight_open = 0.0;            // weight of its still-open candidates
  double demand = 0.0;                 // sum of min(cap, lambda*w) of open candidates
  std::vector<std::uint32_t> members;  // indexes into the tick's candidates
};

struct Candidate {
  CampaignId id;
  ProviderId provider;
  double weight;
  std::uint64_t cap;  // most it can take: min(backlog, campaign tokens, capacity)
  double share;       // real-valued allocation from the water-fill
  bool open;          // still in the water-fill
  std::uint64_t give;
};
}  // namespace scheduler_detail

using scheduler_detail::CampaignSlot;
using scheduler_detail::Candidate;
using scheduler_detail::kInf;
using scheduler_detail::kNotActive;
using scheduler_detail::ProviderSlot;

struct Scheduler::Impl {
  SchedulerOptions options;
  std::vector<CampaignSlot> campaigns;
  std::vector<CampaignId> free_ids;
  std::vector<ProviderSlot> providers;
  std::vector<CampaignId> active;
  std::uint64_t rotation = 0;
  std::uint64_t stamp = 0;
  std::size_t alive = 0;
  // Active campaigns per priority rank, and how many ranks have any.
  std::array<std::uint32_t, kMaxPriorityRanks> active_per_rank{};
  std::uint32_t ranks_active = 0;
  // Scratch reused every tick.
  std::vector<Candidate> cands;
  std::vector<ProviderId> touched;
  std::vector<Grant> grants;
  std::vector<CampaignId> drained;
  std::vector<std::pair<long long, std::uint32_t>> order;  // leftover hand-out order: (-owed, position)
  bool unlimited_tick = false;                             // this tick's capacity is kUnlimitedCapacity

  CampaignSlot& campaign(CampaignId id) {
    if (id >= campaigns.size() || !campaigns[id].alive) throw SchedulerError(fmt::format("unknown campaign id {}", id));
    return campaigns[id];
  }
  const CampaignSlot& campaign(CampaignId id) const {
    if (id >= campaigns.size() || !campaigns[id].alive) throw SchedulerError(fmt::format("unknown campaign id {}", id));
    return campaigns[id];
  }
  ProviderSlot& provider(ProviderId id) {
    if (id >= providers.size()) throw SchedulerError(fmt::format("unknown provider id {}", id));
    return providers[id];
  }

  void validate(const RateLimit& limit) const {
    try {
      validateLimit(limit, options.limiter);
    } catch (const InvalidLimitError& e) {
      throw SchedulerError(e.what());
    }
  }

  RateLimitingInterfacePtr build(const std::optional<RateLimit>& limit, MonoTime now) const {
    if (!limit) return nullptr;
    try {
      return makeLimiter(options.limiter, *limit, now);
    } catch (const InvalidLimitError& e) {
      throw SchedulerError(e.what());
    }
  }

  void refreshActive(CampaignId id) {
    CampaignSlot& c = campaigns[id];
    const bool want = c.alive && !c.paused && c.backlog > 0;
    if (want && c.active_pos == kNotActive) {
      c.active_pos = static_cast<std::uint32_t>(active.size());
      active.push_back(id);
      countRank(c.rank, +1);
    } else if (!want && c.active_pos != kNotActive) {
      countRank(c.rank, -1);
      const std::uint32_t pos = c.active_pos;
      active[pos] = active.back();
      campaigns[active[pos]].active_pos = pos;
      active.pop_back();
      c.active_pos = kNotActive;
      c.credit = 0.0;
    }
  }

  void countRank(std::uint32_t rank, int delta) {
    std::uint32_t& n = active_per_rank[rank];
    if (delta > 0 && n++ == 0) ++ranks_active;
    if (delta < 0 && --n == 0) --ranks_active;
  }

  std::uint64_t providerRoom(ProviderId p) const {
    if (p == kNoProvider) return UINT64_MAX;
    const ProviderSlot& ps = providers[p];
    return ps.available - ps.granted;
  }

  void give(Candidate& c, std::uint64_t n, std::uint64_t& capacity_left) {
    c.give += n;
    if (!unlimited_tick) capacity_left -= n;  // "unlimited" is not a number to use up
    if (c.provider != kNoProvider) providers[c.provider].granted += n;
  }

  // The tick (scheduler_tick.cc).
  void waterFill(double capacity);
  // Water-fill `budget` among the open candidates of provider p.
  void fillProvider(ProviderId p, double budget);
  // What campaign `id` could take right now, within its backlog, its
  // limiter and its provider's; a candidate when above 0.
  [[gnu::always_inline]] inline void gather(CampaignId id, MonoTime now, std::uint64_t capacity);
  // Whole messages: floor(share + credit), within every bound, in rotated
  // order. Returns the capacity left.
  std::uint64_t giveWhole(std::uint64_t capacity);
  // Work conservation: what rounding left over goes one message at a time
  // to the campaigns owed the most (largest share + credit - given), ties
  // in rotated order. Each pass gives at most one per campaign; rounding
  // leaves less than two per campaign, so passes are few.
  void giveRemainder(std::uint64_t left);
  // Takes the tokens from the campaigns' limiters and publishes the grants.
  void settleCampaigns(MonoTime now);
  // Takes what every rank was granted from the providers' limiters.
  void settleProviders(MonoTime now);
  // One rank's share of a tick (all campaigns when `rank` is nullopt): its
  // candidates take what they can of `capacity` and of their providers'
  // tokens left by the ranks before. Returns the capacity left.
  std::uint64_t serve(MonoTime now, std::uint64_t capacity, std::size_t start, std::optional<std::uint32_t> rank);
  std::span<const Grant> tick(MonoTime now, std::uint64_t capacity);
};

}  // namespace pacer
