#include "pacer/control/json_docs.h"

#include <cmath>

#include "pacer/validation.h"

namespace pacer::control {
namespace {

// A number JSON can carry, or its name as a string ("NaN", "Infinity"): never
// null, which would read as "unlimited" or "none".
Json numberJson(double v) { return std::isfinite(v) ? Json(v) : Json(validation::numberText(v)); }
Json rateJson(const std::optional<double>& r) { return r ? numberJson(*r) : Json(nullptr); }
Json problemJson(bool usable, const std::string& problem) { return usable ? Json(nullptr) : Json(problem); }
Json textOrNull(const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); }
// ["44=sms-uk", "1=sms-us"]: each route as pacerctl --routes takes it.
Json routesJson(const std::vector<PrefixRoute>& routes) {
  Json out = Json::array();
  for (const PrefixRoute& r : routes) out.push_back(formatPrefixRoute(r));
  return out;
}

template <typename Row>
Json change(std::string_view kind, std::string_view what, const Change<Row>& c, Json (*toJson)(const Row&)) {
  Json j{{"change", what}, {"changed", c.changed}};
  j[std::string(kind)] = toJson(c.after);
  j["previous"] = toJson(c.before);
  return j;
}

}  // namespace

Json campaignJson(const CampaignRow& c) {
  std::string problem;
  const bool usable = campaignInfoOf(c, &problem).has_value();
  return Json{{"id", c.id},
              {"name", c.name},
              {"state", c.state},
              {"send_rate", rateJson(c.limit.rate)},
              {"burst", numberJson(c.limit.burst)},
              {"weight", numberJson(c.weight)},
              {"provider", textOrNull(c.provider)},
              {"updated_at", c.updated_at},
              {"total", c.total ? Json(*c.total) : Json(nullptr)},
              {"priority_class", textOrNull(c.priority_class)},
              {"quiet_hours", textOrNull(c.quiet_hours)},
              {"time_zone", textOrNull(c.time_zone)},
              {"frequency_cap", textOrNull(c.frequency_cap)},
              {"cap_policy", c.cap_policy},
              {"default_ttl_ms", c.default_ttl_ms > 0 ? Json(c.default_ttl_ms) : Json(nullptr)},
              {"failover", c.failover},
              {"routes", routesJson(c.routes)},
              {"callback_url", textOrNull(c.callback_url)},
              {"invalid", problemJson(usable, problem)}};
}

Json providerJson(const ProviderRow& p) {
  std::string problem;
  const bool usable = providerInfoOf(p, &problem).has_value();
  return Json{{"id", p.id},
              {"rate", rateJson(p.limit.rate)},
              {"burst", numberJson(p.limit.burst)},
              {"campaigns", p.campaigns},
              {"updated_at", p.updated_at},
              {"invalid", problemJson(usable, problem)}};
}

Json ledgerJson(const LedgerCounts& l) {
  return Json{{"sent", l.sent},
              {"failed", l.failed},
              {"rejected", l.rejected},
              {"invalid_token", l.invalid_token},
              {"suppressed", l.suppressed},
              {"expired", l.expired},
              {"last_recorded_at", textOrNull(l.last_recorded_at)}};
}

Json campaignListJson(const std::vector<CampaignRow>& rows) {
  Json a = Json::array();
  for (const CampaignRow& c : rows) a.push_back(campaignJson(c));
  return a;
}

Json providerListJson(const std::vector<ProviderRow>& rows) {
  Json a = Json::array();
  for (const ProviderRow& p : rows) a.push_back(providerJson(p));
  return a;
}

Json campaignDetailJson(const CampaignDetail& d) {
  Json j = campaignJson(d.campaign);
  j["ledger"] = ledgerJson(d.ledger);
  j["parked"] = d.parked;
  j["receipts"] = {{"delivered", d.receipts.delivered}, {"undelivered", d.receipts.undelivered},
                   {"expired", d.receipts.expired},     {"rejected", d.receipts.rejected},
                   {"unknown", d.receipts.unknown},     {"pending", d.receipts.pending}};
  return j;
}

Json changeJson(std::string_view kind, std::string_view what, const Change<CampaignRow>& c) {
  return change(kind, what, c, &campaignJson);
}

Json changeJson(std::string_view kind, std::string_view what, const Change<ProviderRow>& c) {
  return change(kind, what, c, &providerJson);
}

TopFrame topFrameOf(const TopSnapshot& snap, double window_s) {
  TopFrame f;
  f.at_utc = snap.at_utc;
  f.window_s = window_s;
  for (const TopSnapshot::Campaign& c : snap.campaigns) {
    TopRow r;
    r.id = c.id;
    r.state = c.state;
    r.provider = c.provider;
    r.send_rate = c.send_rate;
    r.total = c.total;
    r.sent = c.sent;
    r.failed = c.failed;
    r.rejected = c.rejected;
    r.invalid_token = c.invalid_token;
    r.suppressed = c.suppressed;
    r.priority_class = c.priority_class;
    r.parked = c.parked;
    r.parked_quiet = c.parked_quiet;
    r.parked_capped = c.parked_capped;
    r.achieved = achievedRate(RateSample{snap.at_epoch_s - window_s, c.sent - c.sent_in_window},
                              RateSample{snap.at_epoch_s, c.sent});
    r.has_receipts = c.has_receipts;
    r.delivered = c.delivered;
    r.undelivered = c.undelivered;
    r.receipts_pending = c.receipts_pending;
    f.rows.push_back(std::move(r));
  }
  for (const TopSnapshot::Provider& p : snap.providers) {
    TopProviderRow pr;
    pr.id = p.id;
    pr.rate = p.rate;
    for (const TopRow& r : f.rows) {
      if (r.provider != p.id) continue;
      ++pr.campaigns;
      pr.achieved += r.achieved.value_or(0);
    }
    f.providers.push_back(std::move(pr));
  }
  fillLimitedBy(f);
  return f;
}

std::optional<LimitedBy> failoverLimitOfState(const Json& worker) {
  const auto text = [](const Json& o, const char* key) {
    const auto it = o.find(key);
    return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  std::vector<RouteStatus> routes;
  if (const auto it = worker.find("routes"); it != worker.end() && it->is_array())
    for (const Json& r : *it) {
      if (!r.is_object()) continue;
      RouteStatus s{{}, text(r, "provider"), text(r, "via"), text(r, "reason")};
      if (const auto p = r.find("prefixes"); p != r.end() && p->is_array())
        for (const Json& x : *p)
          if (x.is_string()) s.prefixes.push_back(x.get<std::string>());
      routes.push_back(std::move(s));
    }
  return failoverLimit(text(worker, "route"), text(worker, "route_reason"), routes);
}

}  // namespace pacer::control
