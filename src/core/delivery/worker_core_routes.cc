// WorkerCore's failover and prefix routes (worker_core_impl.h,
// docs/routes.md). Failover: a campaign's traffic goes to the first provider
// of its routes that can take it, and comes back to an earlier one as soon
// as that one can again. Prefix routes: each provider a campaign's routes
// name carries its messages through a lane of its own, which fails over to
// the campaign's list as the campaign does.
#include <fmt/format.h>

#include <algorithm>

#include "pacer/error.h"
#include "pacer/validation.h"
#include "worker_core_impl.h"

namespace pacer {

namespace {

// A failover list this worker cannot follow is refused before any change:
// its bounds, and a provider of another protocol family than the campaign's.
void checkFailover(const WorkerOptions& options, const CampaignInfo& info) {
  if (auto why = validation::failoverProblem("failover", info.provider, info.failover)) throw InvalidError(*why);
  if (!options.family_of) return;
  const std::string family = options.family_of(info.provider);
  for (const std::string& id : info.failover)
    if (const std::string other = options.family_of(id); other != family)
      throw InvalidError(fmt::format("failover: provider '{}' speaks {}, campaign's provider '{}' speaks {}", id, other,
                                     info.provider, family));
}

// Prefix routes this worker cannot follow are refused before any change: a
// provider of another protocol family, a burst too small to split.
void checkRoutes(const WorkerOptions& options, const CampaignInfo& info) {
  if (auto why = prefixRoutesProblem("routes", info.provider, info.routes)) throw InvalidError(*why);
  if (info.limit)
    if (auto why = laneBurstProblem("routes", info.limit->burst, 1 + routeProviders(info.provider, info.routes).size()))
      throw InvalidError(*why);
  if (!options.family_of) return;
  const std::string family = info.routes.empty() ? std::string() : options.family_of(info.provider);
  for (const PrefixRoute& r : info.routes)
    if (const std::string other = options.family_of(r.provider); other != family)
      throw InvalidError(fmt::format("routes: prefix {}: provider '{}' speaks {}, campaign's provider '{}' speaks {}",
                                     r.prefix, r.provider, other, info.provider, family));
}

// A lane's failover list: the campaign's, in order, without the lane's own
// provider and any provider whose protocol family is not the lane's (the
// campaign's checks make that none; kept so a lane never changes protocol).
std::vector<std::string> laneFailover(const WorkerOptions& options, const std::vector<std::string>& failover,
                                      const std::string& provider) {
  std::vector<std::string> out;
  const std::string family = options.family_of && !failover.empty() ? options.family_of(provider) : std::string();
  for (const std::string& id : failover)
    if (id != provider && (!options.family_of || options.family_of(id) == family)) out.push_back(id);
  return out;
}

}  // namespace

void WorkerCore::upsertCampaign(const CampaignInfo& info, MonoTime now) {
  Impl& m = *impl_;
  const std::uint32_t rank = priorityRank(m.options, info.priority_class);  // refused before any change
  checkFailover(m.options, info);
  checkRoutes(m.options, info);
  auto it = m.campaigns.find(info.id);
  const bool routes_changed = it == m.campaigns.end() ? !info.routes.empty() : it->second->info.routes != info.routes;
  // Routed, the campaign and each lane have an even share of its rate.
  CampaignInfo share = info;
  const std::size_t lanes = 1 + routeProviders(info.provider, info.routes).size();
  if (share.limit && lanes > 1)
    share.limit = RateLimit{info.limit->rate_per_s / lanes, info.limit->burst / static_cast<double>(lanes)};
  Impl::Campaign* c = m.upsertOne(info.id, share, rank, now);
  c->whole_limit = info.limit;
  m.setLanes(c, share, rank, routes_changed, now);
}

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
  // Without a failover list there is no route to choose: its provider's own
  // state (a breaker, lost binds) says why it waits, not "no provider usable".
  if (c->routes.size() <= 1) return c->routes.empty() ? nullptr : c->routes.front();
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

void WorkerCore::Impl::setLanes(Campaign* c, const CampaignInfo& info, std::uint32_t rank, bool routes_changed,
                                MonoTime now) {
  const std::vector<std::string> wanted = routeProviders(info.provider, info.routes);
  for (Campaign::Lane& l : c->lanes) l.routed = false;
  for (const std::string& id : wanted) {
    auto it = std::find_if(c->lanes.begin(), c->lanes.end(), [&](const Campaign::Lane& l) { return l.provider == id; });
    if (it == c->lanes.end()) it = c->lanes.insert(c->lanes.end(), Campaign::Lane{id, nullptr, false});
    it->routed = true;
  }
  // Every lane follows the campaign (its state, rules, share of the rate
  // and failover list), routed to or not: one no longer routed to still has
  // answers and retries to finish, and its messages take the campaign's state.
  for (Campaign::Lane& l : c->lanes) {
    CampaignInfo lane = info;
    lane.provider = l.provider;
    lane.failover = laneFailover(options, info.failover, l.provider);
    lane.routes.clear();
    l.lane = upsertOne(info.id + '\x1f' + l.provider, lane, rank, now);  // '\x1f': never in a campaign id
    l.lane->parent = c;
  }
  if (!routes_changed) return;
  requeue(c);
  for (Campaign::Lane& l : c->lanes) requeue(l.lane);
}

WorkerCore::Impl::Campaign* WorkerCore::Impl::laneFor(Campaign* c, const Message& m) const {
  Campaign* const root = c->parent ? c->parent : c;
  if (root->lanes.empty()) return root;
  const PrefixRoute* r = matchPrefixRoute(root->info.routes, m.recipient);
  if (!r) return root;
  for (const Campaign::Lane& l : root->lanes)
    if (l.routed && l.provider == r->provider) return l.lane;
  return root;  // a route to the campaign's own provider
}

void WorkerCore::Impl::requeue(Campaign* c) {
  std::vector<Item> moved;
  queued -= c->queue.removeIf([&](Item& item) {
    buffered_bytes -= item.bytes();
    queued_units -= item.cost;
    moved.push_back(std::move(item));
    return true;
  });
  for (Item& item : moved) enqueue(c, std::move(item), false);
}

void WorkerCore::setProviderDown(const std::string& id, std::optional<std::string> reason, MonoTime now) {
  Impl::Provider* p = impl_->provider(id, now);
  if (p) p->down = std::move(reason);
}

}  // namespace pacer
