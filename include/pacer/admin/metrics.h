// pacerd's metrics as plain data, and their Prometheus text rendering.
//
// The daemon loop builds a MetricsSnapshot from the worker core's stats at
// most every ~250 ms (SnapshotBuilder) and publishes it to AdminState
// (admin_server.h); the admin listener's thread renders the last published
// snapshot with renderMetrics() and never touches the core. Nothing here runs
// per message.
//
// Every metric name, type and label is listed in README "Metrics and health".
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "pacer/quota_lease.h"
#include "pacer/quota_redis.h"
#include "pacer/sinks/smpp_sink.h"
#include "pacer/time.h"
#include "pacer/worker.h"

namespace pacer::admin {

struct CampaignMetrics {
  std::string id;
  std::string provider;  // empty: none
  std::uint64_t sent = 0, failed = 0, rejected = 0, retries = 0;
  std::uint64_t invalid_tokens = 0;  // ledger rows `invalid_token`
  std::uint64_t suppressed = 0;      // ledger rows `suppressed` (a frequency cap refused them)
  std::uint64_t expired = 0;         // ledger rows `expired` (past their deadline, never sent)
  std::uint64_t deferred = 0;        // times a frequency cap made a message wait
  std::uint64_t quiet_waiting = 0;   // waiting in memory for the recipient's quiet hours to end
  std::optional<double> send_rate;  // configured; nullopt: unlimited (the series is left out)
  double achieved_rate = 0;         // sent per second over the last AchievedRateWindow::kSpan
  std::uint64_t backlog = 0;        // queued + waiting to retry + waiting to park + parked by/for this worker
  std::uint64_t in_flight = 0;      // in the sink
  // In memory (the console's held figure: backlog without the parked-row
  // estimate), and of them waiting for a retry and for a deferred frequency cap.
  std::uint64_t in_memory = 0, retrying = 0, cap_waiting = 0;
  // Failover (docs/routes.md): the provider taking its traffic now, and why
  // when it is not the campaign's own (empty then: on its own provider).
  std::string route;
  std::string route_reason;
  std::vector<RouteStatus> routes;  // every route: the default one, then its prefix routes (CampaignStats::routes)
};

struct ProviderMetrics {
  std::string id;
  std::optional<double> send_rate;       // configured (the ceiling); nullopt: unlimited
  std::optional<double> effective_rate;  // the adaptive rate now; nullopt: it does not adapt
  bool paused = false;
  std::uint64_t throttled = 0;  // throttles (429, 503 with Retry-After) this worker got
  bool degraded = false;        // the global quota does not answer for it
  bool circuit_open = false;    // its circuit breaker is open (sustained faults)
  std::uint32_t workers = 1;    // workers sharing it, as last heard from the global quota
  std::uint64_t server_errors = 0;  // 5xx answers this worker got (the console; not rendered)
  double throttle_noise = 0;        // the share of answers this worker's throttle judge takes for noise
  std::uint64_t capacity_cuts = 0;  // throttles judged a ceiling (the rate came down)
  std::uint64_t noise_verdicts = 0;  // judged cuts taken back (the throttles were noise)
  std::uint64_t recipient_throttled = 0;  // throttles of one recipient (APNs TooManyRequests): no pause
  bool dead_token_guard = false;          // its dead-token guard holds (this worker's)
  double dead_token_ratio = 0;            // share of the answers in the guard's window calling a token dead
  std::uint64_t dead_token_trips = 0;     // times the guard started holding
  std::uint64_t dead_tokens_held = 0;     // dead verdicts held (failed rows, not exported)
};

// One SMPP sink's session figures (docs/operations.md "SMPP sessions").
struct SmppSinkMetrics {
  std::string sink;  // as in its log lines: "sink" (the default sink) or "providers.<id>.sink"
  sink::SmppSinkStats stats;
  std::size_t window = 0;  // configured: outstanding submit_sm per bind
  std::size_t binds = 0;   // configured: binds per worker
};

struct PartitionMetrics {
  std::string topic;
  std::int32_t partition = 0;
  std::int64_t committed = -1;       // the offset committed (or read from at assignment); < 0: unknown
  std::int64_t high_watermark = -1;  // librdkafka's cached high watermark; < 0: unknown
};

// What /readyz decides on.
struct Readiness {
  bool joined = false;         // the consumer got its first assignment (joined the group)
  bool store_failing = false;  // the last ledger/parking write failed
  bool quota = false;          // a global quota is configured
  std::size_t providers = 0;   // providers known
  std::size_t degraded_providers = 0;
};

struct MetricsSnapshot {
  // Process
  std::string version;
  std::string sink;
  std::string quota_mode;         // "local" or "redis"
  double start_time_seconds = 0;  // Unix time

