// The state document (/api/v1/state, docs/api.md) and the verdicts in it:
// what limits each campaign, what this worker holds of it, each provider's
// health. Pure: the figures are arguments.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "pacer/campaign_state.h"
#include "pacer/console/console_model.h"
#include "provider_now.h"

namespace pacer::console {

using detail::circuitOpen;
using detail::orNull;
using detail::providerPaused;
using detail::providerRateNow;
using detail::textOrNull;

LimitedBy limitedBy(const CampaignView& c, const ProviderView* p, double provider_achieved) {
  // Failed over (docs/routes.md): where its traffic goes, and why, says more than any rate.
  if (c.worker)
    if (auto failover = control::failoverLimit(c.worker->route, c.worker->route_reason, c.worker->routes))
      return *failover;
  const control::TopFigures fig = control::figuresOf(c.top);
  control::LimitFacts f;
  f.paused = c.row.state == campaignStateName(CampaignState::kPaused);
  f.own_rate = c.row.limit.rate;
  f.achieved = c.top.achieved;
  f.backlog = fig.backlog.messages;
  f.backlog_lower_bound = fig.backlog.lower_bound;
  f.parked_quiet = c.top.parked_quiet;
  f.parked_capped = c.top.parked_capped;
  if (c.worker) {
    f.retry_waiting = c.worker->retrying;
    f.quiet_waiting = c.worker->quiet_waiting;
    f.cap_waiting = c.worker->cap_waiting;
    f.retries_total = c.cluster_retries ? c.cluster_retries : std::optional<std::uint64_t>(c.worker->retries);
  }
  if (p) {
    f.provider = p->row.id;
    f.provider_rate = providerRateNow(*p);
    f.provider_configured = p->row.limit.rate;
    f.provider_paused = providerPaused(*p);
    f.provider_circuit_open = circuitOpen(*p);
    f.provider_achieved = provider_achieved;
    f.provider_server_errors_per_s = p->server_errors_per_s;
  }
  return control::limitedByOf(f);
}

Held heldOf(const CampaignView& c) {
  Held h;
  if (!c.worker) return h;
  h.reported = c.worker->backlog;
  h.shown = c.worker->in_memory;
  const control::Backlog left = control::figuresOf(c.top).backlog;
  if (!left.lower_bound) {
    const auto room = static_cast<std::uint64_t>(std::max<std::int64_t>(0, left.messages - c.top.parked));
    h.capped = h.shown > room;
    h.shown = std::min(h.shown, room);
  }
  return h;
}

control::ProviderHealth providerHealth(const ProviderView& p) {
  control::HealthFacts f;
  f.provider = p.row.id;
  f.known = p.worker.has_value() || p.shared_effective.has_value() || p.shared_paused_s > 0;
  f.circuit_open = circuitOpen(p);
  f.degraded = p.worker && p.worker->degraded;
  f.paused = providerPaused(p);
  f.configured = p.row.limit.rate;
  f.effective = providerRateNow(p);
  f.server_errors_per_s = p.server_errors_per_s;
  if (p.cluster) {
    f.throttled_total = p.cluster->throttled;
    f.server_errors_total = p.cluster->server_errors;
  } else if (p.worker) {
    f.throttled_total = p.worker->throttled;
    f.server_errors_total = p.worker->server_errors;
  }
  return control::healthOf(f);
}

namespace {

// Every route of a campaign (docs/routes.md): its prefixes ([] for the
// default one), the provider it names, the one taking its traffic, and why
// (null when that is its own).
Json routesJson(const std::vector<RouteStatus>& routes) {
  Json out = Json::array();
  for (const RouteStatus& r : routes)
    out.push_back(
        Json{{"prefixes", r.prefixes}, {"provider", r.provider}, {"via", r.via}, {"reason", textOrNull(r.reason)}});
  return out;
}

Json campaignStateJson(const CampaignView& c, const LimitedBy& why) {
  const control::TopFigures f = control::figuresOf(c.top);
  Json j{{"id", c.row.id},
         {"name", c.row.name},
         {"state", c.row.state},
         {"priority", textOrNull(c.row.priority_class)},
         {"provider", textOrNull(c.row.provider)},
         {"send_rate", orNull(c.row.limit.rate)},
         {"burst", c.row.limit.burst},
         {"weight", c.row.weight},
         {"total", orNull(c.row.total)},
         {"sent", c.top.sent},
         {"failed", c.top.failed},
         {"rejected", c.top.rejected},
         {"invalid_token", c.top.invalid_token},
         {"suppressed", c.top.suppressed},
         {"parked", c.top.parked},
         {"achieved_rate", orNull(c.top.achieved)},
         {"backlog", f.backlog.messages},
         {"backlog_lower_bound", f.backlog.lower_bound},
         {"progress", orNull(f.progress)},
         {"eta_s", orNull(f.eta_s)},
         {"limited_by", Json{{"code", why.code}, {"text", why.text}}}};
  j["failed_pct"] = orNull(control::failedPercentOf(c.top));
  j["receipts"] = c.top.has_receipts ? Json{{"delivered", c.top.delivered},
                                            {"undelivered", c.top.undelivered},
                                            {"pending", c.top.receipts_pending}}
                                     : Json(nullptr);
  j["retries_total"] = orNull(c.cluster_retries);
  const Held held = heldOf(c);
  j["worker"] = c.worker ? Json{{"backlog", held.shown},
                                {"backlog_reported", held.reported},
                                {"backlog_capped", held.capped},
                                {"retrying", c.worker->retrying},
                                {"quiet_waiting", c.worker->quiet_waiting},
                                {"cap_waiting", c.worker->cap_waiting},
                                {"in_flight", c.worker->in_flight},
                                {"retries_total", c.worker->retries},
                                {"achieved_rate", c.worker->achieved_rate},
                                {"route", textOrNull(c.worker->route)},
                                {"route_reason", textOrNull(c.worker->route_reason)},
                                {"routes", routesJson(c.worker->routes)}}
                         : Json(nullptr);
  return j;
}

Json providerStateJson(const ProviderView& p, double achieved) {
  std::string effective_from = "configured";
  if (p.shared_effective)
    effective_from = "redis";
  else if (p.worker && p.worker->effective)
    effective_from = "worker";
  const std::optional<double> rate = providerRateNow(p);
  std::string paused_from;
  if (p.shared_paused_s > 0)
    paused_from = "redis";
  else if (p.worker && p.worker->paused)
    paused_from = "worker";
  Json j{{"id", p.row.id},
         {"rate", orNull(p.row.limit.rate)},
         {"burst", p.row.limit.burst},
         {"campaigns", p.row.campaigns},
         {"effective_rate", orNull(rate)},
         {"effective_from", rate ? Json(effective_from) : Json(nullptr)},
         {"achieved_rate", achieved},
         {"paused", !paused_from.empty()},
         {"paused_s", p.shared_paused_s},
         {"paused_from", textOrNull(paused_from)},
         // The breaker lives in the worker (or in Redis, heard through the
         // worker's leases): only its snapshot knows the state.
         {"circuit", p.worker ? Json(p.worker->circuit_open ? "open" : "closed") : Json(nullptr)},
         // Every worker's answers since the counts began, restarts included.
         {"cluster",
          p.cluster ? Json{{"throttled_total", p.cluster->throttled}, {"server_errors_total", p.cluster->server_errors}}
                    : Json(nullptr)}};
  const control::ProviderHealth health = providerHealth(p);
  j["health"] = Json{{"code", health.code}, {"text", health.text}};
  j["server_errors_per_s"] = orNull(p.server_errors_per_s);
  j["worker"] = p.worker ? Json{{"effective_rate", orNull(p.worker->effective)},
                                {"paused", p.worker->paused},
                                {"degraded", p.worker->degraded},
                                {"throttled_total", p.worker->throttled},
                                {"server_errors_total", p.worker->server_errors},
                                {"circuit_open", p.worker->circuit_open}}
                         : Json(nullptr);
  return j;
}

}  // namespace

Json classesStateJson(const std::vector<std::pair<std::string, std::uint64_t>>& class_queued) {
  Json a = Json::array();
  for (const auto& [name, queued] : class_queued)
    a.push_back(Json{{"class", name == "default" ? Json(nullptr) : Json(name)}, {"worker", {{"queued", queued}}}});
  return a;
}

Json stateJson(const std::string& at_utc, double at_epoch_s, double window_s,
               const std::vector<CampaignView>& campaigns, const std::vector<ProviderView>& providers,
               const Sources& sources) {
  std::map<std::string, double> achieved_by_provider;
  for (const CampaignView& c : campaigns)
    if (!c.row.provider.empty()) achieved_by_provider[c.row.provider] += c.top.achieved.value_or(0);
  std::map<std::string, const ProviderView*> by_id;
  for (const ProviderView& p : providers) by_id[p.row.id] = &p;
  Json cs = Json::array(), ps = Json::array();
  double achieved = 0;
  std::int64_t sent = 0, failed = 0, backlog = 0;
  bool lower_bound = false;
  for (const CampaignView& c : campaigns) {
    const auto it = by_id.find(c.row.provider);
    const ProviderView* p = it == by_id.end() ? nullptr : it->second;
    cs.push_back(campaignStateJson(c, limitedBy(c, p, p ? achieved_by_provider[p->row.id] : 0)));
    const control::TopFigures f = control::figuresOf(c.top);
    achieved += c.top.achieved.value_or(0);
    sent += c.top.sent;
    failed += c.top.failed;
    backlog += f.backlog.messages;
    lower_bound = lower_bound || f.backlog.lower_bound;
  }
  for (const ProviderView& p : providers) ps.push_back(providerStateJson(p, achieved_by_provider[p.row.id]));
  return Json{{"at", at_utc},
              {"at_epoch_s", at_epoch_s},
              {"window_s", window_s},
              {"sources",
               {{"postgres", sources.postgres},
                {"redis", sources.redis},
                {"worker", sources.worker},
                {"version", sources.version},
                {"controls", sources.controls}}},
              {"totals",
               {{"campaigns", campaigns.size()},
                {"achieved_rate", achieved},
                {"sent", sent},
                {"failed", failed},
                {"backlog", backlog},
                {"backlog_lower_bound", lower_bound}}},
              {"campaigns", std::move(cs)},
              {"providers", std::move(ps)}};
}

}  // namespace pacer::console
