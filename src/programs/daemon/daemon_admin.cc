// pacerd's admin listener (/metrics, /healthz, /readyz, POST /admin/drain and
// /admin/reload) with the operator console (src/adapters/console,
// docs/console.md). The listener's threads read only AdminState; the loop
// publishes a snapshot into it at most every kSnapshotInterval.
#include "daemon_parts.h"

namespace pacer::worker {
namespace {

constexpr std::chrono::milliseconds kSnapshotInterval{250};

spdlog::level::level_enum levelOf(const char* level) {
  const std::string_view l(level);
  if (l == "WARN") return spdlog::level::warn;
  if (l == "ERROR") return spdlog::level::err;
  return spdlog::level::info;
}

double wallSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::vector<admin::PartitionMetrics> partitionMetrics(const std::vector<ingest::PartitionState>& parts) {
  std::vector<admin::PartitionMetrics> out;
  out.reserve(parts.size());
  for (const ingest::PartitionState& p : parts)
    out.push_back(admin::PartitionMetrics{p.partition.topic, p.partition.partition, p.committed, p.high_watermark});
  return out;
}

}  // namespace

std::optional<admin::ListenAddress> adminAddress(const DaemonOptions& o) {
  if (o.admin_listen.empty() || o.admin_listen == "off") return std::nullopt;
  try {
    return admin::parseListenAddress(o.admin_listen);
  } catch (const admin::AdminAddressError& e) {
    throw DaemonConfigError(e.what());
  }
}

AdminWiring::AdminWiring(const DaemonOptions& o, const admin::ListenAddress& address, const TimeSource& clock,
                         logging::LoggerPtr log)
    : log_(std::move(log)) {
  snapshots_.emplace(PACER_VERSION, o.sink, o.redis.empty() ? "local" : "redis", wallSeconds());
  admin::AdminServerOptions ao;
  ao.address = address;
  ao.token = o.admin_token;
  ao.allowed_hosts = o.admin_allowed_hosts;
  ao.reads_need_token = o.admin_reads_need_token;
  ao.scrape_token = o.admin_scrape_token;
  // The listener limits its own per-request lines (refused tokens: one a
  // second per status, with the count held back).
  ao.log = [log = log_](const char* level, const std::string& text) { log->log(levelOf(level), "{}", text); };
  console::ConsoleOptions co;
  co.postgres = o.postgres;
  co.redis = o.redis;
  co.token = o.admin_token;
  co.controls = o.admin_console_controls;
  co.version = PACER_VERSION;
  co.log = ao.log;
  auto events = std::make_shared<admin::EventHub>();
  console_ = std::make_unique<console::Console>(std::move(co), state_, events);
  if (!o.redis.empty()) {
    console::ClusterCountsOptions cc;
    cc.redis = o.redis;
    cc.log = ao.log;
    counts_ = std::make_unique<console::ClusterCountsPublisher>(std::move(cc), state_);
  }
  ao.routes = console_.get();
  ao.events = std::move(events);
  server_ = std::make_unique<admin::AdminServer>(std::move(ao), state_, clock);
  console_->setAddress(server_->boundAddress());
  log_->info("event=console url=http://{}/console/ controls={}", server_->boundAddress(),
             o.admin_console_controls && !o.admin_token.empty() ? "on" : "off");
  log_->info("event=admin_listening address={} state_changes={}", server_->boundAddress(),
             o.admin_token.empty() ? "off" : "token");
  if (!server_->loopback())
    log_->warn(
        "event=admin_not_loopback address={} hint=\"anyone who can reach it reads /metrics; keep it behind a "
        "firewall\"",
        server_->boundAddress());
}

AdminWiring::~AdminWiring() { server_.reset(); }

void AdminWiring::publish(MonoTime now, const AdminFigures& f) {
  admin::MetricsSnapshot snapshot =
      snapshots_->build(now, f.core->stats(), f.core->campaignStats(), f.core->providerStats(now), f.redis,
                        partitionMetrics(f.partitions), f.joined, f.intake_paused);
  snapshot.directory_rows_invalid = f.rows_invalid;
  snapshot.directory_rows_skipped_total = f.rows_skipped;
  snapshot.smpp = f.smpp;
  if (f.events) {
    snapshot.has_events = true;
    snapshot.events_published = f.events->published;
    snapshot.events_failed = f.events->failed;
    snapshot.events_store_errors = f.events->errors;
    snapshot.events_outbox_depth = f.events->depth;
    snapshot.events_lag_seconds = f.events->lag_seconds;
  }
  if (f.callbacks) {
    snapshot.has_callbacks = true;
    snapshot.callbacks_sent = f.callbacks->sent;
    snapshot.callbacks_failed = f.callbacks->failed;
    snapshot.callbacks_retried = f.callbacks->retried;
    snapshot.callbacks_store_errors = f.callbacks->errors;
    snapshot.callbacks_queued = f.callbacks->queued;
    snapshot.callbacks_outbox_depth = f.callbacks->depth;
    snapshot.callbacks_lag_seconds = f.callbacks->lag_seconds;
  }
  state_.publish(std::make_shared<const admin::MetricsSnapshot>(std::move(snapshot)));
}

bool AdminWiring::turn(MonoTime now, const std::function<AdminFigures()>& figures) {
  state_.heartbeat(now);
  if (now >= next_snapshot_) {
    next_snapshot_ = now + kSnapshotInterval;
    publish(now, figures());
  }
  if (!state_.drainRequested()) return false;
  log_->info("event=drain_requested source=admin");
  return true;
}

bool AdminWiring::takeReloadRequest() noexcept { return state_.takeReloadRequest(); }

void AdminWiring::stopping() noexcept { state_.stopping(); }

void AdminWiring::finish(MonoTime now, const AdminFigures& figures) {
  publish(now, figures);
  if (counts_ && !counts_->finish())
    log_->warn(
        "event=cluster_counts_lost hint=\"this worker's last second of 429/5xx/retry counts did not reach "
        "Redis\"");
}

}  // namespace pacer::worker
