// pacerd's pieces built from its options (daemon.cc wires them): the sinks,
// the global quota, the admin listener with the console, the exit summary.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pacer/admin/admin_server.h"
#include "pacer/admin/metrics.h"
#include "pacer/console/cluster_counts.h"
#include "pacer/console/console_service.h"
#include "pacer/daemon/daemon.h"
#include "pacer/events/callback_worker.h"
#include "pacer/events/outcome_drainer.h"
#include "pacer/frequency_cap_redis.h"
#include "pacer/ingest/kafka_ingest.h"
#include "pacer/logging/logging.h"
#include "pacer/quota.h"
#include "pacer/quota_redis.h"
#include "pacer/sinks/routing_sink.h"
#include "pacer/worker.h"

namespace pacer::worker {

// An SMPP sink among pacerd's sinks (owned by the sink makeSink returns).
struct SmppSinkRef {
  std::string where;     // "sink" or "providers.<id>.sink", as in its log lines
  std::string provider;  // empty for the default sink
  const sink::SmppSinkInterface* sink = nullptr;
  std::size_t window = 0, binds = 0;
};

// The default sink and, with providers.<id>.sink, a routing sink in front of
// it and the providers' own sinks. Throws DaemonConfigError for a bad one.
// `log` gets the SMPP sinks' event lines (binds, refusals); `smpp`, when
// given, the SMPP sinks made.
SinkInterfacePtr makeSink(const DaemonOptions& o, sink::ProviderOfCampaign provider_of, const logging::LoggerPtr& log,
                          std::vector<SmppSinkRef>* smpp = nullptr);

// pacerd's SMPP sinks watched (daemon_smpp.cc): their session figures for
// /metrics, and `event=smpp_window_limits` (a warning) when the measured
// answer time makes window x binds carry less than 2.5 times this worker's
// share of the provider's rate. Not thread-safe: the daemon loop owns it.
class SmppWatch {
 public:
  SmppWatch(std::vector<SmppSinkRef> sinks, logging::LoggerPtr log);
  std::vector<admin::SmppSinkMetrics> metrics() const;
  // At most once a second does anything; `providers` as the core reports them.
  void check(MonoTime now, const std::vector<ProviderStats>& providers);
  // Failover (docs/routes.md): a provider's own SMPP sink that lost its binds
  // and has failed to bind again since is down for `core`
  // (WorkerCore::setProviderDown), up again at its next bind; each change is
  // logged (event=provider_down / provider_up).
  void health(MonoTime now, WorkerCore& core);

 private:
  struct Health {
    std::uint64_t failures_up = 0;  // bind failures + disconnects when last seen bound
    std::uint64_t bind_failures_up = 0;
    std::string down;  // the reason given to the core; empty: up
  };
  std::vector<SmppSinkRef> sinks_;
  logging::LoggerPtr log_;
  std::vector<MonoTime> warned_at_;  // per sink; {} while not limited
  MonoTime next_check_{};
  std::vector<Health> health_;  // per sink, after sinks_
};

// What a message costs in quota units: its SMS segments where the sink that
// takes it is an SMPP one (each segment one token of the campaign's and the
// provider's quota), 1 elsewhere. Null when no sink is an SMPP one.
std::unique_ptr<MessageCostInterface> makeMessageCost(const DaemonOptions& o);

// The Redis quota backend, connected if Redis answers now (if not, the
// leaser runs degraded until it does). Throws DaemonConfigError for a bad node.
QuotaBackendPtr makeQuota(const DaemonOptions& o, const TimeSource* clock, const logging::LoggerPtr& log);

// The recipient rules' pieces: the tz database (read once, shared) and the
// frequency caps' store: Redis (caps.redis, else the first redis node; it
// reconnects by itself), or in this process (caps.redis none, or no Redis:
// per worker only, logged as a warning). Throws DaemonConfigError without tzdata.
struct RecipientRules {
  TimeZoneTablePtr zones;
  FrequencyCapStorePtr caps;
  const RedisFrequencyCapStore* caps_redis = nullptr;  // the same store when it is Redis (its counters)
};
RecipientRules makeRecipientRules(const DaemonOptions& o, const logging::LoggerPtr& log);

// Degraded-mode changes of the global quota, one log line each.
class QuotaLog final : public QuotaObserver {
 public:
  explicit QuotaLog(logging::LoggerPtr log) : log_(std::move(log)) {}
  void onDegraded(std::string_view provider, DegradedMode mode, bool entered) noexcept override;

