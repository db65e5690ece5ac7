// WorkerCore's failover (worker_core_impl.h, docs/routes.md): a campaign's
// traffic goes to the first provider of its routes that can take it, and
// comes back to an earlier one as soon as that one can again.
#include <fmt/format.h>

#include "worker_core_impl.h"

namespace pacer {

void WorkerCore::Impl::setRoutes(Campaign* c, const CampaignInfo& info, MonoTime now) {
  c->routes.clear();
  if (Provider* first = provider(info.provider, now)) {
    c->routes.push_back(first);
    for (const std::string& id : info.failover) c->routes.push_back(provider(id, now));
  }
  if (c->routes.size() > 1)
    with_failover.insert(c);
  else
    with_failover.erase(c);
}

std::optional<std::string> WorkerCore::Impl::unusable(const Provider* p, MonoTime now) const {
  if (p->down) return *p->down;
  const bool open =
      leaser && p->qid != UINT32_MAX ? leaser->circuitOpen(p->qid) : p->breaker && p->breaker->isOpen(now);
  if (open) return std::string("circuit breaker open");
  return std::nullopt;
}

WorkerCore::Impl::Provider* WorkerCore::Impl::chooseRoute(const Campaign* c, MonoTime now, std::string& reason) const {
  reason.clear();
  for (Provider* p : c->routes) {
    const std::optional<std::string> why = unusable(p, now);
    if (!why) return p;
    if (!reason.empty()) reason += "; ";
    reason += fmt::format("{}: {}", p->info.id, *why);
  }
  // None can take messages: they wait for the first, as without failover.
  if (!c->routes.empty()) reason = "no provider usable (" + reason + "), waiting for " + c->routes.front()->info.id;
  return c->routes.empty() ? nullptr : c->routes.front();
}

void WorkerCore::Impl::moveCampaign(Campaign* c, Provider* to, const CampaignInfo& info, MonoTime now) {
  if (c->provider) std::erase(c->provider->campaigns, c);
  if (leaser)
    leaser->removeCampaign(c->sid);
  else
    scheduler.removeCampaign(c->sid);
  by_sid[c->sid] = nullptr;
  c->queue.forfeit();
  c->provider = to;
  c->sid = registerCampaign(info, to, now);
  if (by_sid.size() <= c->sid) by_sid.resize(c->sid + 1, nullptr);
  by_sid[c->sid] = c;
  c->queue.attach(scheduler, c->sid);
  if (to) to->campaigns.push_back(c);
  c->sched_paused = false;
}

void WorkerCore::Impl::followRoutes(MonoTime now) {
  std::string reason;
  for (Campaign* c : with_failover) {
    Provider* to = chooseRoute(c, now, reason);
    c->route_reason = reason;
    if (to == c->provider) continue;
    moveCampaign(c, to, c->info, now);
    ++c->stats.route_changes;
    applyPause(c);
  }
}

WorkerCore::Impl::Provider* WorkerCore::Impl::providerOf(Campaign* c, const Item& item) {
  if (item.msg.provider.empty() || (c->provider && c->provider->info.id == item.msg.provider)) return c->provider;
  auto it = providers.find(item.msg.provider);
  return it == providers.end() ? c->provider : it->second.get();
}

void WorkerCore::setProviderDown(const std::string& id, std::optional<std::string> reason, MonoTime now) {
  Impl::Provider* p = impl_->provider(id, now);
  if (p) p->down = std::move(reason);
}

}  // namespace pacer
