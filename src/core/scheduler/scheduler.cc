#include "pacer/scheduler.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "scheduler_impl.h"

namespace pacer {
namespace {

void checkRank(std::uint32_t rank) {
  if (rank >= kMaxPriorityRanks)
    throw SchedulerError(fmt::format("priority rank must be below {}, got {}", kMaxPriorityRanks, rank));
}

void checkWeight(double w) {
  if (!std::isfinite(w) || w <= 0.0) throw SchedulerError(fmt::format("weight must be a finite number > 0, got {}", w));
}

}  // namespace

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
    impl_->validate(*limit);
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
    impl_->validate(*limit);
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
