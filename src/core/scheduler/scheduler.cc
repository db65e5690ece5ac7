#include "pacer/scheduler.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace pacer {
namespace {

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

void checkRank(std::uint32_t rank) {
  if (rank >= kMaxPriorityRanks)
    throw SchedulerError(fmt::format("priority rank must be below {}, got {}", kMaxPriorityRanks, rank));
}

void checkWeight(double w) {
  if (!std::isfinite(w) || w <= 0.0) throw SchedulerError(fmt::format("weight must be a finite number > 0, got {}", w));
}

}  // namespace

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

  void waterFill(double capacity) {
    double left = capacity;
    for (;;) {
      double w = 0.0;
      for (const Candidate& c : cands)
        if (c.open) w += c.weight;
      if (w <= 0.0) return;
      const double level = left / w;  // may be +inf
      // 1. Does a provider bind at this level? Then its campaigns share what
      //    it has left, and leave the outer fill for good (levels only rise).
      for (ProviderId p : touched) {
        ProviderSlot& ps = providers[p];
        ps.demand = 0.0;
        ps.weight_open = 0.0;
      }
      for (const Candidate& c : cands) {
        if (!c.open || c.provider == kNoProvider) continue;
        ProviderSlot& ps = providers[c.provider];
        ps.demand += std::min(static_cast<double>(c.cap), level * c.weight);
      }
      bool bound = false;
      for (ProviderId p : touched) {
        ProviderSlot& ps = providers[p];
        if (ps.demand > ps.real_left) {
          bound = true;
          const double budget = ps.real_left;
          fillProvider(p, budget);
          left -= budget;
          ps.real_left = 0.0;
        }
      }
      if (bound) continue;
      // 2. Campaigns whose own cap is below their share take their cap.
      bool capped = false;
      for (Candidate& c : cands) {
        if (c.open && static_cast<double>(c.cap) <= level * c.weight) {
          c.share = static_cast<double>(c.cap);
          c.open = false;
          left -= c.share;
          if (c.provider != kNoProvider) providers[c.provider].real_left -= c.share;
          capped = true;
        }
      }
      if (capped) continue;
      // 3. Nobody binds: everyone open gets level * weight.
      for (Candidate& c : cands) {
        if (c.open) {
          c.share = level * c.weight;
          c.open = false;
        }
      }
      return;
    }
  }

  // Water-fill `budget` among the open candidates of provider p.
  void fillProvider(ProviderId p, double budget) {
    const std::vector<std::uint32_t>& members = providers[p].members;
    for (;;) {
      double w = 0.0;
      for (std::uint32_t i : members)
        if (cands[i].open) w += cands[i].weight;
      if (w <= 0.0) return;
      const double level = budget / w;
      bool capped = false;
      for (std::uint32_t i : members) {
        Candidate& c = cands[i];
        if (c.open && static_cast<double>(c.cap) <= level * c.weight) {
          c.share = static_cast<double>(c.cap);
          c.open = false;
          budget -= c.share;
          capped = true;
        }
      }
      if (!capped) {
        for (std::uint32_t i : members) {
          Candidate& c = cands[i];
          if (c.open) {
            c.share = level * c.weight;
            c.open = false;
          }
        }
        return;
      }
    }
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

  // What campaign `id` could take right now, within its backlog, its
  // limiter and its provider's; a candidate when above 0.
  [[gnu::always_inline]] void gather(CampaignId id, MonoTime now, std::uint64_t capacity) {
    CampaignSlot& c = campaigns[id];
    std::uint64_t cap = std::min(c.backlog, capacity);
    if (c.limiter) cap = c.limiter->available(now, cap);
    if (cap == 0) return;
    if (c.provider != kNoProvider) {
      ProviderSlot& ps = providers[c.provider];
      if (ps.stamp != stamp) {
        ps.stamp = stamp;
        ps.available = ps.limiter ? ps.limiter->available(now, capacity) : UINT64_MAX;
        ps.granted = 0;
        ps.real_left = ps.limiter ? static_cast<double>(ps.available) : kInf;
        ps.members.clear();
        touched.push_back(c.provider);
      }
      const std::uint64_t room = ps.available - ps.granted;  // what the ranks before left
      if (room == 0) return;
      cap = std::min(cap, room);
      ps.members.push_back(static_cast<std::uint32_t>(cands.size()));
    }
    cands.push_back(Candidate{id, c.provider, c.weight, cap, 0.0, true, 0});
  }

  // Whole messages: floor(share + credit), within every bound, in rotated
  // order. Returns the capacity left.
  std::uint64_t giveWhole(std::uint64_t capacity) {
    std::uint64_t left = capacity;
    for (Candidate& c : cands) {
      const double target = c.share + campaigns[c.id].credit;
      std::uint64_t whole = c.cap;
      if (target < static_cast<double>(c.cap)) whole = target > 0.0 ? static_cast<std::uint64_t>(target) : 0;
      whole = std::min({whole, c.cap, providerRoom(c.provider), left});
      give(c, whole, left);
    }
    return left;
  }

  // Work conservation: what rounding left over goes one message at a time
  // to the campaigns owed the most (largest share + credit - given), ties
  // in rotated order. Each pass gives at most one per campaign; rounding
  // leaves less than two per campaign, so passes are few.
  void giveRemainder(std::uint64_t left) {
    while (left > 0) {
      // What each eligible campaign is owed, in millionths of a message:
      // values equal up to rounding noise become equal keys, a tie that the
      // rotated position (the second member) then breaks.
      order.clear();
      for (std::uint32_t i = 0; i < cands.size(); ++i) {
        const Candidate& c = cands[i];
        if (c.give >= c.cap || providerRoom(c.provider) == 0) continue;
        const double owed = c.share + campaigns[c.id].credit - static_cast<double>(c.give);
        order.emplace_back(-std::llround(std::clamp(owed, -1e12, 1e12) * 1e6), i);
      }
      if (order.empty()) return;
      // Only the `left` most owed need an order: O(n) to find them.
      const std::size_t head = std::min<std::size_t>(order.size(), left);
      if (head < order.size()) std::nth_element(order.begin(), order.begin() + head, order.end());
      std::sort(order.begin(), order.begin() + head);
      bool progress = false;
      for (const auto& [key, i] : order) {
        if (left == 0) break;
        Candidate& c = cands[i];
        if (c.give < c.cap && providerRoom(c.provider) > 0) {
          give(c, 1, left);
          progress = true;
        }
      }
      if (!progress) return;
    }
  }

  // Takes the tokens from the campaigns' limiters and publishes the grants.
  void settleCampaigns(MonoTime now) {
    for (Candidate& c : cands) {
      CampaignSlot& slot = campaigns[c.id];
      if (c.give > 0 && slot.limiter && !slot.limiter->tryAcquire(c.give, now)) {
        // The limiter disagrees with its own available() (a lease that
        // expired, a log that could not grow): grant only what it gives.
        std::uint64_t got = slot.limiter->acquireUpTo(c.give, now);
        while (got < c.give && slot.limiter->canDoWork(now)) ++got;
        if (c.provider != kNoProvider) providers[c.provider].granted -= c.give - got;
        c.give = got;
      }
      slot.credit = std::clamp(c.share + slot.credit - static_cast<double>(c.give), -1.0, 1.0);
      if (c.give == 0) continue;
      slot.backlog -= c.give;
      if (slot.backlog == 0) drained.push_back(c.id);
      grants.push_back(Grant{c.id, c.give});
    }
  }

  // Takes what every rank was granted from the providers' limiters.
  void settleProviders(MonoTime now) {
    for (ProviderId p : touched) {
      ProviderSlot& ps = providers[p];
      if (ps.limiter && ps.granted > 0) ps.limiter->tryAcquire(ps.granted, now);
    }
    for (CampaignId id : drained) refreshActive(id);
  }

  // One rank's share of a tick (all campaigns when `rank` is nullopt): its
  // candidates take what they can of `capacity` and of their providers'
  // tokens left by the ranks before. Returns the capacity left.
  std::uint64_t serve(MonoTime now, std::uint64_t capacity, std::size_t start, std::optional<std::uint32_t> rank) {
    cands.clear();
    for (ProviderId p : touched) {  // what the ranks before left of each provider
      ProviderSlot& ps = providers[p];
      ps.members.clear();
      ps.real_left = ps.limiter ? static_cast<double>(ps.available - ps.granted) : kInf;
    }
    const std::size_t n = active.size();
    for (std::size_t k = 0; k < n; ++k) {
      const CampaignId id = active[(start + k) % n];
      if (!rank || campaigns[id].rank == *rank) gather(id, now, capacity);
    }
    if (cands.empty()) return capacity;
    waterFill(capacity == kUnlimitedCapacity ? kInf : static_cast<double>(capacity));
    giveRemainder(giveWhole(capacity));
    settleCampaigns(now);
    if (capacity == kUnlimitedCapacity) return capacity;
    std::uint64_t given = 0;
    for (const Candidate& c : cands) given += c.give;
    return capacity - std::min(given, capacity);
  }

  std::span<const Grant> tick(MonoTime now, std::uint64_t capacity) {
    grants.clear();
    cands.clear();
    touched.clear();
    drained.clear();
    const std::size_t n = active.size();
    if (n == 0 || capacity == 0) return {};
    ++stamp;
    unlimited_tick = capacity == kUnlimitedCapacity;
    // Candidates in rotated order: what each could take right now.
    const std::size_t start = static_cast<std::size_t>(rotation++ % n);
    if (ranks_active <= 1) {
      serve(now, capacity, start, std::nullopt);
    } else {
      std::uint64_t left = capacity;
      for (std::uint32_t r = 0; r < kMaxPriorityRanks && left > 0; ++r)
        if (active_per_rank[r] > 0) left = serve(now, left, start, r);
    }
    settleProviders(now);
    return grants;
  }
};

