// The console's pure half: what a campaign and a provider look like to the
// operator (cluster-wide figures from PostgreSQL and Redis, and this worker's
// own), what limits a campaign, the 15-minute histories, the JSON documents
// of /api/v1 (docs/api.md), request paths and control bodies. No I/O, no
// clock: times are arguments. Thread-safety: none needed (values), except
// where a class says otherwise.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pacer/control/json_docs.h"
#include "pacer/control/values.h"

namespace pacer::console {

using control::Json;

// What the console shows of one campaign.
struct CampaignView {
  // Cluster-wide, from PostgreSQL (the same numbers as `pacerctl top`).
  control::CampaignRow row;  // id, name, state, limits, provider, total, priority class and rules
  control::TopRow top;       // sent, failed, rejected, invalid_token, suppressed, parked, achieved over the window
  // This worker's own (from the snapshot the daemon loop publishes); absent
  // when this worker has not had one of its messages.
  struct Worker {
    std::uint64_t backlog = 0, in_flight = 0, retries = 0;
    double achieved_rate = 0;  // over the last 10 s
    std::string route;         // the provider taking its traffic now (failover, docs/routes.md)
    std::string route_reason;  // why it is not the campaign's own; empty: it is
  };
  std::optional<Worker> worker;
};

// What the console shows of one provider.
struct ProviderView {
  control::ProviderRow row;  // cluster-wide: configured rate, burst, campaigns (PostgreSQL)
  // Cluster-wide adaptive state shared through Redis (with --redis): the
  // effective rate and the pause every worker obeys. nullopt: no Redis, or
  // Redis has no state for it (then it runs at its configured rate).
  std::optional<double> shared_effective;
  double shared_paused_s = 0;
  struct Worker {
    std::optional<double> effective;  // this worker's view of the effective rate
    bool paused = false;
    bool degraded = false;            // the global quota does not answer for it
    std::uint64_t throttled = 0;      // 429/503 answers, since start
    std::uint64_t server_errors = 0;  // 5xx answers, since start
    // Its circuit breaker as this worker holds it: the shared one as last
    // heard from the global quota (with --redis), else its own.
    bool circuit_open = false;
  };
  std::optional<Worker> worker;
};

// Why a campaign goes no faster. `code` is stable (docs/api.md), `text` is
// for people.
using LimitedBy = control::LimitedBy;
// paused, done, provider_paused, provider_rate, campaign_rate, no_input,
// below_limits (sending below every configured limit: the sink, the workers
// or the input), unknown (no achieved rate yet). `provider_achieved` is the
// sum of the achieved rates of every campaign of the campaign's provider.
LimitedBy limitedBy(const CampaignView& c, const ProviderView* provider, double provider_achieved);

// One value series over the last kSpanS seconds: (epoch seconds, value);
// null values (unknown) are kept as gaps.
class Series {
 public:
  static constexpr double kSpanS = 900;
  // Appends at `t` (not earlier than the last point; earlier ones are
  // dropped) and forgets points older than t - kSpanS.
  void add(double t, std::optional<double> v);
  Json json() const;  // {"t": [...], "v": [...]} with null for gaps
  bool empty() const { return points_.empty(); }

 private:
  std::deque<std::pair<double, std::optional<double>>> points_;
};

// The histories the console plots, one refresh's figures at a time.
class Histories {
 public:
  // Records every campaign's configured and achieved rate and every
  // provider's configured and effective rate, pause, and this worker's
  // 429/503 and 5xx answers since the previous call, at `t` (epoch seconds).
  // Campaigns and providers not seen for kSpanS are forgotten.
  void add(double t, const std::vector<CampaignView>& campaigns, const std::vector<ProviderView>& providers);
  // {"span_s", "campaigns": {id: {"send_rate", "achieved_rate"}}, "providers":
  // {id: {"rate", "effective_rate", "paused", "throttled", "server_errors"}}}.
  Json json() const;

 private:
  struct CampaignSeries {
    Series send_rate, achieved;
    double last_seen = 0;
  };
  struct ProviderSeries {
    Series rate, effective, paused, throttled, server_errors;
    std::optional<std::uint64_t> last_throttled, last_server_errors;
    double last_seen = 0;
  };
  std::map<std::string, CampaignSeries> campaigns_;
  std::map<std::string, ProviderSeries> providers_;
};

// Where the figures came from, for the state document.
struct Sources {
  std::string postgres = "ok";  // "ok" or the last error
  std::string redis = "off";    // "off" (no --redis), "ok" or the last error
  std::string worker;           // this pacerd's admin address
  std::string version;
  bool controls = false;
};

// The state document's "classes": this worker's messages queued in memory per
// priority class (admin::MetricsSnapshot::class_queued, where the default
// class is "default"), as [{"class" (null: the default class), "worker":
// {"queued"}}], by class.
Json classesStateJson(const std::vector<std::pair<std::string, std::uint64_t>>& class_queued);

// The state document (/api/v1/state and each Server-Sent Event): every live
// campaign and every provider, cluster-wide figures at the top level and this
// worker's under "worker". `at_utc`/`at_epoch_s` are the database's time.
Json stateJson(const std::string& at_utc, double at_epoch_s, double window_s,
               const std::vector<CampaignView>& campaigns, const std::vector<ProviderView>& providers,
               const Sources& sources);

// One Server-Sent Event: "event: NAME", one "data:" line per line of `data`,
// then a blank line.
std::string sseFrame(std::string_view name, std::string_view data);

// %XX-decoding of one path segment; nullopt when malformed or when it decodes
// to a control character (ids have none).
std::optional<std::string> percentDecode(std::string_view text);

// What a request path asks for.
struct Route {
  enum class Kind {
    kNotMine,   // not a console path
    kRedirect,  // to /console/
    kAsset,     // `name` is the asset's path under /console/
    kMeta,
    kState,
    kHistory,
    kTop,
    kCampaigns,
    kProviders,
    kEvents,
    kCampaign,        // GET one campaign: `id`
    kCampaignAction,  // POST: `id`, `action` pause|resume|cancel|rate
    kProviderRate,    // POST: `id`
    kNotFound,        // under /api/: no such endpoint, or a malformed id
  };
  Kind kind = Kind::kNotMine;
  std::string name;  // kAsset
  std::string id;    // decoded
  std::string action;
  const char* allow = "GET, HEAD";  // the methods the path takes
  bool method_ok = true;            // false: 405 with `allow`
};
Route parseRoute(std::string_view method, std::string_view path);

// A control's body: {"rate": number | "unlimited" | null, "burst": number
// (optional)}, checked as pacerctl checks its arguments (default burst when
// none is given). Throws control::InvalidValueError.
control::Limit parseLimitBody(std::string_view body);

// {"error": text} with the HTTP status, for every refused request.
std::string errorJson(std::string_view text);

}  // namespace pacer::console
