// Where one route of a campaign sends its traffic now (failover and prefix
// routes, docs/routes.md): what the worker reports per route, and what the
// state document, the console and `pacerctl top` show. A plain value type.
#pragma once

#include <string>
#include <vector>

namespace pacer {

struct RouteStatus {
  std::vector<std::string> prefixes;  // the prefixes routed to `provider`; empty: the campaign's default route
  std::string provider;               // the provider the route names (the campaign's own for the default route)
  std::string via;                    // the provider taking the route's traffic now
  std::string reason;                 // why `via` is not `provider` ("sms-uk: binds failing"); empty when it is
  bool operator==(const RouteStatus&) const = default;
};

}  // namespace pacer