Scheduler::Scheduler(SchedulerOptions options) : impl_(std::make_unique<Impl>()) { impl_->options = options; }
Scheduler::~Scheduler() = default;

ProviderId Scheduler::addProvider(const ProviderSpec& spec, MonoTime now) {
  ProviderSlot slot;
  slot.limiter = impl_->build(spec.limit, now);
  impl_->providers.push_back(std::move(slot));
  return static_cast<ProviderId>(impl_->providers.size() - 1);
}

void Scheduler::setProviderLimit(ProviderId id, std::optional<RateLimit> limit, MonoTime now) {
  ProviderSlot& ps = impl_->provider(id);
  if (limit && ps.limiter) {
    try {
      validateLimit(*limit, impl_->options.limiter);
    } catch (const InvalidLimitError& e) {
      throw SchedulerError(e.what());
    }
    ps.limiter->setLimit(*limit, now);
  } else {
    ps.limiter = impl_->build(limit, now);
  }
}

CampaignId Scheduler::addCampaign(const CampaignSpec& spec, MonoTime now) {
  checkWeight(spec.weight);
  checkRank(spec.priority);
  if (spec.provider != kNoProvider) impl_->provider(spec.provider);
  CampaignSlot slot;
  slot.alive = true;
  slot.weight = spec.weight;
  slot.provider = spec.provider;
  slot.rank = spec.priority;
  slot.limiter = impl_->build(spec.limit, now);
  CampaignId id;
  if (!impl_->free_ids.empty()) {
    id = impl_->free_ids.back();
    impl_->free_ids.pop_back();
    impl_->campaigns[id] = std::move(slot);
  } else {
    id = static_cast<CampaignId>(impl_->campaigns.size());
    impl_->campaigns.push_back(std::move(slot));
  }
  if (spec.provider != kNoProvider) ++impl_->providers[spec.provider].campaigns;
  ++impl_->alive;
  return id;
}

