// The time-slicing scheduler: each tick it shares the worker's dispatch
// capacity among the campaigns that have work, by weight, and takes the
// matching tokens from each campaign's limiter and its provider's limiter.
//
//  - Work-conserving: a share a campaign cannot use (no tokens, not enough
//    backlog, provider out of tokens) goes to the others in the same tick.
//  - Weighted max-min fair within a tick (water-filling), and fair over ticks:
//    each campaign carries the fraction of a message it was owed or given extra
//    (its credit, within [-1, 1]) into the next tick, and the messages that
//    rounding leaves over go to the campaigns owed the most, ties broken by a
//    starting campaign that rotates every tick, so no campaign is favoured.
//  - Cost per tick is proportional to the *active* campaigns (registered,
//    not paused, with backlog), not to all registered ones.
//  - Strict priority between classes: each campaign has a priority rank (0
//    first). Each tick the ranks are served in order: rank 0's campaigns
//    share the capacity and their providers' tokens as above, and what they
//    leave goes to rank 1, and so on. Within a rank, weights and fairness as
//    above. With one rank (the default) a tick is exactly the fair share.
//
// The scheduler does not hold messages: the caller tells it how much work each
// campaign has (addBacklog) and dispatches what tick() grants. Pure: time is
// an argument; nothing here reads a clock or does I/O.
//
// Thread-safety: none; one thread owns a Scheduler. tick() does not throw and,
// after the first ticks have sized its scratch space, does not allocate.
// Control calls (add, remove, pause, resume, set*) are for between ticks and
// throw SchedulerError for unknown ids or invalid settings.
#pragma once

#include "pacer/error.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <vector>

#include "pacer/rate_limiter.h"

namespace pacer {

using CampaignId = std::uint32_t;
using ProviderId = std::uint32_t;
inline constexpr ProviderId kNoProvider = UINT32_MAX;
// tick() capacity meaning "the sink takes whatever is granted".
inline constexpr std::uint64_t kUnlimitedCapacity = UINT64_MAX;

struct CampaignSpec {
  std::optional<RateLimit> limit;  // nullopt: no campaign limit
  double weight = 1.0;             // > 0; shares are proportional to weight
  ProviderId provider = kNoProvider;
  std::uint32_t priority = 0;  // rank of its class, < kMaxPriorityRanks; 0 is served first
};

// Priority ranks a scheduler tells apart (classes beyond are refused).
inline constexpr std::uint32_t kMaxPriorityRanks = 8;

struct ProviderSpec {
  std::optional<RateLimit> limit;  // nullopt: no provider limit
};

struct Grant {
  CampaignId campaign;
  std::uint64_t count;  // messages the caller may dispatch now
};

struct SchedulerOptions {
  LimiterOptions limiter;  // algorithm and window for every limiter it builds
};

class SchedulerError : public InvalidError {
 public:
  using InvalidError::InvalidError;
};

class Scheduler {
 public:
  explicit Scheduler(SchedulerOptions options);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  ProviderId addProvider(const ProviderSpec& spec, MonoTime now);
  void setProviderLimit(ProviderId id, std::optional<RateLimit> limit, MonoTime now);

  // Ids of removed campaigns are reused; do not use an id after removing it.
  CampaignId addCampaign(const CampaignSpec& spec, MonoTime now);
  void removeCampaign(CampaignId id);
  void pause(CampaignId id);
  void resume(CampaignId id);
  // New rate/burst from `now` on; what the limiter has accumulated is kept.
  // Switching between limited and unlimited builds a fresh limiter.
  void setLimit(CampaignId id, std::optional<RateLimit> limit, MonoTime now);
  void setWeight(CampaignId id, double weight);
  // A new priority rank (< kMaxPriorityRanks) from the next tick.
  void setPriority(CampaignId id, std::uint32_t rank);
  std::uint32_t priorityOf(CampaignId id) const;

  // Work waiting for a campaign, in messages.
  void addBacklog(CampaignId id, std::uint64_t n);
  // Drops up to n messages of backlog (the caller cancelled or lost them);
  // returns how many were dropped.
  std::uint64_t dropBacklog(CampaignId id, std::uint64_t n);
  std::uint64_t backlog(CampaignId id) const;
  bool paused(CampaignId id) const;
  // The campaign's limit in force; nullopt when it has none.
  std::optional<RateLimit> limitOf(CampaignId id) const;
  // For inspection (tests, metrics): the limiters themselves, null when
  // unlimited. Taking tokens through them goes around the scheduler.
  RateLimitingInterface* limiterOf(CampaignId id);
  RateLimitingInterface* providerLimiterOf(ProviderId id);
  // Replaces the campaign's limiter with one the caller built (a quota lease,
  // see quota_lease.h); null makes it unlimited. setLimit() with a limit then
  // goes to this limiter's setLimit(). Between ticks only.
  void setLimiter(CampaignId id, RateLimitingInterfacePtr limiter);
  // Campaigns with work right now (registered, not paused, backlog > 0), in
  // no particular order. Valid until the next non-const call.
  std::span<const CampaignId> activeCampaigns() const noexcept;

  // Shares up to `capacity` messages among active campaigns at `now`. The
  // returned grants stay valid until the next call to any non-const method.
  std::span<const Grant> tick(MonoTime now, std::uint64_t capacity) noexcept;

  std::size_t campaignCount() const noexcept;
  std::size_t activeCount() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pacer
