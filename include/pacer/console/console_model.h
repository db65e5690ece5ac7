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
#include "pacer/route_status.h"

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
    // backlog: as pacer_campaign_backlog counts it, with this worker's
    // estimate of the parked rows (which every worker finding the same
    // unclaimed rows makes again; heldOf() shows what is not counted twice).
    std::uint64_t backlog = 0, in_flight = 0, retries = 0;
    double achieved_rate = 0;  // over the last 10 s
    std::string route{};       // the provider taking its traffic now (failover, docs/routes.md)
    std::string route_reason{};  // why it is not the campaign's own; empty: it is
    // In this worker's memory: every message it holds but the parked ones
    // (queued, waiting for a retry, to be parked, for quiet hours, for a
    // frequency cap), and of them those waiting for a retry, for quiet
    // hours and for a frequency cap.
    std::uint64_t in_memory = 0, retrying = 0, quiet_waiting = 0, cap_waiting = 0;
    // Every route: the default one, then its prefix routes (CampaignStats::routes).
    std::vector<RouteStatus> routes{};
  };
  std::optional<Worker> worker;
  // Cluster-wide, from the counts every worker adds to Redis (ClusterCounts):
  // retries of its messages by every worker since the counts began, restarts
  // included. nullopt: no Redis, or Redis did not answer.
  std::optional<std::uint64_t> cluster_retries;
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
  // Cluster-wide 429/503 and 5xx answers, every worker's since the counts
  // began (restarts included), from Redis; nullopt: no Redis or no answer.
  struct Cluster {
    std::uint64_t throttled = 0, server_errors = 0;
  };
  std::optional<Cluster> cluster;
  // This worker's 5xx answers per second lately (the newest point of its
  // history); nullopt: not known yet.
  std::optional<double> server_errors_per_s;
};

// What this worker holds of a campaign, as the console shows it. A message
// in memory is in one worker's memory at a time, and parked rows are counted
// once for the cluster, from PostgreSQL (CampaignView::top.parked); a
// worker's own count of parked rows is an estimate every worker makes again,
// so it is left out. With a known total, the figure is capped at what the
// ledger says is left beside the parked rows: no worker's figure, plus the
// parked ones, exceeds what is left (messages read again after a rebalance
// would otherwise be counted twice).
struct Held {
  std::uint64_t shown = 0;     // its messages in memory, capped
  std::uint64_t reported = 0;  // the worker's own count (pacer_campaign_backlog)
  bool capped = false;         // shown < its messages in memory
};
Held heldOf(const CampaignView& c);

// A provider's health verdict (control::healthOf) from what the console knows of it.
control::ProviderHealth providerHealth(const ProviderView& p);

// The counters each worker adds to the cluster's totals in Redis (one hash,
// field -> count): "provider_throttled:ID", "provider_server_errors:ID",
// "campaign_retries:ID". A field name is its kind, a colon, then the id
// as is (ids may hold colons: the kind ends at the first one).
using CountFields = std::map<std::string, std::uint64_t>;
std::string countField(std::string_view kind, std::string_view id);

// What one worker still owes the cluster's totals. Its own counters only grow
// while it runs (they start at 0 with the process), so what grew since the
// last acknowledged write is what to add. Not thread-safe.
class CountDeltas {
 public:
  // The growth of `now` over the last acknowledged counters (fields that did
  // not grow are left out; a counter that went down is taken as new from 0).
  CountFields pending(const CountFields& now) const;
  // The deltas of pending(now) reached Redis: `now` becomes the base.
  void acknowledge(const CountFields& now);

 private:
  CountFields base_;
};

// Why a campaign goes no faster. `code` is stable (docs/api.md), `text` is
// for people.
using LimitedBy = control::LimitedBy;
// control::limitedByOf's codes (or failover), from the cluster's figures,
// this worker's waiting messages and its provider's state and 5xx answers.
// `provider_achieved` is the sum of the achieved rates of every campaign of
// the campaign's provider.
LimitedBy limitedBy(const CampaignView& c, const ProviderView* provider, double provider_achieved);

// One value series over the last kSpanS seconds, downsampled as it is kept:
// one point per kStepS-second bucket (the mean of the values added in it), so
// a series holds at most kSpanS / kStepS + 1 points whatever the refresh rate.
// Unknown values are gaps.
class Series {
 public:
  static constexpr double kSpanS = 900;
  static constexpr double kStepS = 5;
  static constexpr std::size_t kMaxPoints = static_cast<std::size_t>(kSpanS / kStepS) + 1;
  // Adds `v` at `t` (epoch seconds; earlier than the last addition: dropped)
  // and forgets buckets older than t - kSpanS. NaN or infinite: a gap.
  void add(double t, std::optional<double> v);
  // {"t0": the first bucket's start (epoch s), "step": seconds per point,
  // "v": [mean or null...]}: point i covers [t0 + i*step, t0 + (i+1)*step).
  // `merge` > 1 joins that many buckets per point (aligned on multiples of
  // merge * kStepS, so successive documents agree), for long spans of many
  // series. Values are rounded to 2 decimals.
  Json json(std::size_t merge = 1) const;
  bool empty() const { return buckets_.empty(); }
  // The newest bucket's mean; nullopt: none, or a gap.
  std::optional<double> latest() const;
  std::size_t points() const;  // what json(1) would give

 private:
  struct Bucket {
    std::int64_t index = 0;  // floor(t / kStepS)
    double sum = 0;
    int n = 0;  // values in it; 0: a gap
  };
  std::deque<Bucket> buckets_;
  double last_t_ = 0;
};

// The histories the console plots, one refresh's figures at a time.
class Histories {
 public:
  // The history document's bound: at most this many values in all (points
  // times series), and series of at most kMaxCampaigns campaigns (the most
  // recently seen). Over the first, buckets are merged for every series alike.
  static constexpr std::size_t kMaxValues = 60000;
  static constexpr std::size_t kMaxCampaigns = 1000;
  // Records every campaign's configured and achieved rate and every
  // provider's configured and effective rate, pause, and this worker's
  // 429/503 and 5xx answers since the previous call, at `t` (epoch seconds).
  // Campaigns and providers not seen for kSpanS are forgotten.
  void add(double t, const std::vector<CampaignView>& campaigns, const std::vector<ProviderView>& providers);
  // {"span_s", "step_s" (seconds per point in this document), "campaigns":
  // {id: {"send_rate", "achieved_rate"}}, "providers": {id: {"rate",
  // "effective_rate", "paused", "throttled_per_s", "server_errors_per_s"}},
  // "campaigns_left_out": n} with each series as Series::json gives it.
  Json json() const;
  // This worker's 5xx answers per second in the provider's newest bucket
  // (Series::latest); nullopt: not known.
  std::optional<double> serverErrorsPerS(const std::string& provider) const;

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