void Scheduler::removeCampaign(CampaignId id) {
  CampaignSlot& c = impl_->campaign(id);
  c.alive = false;
  impl_->refreshActive(id);
  if (c.provider != kNoProvider) --impl_->providers[c.provider].campaigns;
  c = CampaignSlot{};
  impl_->free_ids.push_back(id);
  --impl_->alive;
}

void Scheduler::pause(CampaignId id) {
  impl_->campaign(id).paused = true;
  impl_->refreshActive(id);
}

void Scheduler::resume(CampaignId id) {
  impl_->campaign(id).paused = false;
  impl_->refreshActive(id);
}

void Scheduler::setLimit(CampaignId id, std::optional<RateLimit> limit, MonoTime now) {
  CampaignSlot& c = impl_->campaign(id);
  if (limit && c.limiter) {
    try {
      validateLimit(*limit, impl_->options.limiter);
    } catch (const InvalidLimitError& e) {
      throw SchedulerError(e.what());
    }
    c.limiter->setLimit(*limit, now);
  } else {
    c.limiter = impl_->build(limit, now);
  }
}

void Scheduler::setWeight(CampaignId id, double weight) {
  checkWeight(weight);
  impl_->campaign(id).weight = weight;
}

void Scheduler::setPriority(CampaignId id, std::uint32_t rank) {
  checkRank(rank);
  CampaignSlot& c = impl_->campaign(id);
  if (c.rank == rank) return;
  const bool active = c.active_pos != kNotActive;
  if (active) impl_->countRank(c.rank, -1);
  c.rank = rank;
  if (active) impl_->countRank(c.rank, +1);
}

