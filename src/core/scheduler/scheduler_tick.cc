// The scheduler's tick: gather what each active campaign could take, share
// the capacity and the providers' tokens by water-filling (rank by rank),
// hand out whole messages, settle the limiters (scheduler_impl.h).
#include "scheduler_impl.h"

namespace pacer {

void Scheduler::Impl::waterFill(double capacity) {
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
void Scheduler::Impl::fillProvider(ProviderId p, double budget) {
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

// What campaign `id` could take right now, within its backlog, its
// limiter and its provider's; a candidate when above 0.
[[gnu::always_inline]] inline void Scheduler::Impl::gather(CampaignId id, MonoTime now, std::uint64_t capacity) {
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
std::uint64_t Scheduler::Impl::giveWhole(std::uint64_t capacity) {
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
void Scheduler::Impl::giveRemainder(std::uint64_t left) {
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
void Scheduler::Impl::settleCampaigns(MonoTime now) {
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
void Scheduler::Impl::settleProviders(MonoTime now) {
  for (ProviderId p : touched) {
    ProviderSlot& ps = providers[p];
    if (ps.limiter && ps.granted > 0) ps.limiter->tryAcquire(ps.granted, now);
  }
  for (CampaignId id : drained) refreshActive(id);
}

// One rank's share of a tick (all campaigns when `rank` is nullopt): its
// candidates take what they can of `capacity` and of their providers'
// tokens left by the ranks before. Returns the capacity left.
std::uint64_t Scheduler::Impl::serve(MonoTime now, std::uint64_t capacity, std::size_t start,
                                     std::optional<std::uint32_t> rank) {
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

std::span<const Grant> Scheduler::Impl::tick(MonoTime now, std::uint64_t capacity) {
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

}  // namespace pacer
