// pacerd's loop: a librdkafka consumer group feeding WorkerCore, PostgreSQL
// for campaigns, the ledger and parking, and one sink. The loop runs on the
// calling thread until `stop` turns true (SIGTERM/SIGINT in pacerd), or until
// the work runs out when exit_when_idle is set (demos, benchmarks).
#pragma once

#include "pacer/error.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "pacer/worker.h"
#include "pacer/sinks/http_sink.h"
#include "pacer/sinks/push_sink.h"
#include "pacer/sinks/sink_registry.h"
#include "pacer/sinks/smpp_sink.h"

namespace pacer::worker {

// A setting pacerd cannot work with; the message names it.
class DaemonConfigError : public InvalidError {
 public:
  using InvalidError::InvalidError;
};

// A provider's own sink (providers.<id>.sink): the settings of the default
// sink with the provider's overrides (pacer/sinks/sink_registry.h).
using ProviderSinkOptions = sink::SinkSettings;

// The default sink's settings (sink.*) are the SinkSettings it is made of.
struct DaemonOptions : sink::SinkSettings {
  // Kafka
  std::string brokers;                  // bootstrap.servers
  std::vector<std::string> topics;      // topics to consume
  std::string group = "pacer";          // group.id
  std::string assignment = "range";     // partition.assignment.strategy: range, roundrobin, cooperative-sticky
  int session_timeout_ms = 10000;
  std::map<std::string, std::string> kafka;  // any other consumer property

  // PostgreSQL
  std::string postgres;                 // libpq conninfo
  bool migrate = true;                  // apply migrations at start

  // Sink: the default one is the SinkSettings above (sink.kind, sink.in_flight,
  // each kind's own keys). Providers with a sink of their own: their
  // campaigns' messages go there, every other message through the default.
  std::map<std::string, ProviderSinkOptions> provider_sinks;

  // The global quota on Redis: "HOST:PORT" nodes (empty: local limits only,
  // so N workers send up to N x each rate). With cluster, any nodes of a
  // Redis Cluster. The lease and degraded-mode settings are worker.lease and
  // worker.degraded.
  std::vector<std::string> redis;
  bool redis_cluster = false;
  std::chrono::milliseconds redis_timeout{50};  // connect and command timeout
  // Frequency caps' Redis, "HOST:PORT"; empty: the quota's `redis` (all of
  // them as cluster seeds with redis_cluster, else the first); "none" (or
  // empty without `redis`): an in-process store, which holds per worker only.
  // caps_cluster: caps_redis is a node of a Redis Cluster. The class caps and
  // their policy are worker.class_caps and worker.class_cap_policy; quiet
  // hours need only the system's tzdata.
  std::string caps_redis;
  bool caps_cluster = false;

  WorkerOptions worker;
  // Ledger writes on a thread with its own PostgreSQL connection
  // (WorkerOptions::ledger_writer; ledger.writer thread); false (inline): on
  // the loop's thread, which then waits on every commit.
  bool ledger_writer = true;
  bool parking = true;
  // Park writes and the unclaimed scan on a thread with its own PostgreSQL
  // connection (WorkerOptions::park_writer); off: on the loop's thread.
  bool park_writer = true;
  std::chrono::seconds parking_lease{60};

  // Outcome events (docs/configuration.md "Outcome events"): every ledger
  // change also goes to an outbox table in the same statement and is
  // published on events_topic. Empty topic: off, and no outbox rows.
  std::string events_topic;
  std::string events_brokers;      // empty: `brokers`
  std::string events_worker_id;    // whose outbox rows these are; empty: the host name
  std::size_t events_batch = 1000;                 // rows per read, produce and delete
  std::size_t events_in_flight = 4;                // batches produced and not yet acknowledged, at most
  std::chrono::milliseconds events_poll{20};       // an empty outbox is read again after this
  std::chrono::milliseconds events_prune_interval{5000};  // published outbox rows are deleted in bulk this often
  std::map<std::string, std::string> events_kafka;  // any other producer property
  // HTTP callbacks (docs/callbacks.md): each ledger change of a campaign with
  // a callback URL is POSTed to it from a callbacks' outbox (schema 14),
  // under events_worker_id (or the host name). Off: no such rows.
  bool callbacks = true;
  std::size_t callbacks_queue = 1000;     // events held in memory at most
  std::size_t callbacks_concurrency = 8;  // POSTs in flight at once
  int callbacks_max_attempts = 5;         // POSTs per event, the first included
  std::chrono::milliseconds callbacks_timeout{5000};
  std::chrono::milliseconds callbacks_backoff{1000};  // before the second POST; doubles
  std::chrono::milliseconds callbacks_max_backoff{60000};

  std::chrono::milliseconds tick{5};                 // a scheduler tick at least this often
  std::chrono::milliseconds commit_interval{1000};   // offsets committed at least this often
  std::chrono::milliseconds refresh_interval{1000};  // campaigns and providers re-read
  std::chrono::milliseconds shutdown_deadline{10000};
  std::chrono::milliseconds stats_interval{0};       // a stats line on the log; 0: none
  // > 0: exit once every assigned partition is at its end and nothing is
  // left to do for this long (demos and benchmarks).
  std::chrono::milliseconds exit_when_idle{0};
  std::string summary_file;                          // per-campaign JSON summary at exit; empty: none
  // The admin listener (README "Metrics and health"): /metrics, /healthz,
  // /readyz, POST /admin/drain. "HOST:PORT" (port 0: any free port, logged
  // as event=admin_listening); "" or "off": none. admin_token guards state
  // changes (empty: they answer 403); it is never logged.
  std::string admin_listen = "127.0.0.1:9464";
  std::string admin_token;
  // The console (docs/console.md) on the admin listener may pause, resume,
  // cancel and set rates (with the token); false: read-only (403).
  bool admin_console_controls = false;
  // Host names the admin listener answers besides IP literals and localhost
  // (docs/api.md "Listener hardening"); others get 403.
  std::vector<std::string> admin_allowed_hosts;
  // Reads (/api/, the event stream, /metrics) need the admin token, or for
  // /metrics the scrape token; without: 401.
  bool admin_reads_need_token = false;
  std::string admin_scrape_token;  // never logged
  std::FILE* log = stderr;  // null: no log
  bool log_json = false;     // logging.format: json (one JSON object per line) instead of text
};

// The default sink's settings as a provider's sink takes them.
inline ProviderSinkOptions defaultSinkOptions(const DaemonOptions& o) { return o; }

// A configuration reload (SIGHUP in pacerd). The signal handler only sets
// `requested`; the loop checks it once per turn and calls `reload`, which
// re-reads and checks the configuration and returns the options to run with
// now: the current ones with the keys that can change live taken from the new.
// It throws DaemonConfigError for a configuration it refuses; pacerd then
// logs `event=reload_failed` and keeps the old one.
struct ReloadResult {
  DaemonOptions options;
  std::vector<std::string> changed;        // applied keys ("limits.max_attempts")
  std::vector<std::string> needs_restart;  // changed keys kept as they were until a restart
};
struct ReloadHook {
  std::atomic<bool>* requested = nullptr;  // null: no reloads
  std::function<ReloadResult()> reload;
};

// Runs until stopped. Returns the process exit code (0 on a clean stop).
// Throws DaemonConfigError for bad options before anything starts.
int runDaemon(const DaemonOptions& options, const std::atomic<bool>& stop, ReloadHook reload = {});

}  // namespace pacer::worker