std::uint32_t Scheduler::priorityOf(CampaignId id) const { return impl_->campaign(id).rank; }

void Scheduler::addBacklog(CampaignId id, std::uint64_t n) {
  CampaignSlot& c = impl_->campaign(id);
  c.backlog = (UINT64_MAX - c.backlog < n) ? UINT64_MAX : c.backlog + n;
  impl_->refreshActive(id);
}

std::uint64_t Scheduler::dropBacklog(CampaignId id, std::uint64_t n) {
  CampaignSlot& c = impl_->campaign(id);
  const std::uint64_t dropped = std::min(n, c.backlog);
  c.backlog -= dropped;
  impl_->refreshActive(id);
  return dropped;
}

std::uint64_t Scheduler::backlog(CampaignId id) const { return impl_->campaign(id).backlog; }
bool Scheduler::paused(CampaignId id) const { return impl_->campaign(id).paused; }

std::optional<RateLimit> Scheduler::limitOf(CampaignId id) const {
  const CampaignSlot& c = impl_->campaign(id);
  if (!c.limiter) return std::nullopt;
  return c.limiter->limit();
}

RateLimitingInterface* Scheduler::limiterOf(CampaignId id) { return impl_->campaign(id).limiter.get(); }
RateLimitingInterface* Scheduler::providerLimiterOf(ProviderId id) { return impl_->provider(id).limiter.get(); }

void Scheduler::setLimiter(CampaignId id, RateLimitingInterfacePtr limiter) {
  impl_->campaign(id).limiter = std::move(limiter);
}

std::span<const CampaignId> Scheduler::activeCampaigns() const noexcept { return impl_->active; }

std::span<const Grant> Scheduler::tick(MonoTime now, std::uint64_t capacity) noexcept {
  return impl_->tick(now, capacity);
}

std::size_t Scheduler::campaignCount() const noexcept { return impl_->alive; }
std::size_t Scheduler::activeCount() const noexcept { return impl_->active.size(); }

}  // namespace pacer