  // Campaign and provider rows that failed their checks (skipped, named in the log)
  std::uint64_t directory_rows_invalid = 0;        // now
  std::uint64_t directory_rows_skipped_total = 0;  // every time a refresh or a notice skipped one

  // Intake
  std::uint64_t read = 0, skipped_finished = 0, rejected_without_campaign = 0;
  std::uint64_t buffered_messages = 0, buffered_bytes = 0;
  bool intake_paused = false;

  // Ledger
  std::uint64_t ledger_rows = 0, ledger_writes = 0, ledger_errors = 0;
  std::uint64_t ledger_pending_rows = 0;     // outcomes not yet in the ledger
  std::uint64_t receipts = 0;                // delivery receipts written to the ledger
  std::uint64_t receipts_pending = 0;        // received, not yet written
  double ledger_oldest_pending_seconds = 0;  // age of the oldest of them (0: none)
  std::uint64_t unrecorded = 0;              // in the sink or awaiting the ledger
  bool store_failing = false;
  std::uint64_t parked = 0, unparked = 0;
  std::uint64_t cap_round_trips = 0, cap_faults = 0;  // frequency-cap store calls, and those that failed

  std::vector<CampaignMetrics> campaigns;
  // Messages queued in this worker's memory per priority class (every
  // campaign it knows, by CampaignStats::priority_class; "" is labelled
  // "default"), by class name.
  std::vector<std::pair<std::string, std::uint64_t>> class_queued;
  std::vector<ProviderMetrics> providers;
  std::vector<PartitionMetrics> partitions;
  std::vector<SmppSinkMetrics> smpp;  // one per SMPP sink

  // Outcome events (events.topic set): the outbox and its drainer
  bool has_events = false;
  std::uint64_t events_published = 0, events_failed = 0, events_store_errors = 0;
  std::int64_t events_outbox_depth = 0;  // this worker's outbox rows not yet published
  double events_lag_seconds = 0;         // age of the oldest of them (0: none)

  // HTTP callbacks (callbacks.enabled): the callbacks' outbox and its worker
  bool has_callbacks = false;
  std::uint64_t callbacks_sent = 0, callbacks_failed = 0, callbacks_retried = 0, callbacks_store_errors = 0;
  std::int64_t callbacks_queued = 0;        // events held in memory
  std::int64_t callbacks_outbox_depth = 0;  // this worker's callback rows not yet finished
  double callbacks_lag_seconds = 0;         // age of the oldest of them (0: none)

  // The global quota (quota_mode "redis")
  bool has_quota = false;
  QuotaMetrics quota;
  bool has_redis = false;
  RedisQuotaStats redis;

  Readiness readiness;
};

// The Prometheus text exposition format (version 0.0.4) of `s`, serialized
// by prometheus-cpp's TextSerializer. Pure.
std::string renderMetrics(const MetricsSnapshot& s);

// A count's rate over the last kSpan from samples taken by the caller (a
// ring of at most kSamples). Pure: time is an argument.
class RateWindow {
 public:
  static constexpr Nanos kSpan = std::chrono::seconds(10);
  static constexpr std::size_t kSamples = 64;
  // Records `count` (monotonic) at `now` (not earlier than the last sample).
  void add(MonoTime now, std::uint64_t count) noexcept;
  // Per second between the oldest sample within kSpan of the newest (or the
  // newest older one, so a slow caller still gets a rate) and the newest; 0
  // with fewer than two samples.
  double rate() const noexcept;

 private:
  std::array<std::pair<MonoTime, std::uint64_t>, kSamples> ring_{};
  std::size_t size_ = 0, next_ = 0;
};

// Builds snapshots from what the worker core reports; keeps the rate windows
// between calls. Not thread-safe: the daemon loop owns it.
class SnapshotBuilder {
 public:
  SnapshotBuilder(std::string version, std::string sink, std::string quota_mode, double start_time_seconds);

  // `redis` may be null (no Redis backend). `partitions` as the daemon knows
  // them. `now` is the loop's time of the stats. A campaign is in the
  // snapshot from the first build that sees it with a message (counted,
  // held or in flight) on.
  MetricsSnapshot build(MonoTime now, const WorkerStats& w, const std::vector<CampaignStats>& campaigns,
                        const std::vector<ProviderStats>& providers, const RedisQuotaStats* redis,
                        std::vector<PartitionMetrics> partitions, bool joined, bool intake_paused);

 private:
  std::string version_, sink_, quota_mode_;
  double start_time_seconds_;
  std::unordered_map<std::string, RateWindow> windows_;
};

}  // namespace pacer::admin
