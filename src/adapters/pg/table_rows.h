// The campaigns and providers tables as every reader selects them: one
// column list each and one function reading a row, for pacerctl and the
// console (PgControl) and pacerd's directory (pg_directory.cc). Private to
// pacer::pg.
#pragma once

#include <algorithm>
#include <pqxx/pqxx>
#include <string>

#include "pacer/control/values.h"
#include "pacer/ledger/pg_sql.h"

namespace pacer::ledger {

inline constexpr const char* kCampaignColumns =
    "id, name, state, send_rate, burst, weight, coalesce(provider, ''), " PACER_UTC("updated_at") ", total, "
    "coalesce(priority_class, ''), coalesce(quiet_hours, ''), coalesce(time_zone, ''), coalesce(frequency_cap, ''), "
    "cap_policy, coalesce(default_ttl_ms, 0), coalesce(array_to_string(failover, ','), ''), "
    "coalesce(array_to_string(routes, ','), ''), "
    "coalesce(callback_url, '')";
// From "providers p": the count of its campaigns is a subquery on p.id.
inline constexpr const char* kProviderColumns =
    "id, rate, burst, (SELECT count(*) FROM campaigns c WHERE c.provider = p.id), " PACER_UTC("updated_at");

inline control::Limit limitFrom(const pqxx::field& rate, const pqxx::field& burst) {
  control::Limit l;
  if (!rate.is_null()) l.rate = rate.as<double>();
  l.burst = burst.as<double>();
  return l;
}

// A row of SELECT kCampaignColumns FROM campaigns.
inline control::CampaignRow campaignRowFrom(const pqxx::row& r) {
  control::CampaignRow c;
  c.id = r[0].as<std::string>();
  c.name = r[1].as<std::string>();
  c.state = r[2].as<std::string>();
  c.limit = limitFrom(r[3], r[4]);
  c.weight = r[5].as<double>();
  c.provider = r[6].as<std::string>();
  c.updated_at = r[7].as<std::string>();
  if (!r[8].is_null()) c.total = r[8].as<std::int64_t>();
  c.priority_class = r[9].as<std::string>();
  c.quiet_hours = r[10].as<std::string>();
  c.time_zone = r[11].as<std::string>();
  c.frequency_cap = r[12].as<std::string>();
  c.cap_policy = r[13].as<std::string>();
  c.default_ttl_ms = r[14].as<std::int64_t>();
  const std::string failover = r[15].as<std::string>();
  for (std::size_t at = 0; !failover.empty() && at <= failover.size();) {
    const std::size_t comma = std::min(failover.find(',', at), failover.size());
    c.failover.push_back(failover.substr(at, comma - at));
    at = comma + 1;
  }
  // A route written by hand that does not parse is kept as it stands, so
  // that prefixRoutesProblem names it and pacerd skips the row.
  const std::string routes = r[16].as<std::string>();
  for (std::size_t at = 0; !routes.empty() && at <= routes.size();) {
    const std::size_t comma = std::min(routes.find(',', at), routes.size());
    const std::string entry = routes.substr(at, comma - at);
    const std::size_t eq = entry.find('=');
    c.routes.push_back(
        parsePrefixRoute("routes", entry, nullptr)
            .value_or(PrefixRoute{entry.substr(0, eq), eq == std::string::npos ? "" : entry.substr(eq + 1)}));
    at = comma + 1;
  }
  c.callback_url = r[17].as<std::string>();
  return c;
}

// A row of SELECT kProviderColumns FROM providers p.
inline control::ProviderRow providerRowFrom(const pqxx::row& r) {
  control::ProviderRow p;
  p.id = r[0].as<std::string>();
  p.limit = limitFrom(r[1], r[2]);
  p.campaigns = r[3].as<std::int64_t>();
  p.updated_at = r[4].as<std::string>();
  return p;
}

}  // namespace pacer::ledger