 private:
  logging::LoggerPtr log_;
};

// The outcome events' drainer when events_topic is set (started), else
// null; `pg` must carry the outbox's worker id (eventsWorkerId).
std::unique_ptr<events::OutcomeDrainer> makeEvents(const DaemonOptions& o, const ledger::PgLedgerOptions& pg,
                                                   const logging::LoggerPtr& log);
// The HTTP callbacks' worker when callbacks are on (started), else null;
// `pg` must carry the callbacks' worker id.
std::unique_ptr<events::CallbackWorker> makeCallbacks(const DaemonOptions& o, const ledger::PgLedgerOptions& pg,
                                                      const logging::LoggerPtr& log);
// Parking when it is on (else null), and its writer thread into `writer`
// when park_writer is on; one owner name for both: either hands back a claim.
ParkingInterfacePtr makeParking(const DaemonOptions& o, const ledger::PgLedgerOptions& pg,
                                ParkWriterInterfacePtr& writer, const logging::LoggerPtr& log);
// The ledger writer thread on a connection of its own, with `pg` (the
// outbox and callback worker ids of the loop's ledger); failures logged.
LedgerWriterInterfacePtr makeLedgerWriter(const ledger::PgLedgerOptions& pg, const logging::LoggerPtr& log);

// events_worker_id, or the host name when it is empty.
std::string eventsWorkerId(const DaemonOptions& o);

// The per-campaign JSON summary pacerd writes at exit (--summary).
// Nothing when `file` is empty; a failed write is logged.
void writeSummary(const std::string& file, MonoTime start, MonoTime end, const WorkerCore& core, bool with_quota,
                  const std::vector<CampaignInfo>& infos, const logging::LoggerPtr& log);

// What the admin listener shows, gathered by the loop.
struct AdminFigures {
  const WorkerCore* core = nullptr;
  const RedisQuotaStats* redis = nullptr;
  std::vector<ingest::PartitionState> partitions;
  bool joined = false;
  bool intake_paused = false;
  std::size_t rows_invalid = 0;
  std::uint64_t rows_skipped = 0;
  std::vector<admin::SmppSinkMetrics> smpp;
  std::optional<events::OutcomeDrainerStats> events;  // nullopt: outcome events off
  std::optional<events::CallbackWorkerStats> callbacks;  // nullopt: callbacks off
};

// pacerd's admin listener (/metrics, /healthz, /readyz, POST /admin/drain and
// /admin/reload) with the console. The listener's thread reads only the
// state published here: a snapshot at most every 250 ms, nothing per message.
class AdminWiring {
 public:
  // Starts listening; `address` is parseListenAddress's. Throws AdminListenError.
  AdminWiring(const DaemonOptions& o, const admin::ListenAddress& address, const TimeSource& clock,
              logging::LoggerPtr log);
  ~AdminWiring();
  // Once per loop turn: the heartbeat and, when due, a snapshot of what
  // `figures` gathers (called only then). True when a drain was asked for
  // (the loop then stops as on SIGTERM).
  bool turn(MonoTime now, const std::function<AdminFigures()>& figures);
  bool takeReloadRequest() noexcept;
  void stopping() noexcept;
  // After the shutdown: a last snapshot, and this worker's last counts to
  // the cluster's (with --redis).
  void finish(MonoTime now, const AdminFigures& figures);

 private:
  void publish(MonoTime now, const AdminFigures& figures);
  admin::AdminState state_;
  std::optional<admin::SnapshotBuilder> snapshots_;
  std::unique_ptr<console::Console> console_;
  std::unique_ptr<console::ClusterCountsPublisher> counts_;  // with --redis
  std::unique_ptr<admin::AdminServer> server_;  // last: stopped before the rest goes
  logging::LoggerPtr log_;
  MonoTime next_snapshot_{};
};

// The --admin-listen address; nullopt when off. Throws DaemonConfigError.
std::optional<admin::ListenAddress> adminAddress(const DaemonOptions& o);

}  // namespace pacer::worker
