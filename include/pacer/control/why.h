// The verdicts `pacerctl top` and the console share: why a campaign goes no
// faster, and how a provider is doing. Each is one function of plain facts,
// so both surfaces say the same words (the console shows `text`, top's table
// a short word for `code`, both JSON documents carry the two). Pure: no
// clock, no I/O; thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pacer/route_status.h"

namespace pacer::control {

// A provider's health, the worst first: breaker_open (its circuit breaker
// is open after sustained faults), degraded (the global quota in Redis does
// not answer for it: each worker runs on its safe share), throttled (paused
// after a 429/503, or its effective rate lowered below the configured one),
// failing (5xx answers now), ok; unknown when nothing is known of it but its
// configuration. `text` says so with the counts behind it.
struct ProviderHealth {
  std::string code;
  std::string text;
};
struct HealthFacts {
  std::string provider;
  bool known = false;  // a worker reported on it (else only its configuration is known: "unknown")
  bool circuit_open = false;
  bool degraded = false;
  bool paused = false;                  // a 429/503 pause in force
  std::optional<double> configured;     // its configured rate; nullopt: unlimited
  std::optional<double> effective;      // the rate its campaigns share now; nullopt: as configured
  std::optional<double> server_errors_per_s;  // 5xx answers per second lately; nullopt: not known
  std::optional<std::uint64_t> throttled_total, server_errors_total;  // counts; nullopt: not known
};
ProviderHealth healthOf(const HealthFacts& f);

// What limits a campaign now: a code (paused, done, provider_breaker,
// provider_paused, campaign_rate, provider_rate, server_errors,
// quiet_hours, frequency_cap, no_input, below_limits, unknown; failover from
// failoverLimit) and a sentence.
struct LimitedBy {
  std::string code;
  std::string text;
};
struct LimitFacts {
  bool paused = false;
  std::optional<double> own_rate;  // send_rate; nullopt: unlimited
  std::optional<double> achieved;
  std::int64_t backlog = 0;
  bool backlog_lower_bound = false;
  std::string provider;                        // empty: none
  std::optional<double> provider_rate;         // what its campaigns share now; nullopt: unlimited or unknown
  std::optional<double> provider_configured;   // its configured rate
  bool provider_paused = false;
  bool provider_circuit_open = false;          // its circuit breaker is open (sustained faults)
  double provider_achieved = 0;                // its campaigns together
  // A worker's view of the campaign (nullopt: no worker reported): its
  // messages waiting for a retry, for their recipients' quiet hours to end,
  // and for a frequency cap (deferred).
  std::optional<std::uint64_t> retry_waiting, quiet_waiting, cap_waiting;
  // The cluster's view, from PostgreSQL (known without a worker): its parked
  // rows waiting there for quiet hours to end and for a deferred frequency
  // cap (a wait longer than park_wait_after is parked, not kept in memory).
  std::int64_t parked_quiet = 0, parked_capped = 0;
  std::optional<std::uint64_t> retries_total;  // retries of its messages (every worker's when known)
  // Every worker's retries of its messages per second lately, from the
  // cluster's counts in Redis (nullopt: not known): what says it is retrying
  // when no worker's waiting messages are known (top without --admin).
  std::optional<double> retries_per_s;
  std::optional<double> provider_server_errors_per_s;  // its provider's 5xx answers per second lately
};
// The first that holds, in this order: paused, done, provider_breaker,
// provider_paused, a send_rate of 0, [with an achieved rate] campaign_rate
// (at >= 90% of its send_rate), provider_rate (its provider's campaigns at
// >= 90% of the rate they share), then server_errors (messages waiting for a
// retry, or retries lately, while its provider answers 5xx), quiet_hours (in a worker's memory
// or parked), frequency_cap (likewise), unknown
// (no achieved rate yet), no_input, below_limits.
LimitedBy limitedByOf(const LimitFacts& f);

// A campaign with a route failed over (docs/routes.md), nullopt when none
// is: code "failover", and a text per route failed over, joined by " | ":
// the default one (`route` taking its traffic, `reason` why: not empty when
// failed over) "via sms-b: sms-a: binds failing", a prefix route of `routes`
// "route 44 -> sms-uk; failover to sms-b: sms-uk: binds failing" (the
// default route's entry of `routes`, without prefixes, is left to `route`).
std::optional<LimitedBy> failoverLimit(const std::string& route, const std::string& reason,
                                       const std::vector<RouteStatus>& routes = {});

// A code of limitedByOf() or healthOf() in a word or two, for top's narrow
// columns ("own rate", "5xx retries", "breaker open", ...; "-" for unknown).
std::string shortWord(const std::string& code);

}  // namespace pacer::control
