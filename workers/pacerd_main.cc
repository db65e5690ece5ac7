// pacerd: the worker daemon. Reads campaign messages from Kafka, paces them
// per campaign and provider, delivers them through one sink, records every
// outcome in the PostgreSQL ledger, and commits offsets only behind the
// ledger. See README "pacerd".
//
//   pacerd --brokers H:P --topic T --postgres CONNINFO [--sink stdout|null|http|kafka] ...
//   pacerd migrate --postgres CONNINFO
// --postgres defaults to $PACER_POSTGRES, as for pacerctl.
#include <fmt/format.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <string>
#include <vector>

#include "ledger/pg_ledger.h"
#include "worker/daemon.h"

namespace {

std::atomic<bool> g_stop{false};

void onSignal(int) { g_stop.store(true); }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"pacerd: paces campaign messages from Kafka to a provider, with a PostgreSQL delivery ledger"};
  pacer::worker::DaemonOptions o;
  std::size_t max_message_bytes = o.worker.decode.max_message_bytes;
  int tick_ms = static_cast<int>(o.tick.count());
  int commit_ms = static_cast<int>(o.commit_interval.count());
  int refresh_ms = static_cast<int>(o.refresh_interval.count());
  int shutdown_ms = static_cast<int>(o.shutdown_deadline.count());
  int stats_ms = 0;
  int idle_ms = 0;
  int lease_s = static_cast<int>(o.parking_lease.count());
  double park_keep_s = 10;
  int ledger_flush_ms = 50;
  std::string parking = "on";
  std::vector<std::string> kafka_props;
  std::vector<std::string> http_headers;
  int http_timeout_ms = static_cast<int>(o.http.total_timeout.count());
  int max_attempts = o.worker.retry.max_attempts;
  int redis_timeout_ms = static_cast<int>(o.redis_timeout.count());
  int live_workers = static_cast<int>(o.worker.lease.live_workers);
  int lease_horizon_ms =
      static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(o.worker.lease.horizon).count());
  std::string degraded = "local-share";
  double adaptive_decrease = o.worker.adaptive.decrease;
  double adaptive_floor = o.worker.adaptive.floor;
  int latency_threshold_ms = 0;

  app.add_option("--brokers", o.brokers, "Kafka bootstrap servers (HOST:PORT,...)");
  app.add_option("--topic", o.topics, "topic to consume (repeatable)");
  app.add_option("--group", o.group, "consumer group id")->capture_default_str();
  app.add_option("--assignment", o.assignment, "partition assignment strategy: range, roundrobin, cooperative-sticky")
      ->capture_default_str();
  app.add_option("--session-timeout-ms", o.session_timeout_ms, "Kafka session.timeout.ms")->capture_default_str();
  app.add_option("--kafka", kafka_props, "any other consumer property, KEY=VALUE (repeatable)");
  app.add_option("--postgres", o.postgres,
                 "libpq connection string or postgresql:// URL for campaigns, providers, ledger and parking "
                 "(default: $PACER_POSTGRES, as pacerctl)")
      ->envname("PACER_POSTGRES");
  app.add_option("--sink", o.sink, "where messages go: stdout, null, http, kafka")->capture_default_str();
  app.add_option("--in-flight", o.sink_in_flight, "messages in the sink at once, at most")->capture_default_str();
  app.add_option("--http-url", o.http.url, "sink http: URL template; may contain {recipient} and {campaign}");
  app.add_option("--http-method", o.http.method, "sink http: method")->capture_default_str();
  app.add_option("--http-content-type", o.http.content_type, "sink http: Content-Type")->capture_default_str();
  app.add_option("--http-header", http_headers, "sink http: static header NAME=VALUE (repeatable; never logged)");
  app.add_option("--http-timeout-ms", http_timeout_ms, "sink http: total timeout per request")->capture_default_str();
  app.add_option("--sink-topic", o.sink_topic, "sink kafka: the outbound topic");
  app.add_option("--sink-brokers", o.sink_brokers, "sink kafka: bootstrap servers (default: --brokers)");
  app.add_option("--redis", o.redis,
                 "global quota on Redis: HOST:PORT (repeatable; cluster seed nodes with --redis-cluster); "
                 "without it each worker applies every rate on its own");
  app.add_flag("--redis-cluster", o.redis_cluster, "the --redis nodes are a Redis Cluster");
  app.add_option("--redis-timeout-ms", redis_timeout_ms, "Redis connect and command timeout")->capture_default_str();
  app.add_option("--live-workers", live_workers, "workers sharing the global quota (lease sizes, degraded share)")
      ->capture_default_str();
  app.add_option("--lease-horizon-ms", lease_horizon_ms, "a full lease is this much of the worker's share")
      ->capture_default_str();
  app.add_option("--quota-degraded", degraded, "when Redis does not answer: local-share or stop")
      ->capture_default_str();
  app.add_option("--adaptive-decrease", adaptive_decrease,
                 "on 429/503 (or a slow answer) a provider's effective rate is multiplied by this, in (0, 1)")
      ->capture_default_str();
  app.add_option("--adaptive-floor", adaptive_floor, "a provider's effective rate never goes below this (msg/s)")
      ->capture_default_str();
  app.add_option("--latency-threshold-ms", latency_threshold_ms,
                 "an answer slower than this lowers the provider's effective rate; 0: latency is not watched")
      ->capture_default_str();
  app.add_option("--max-attempts", max_attempts, "attempts per message for faults (5xx, timeouts) before `failed`")
      ->capture_default_str();
  app.add_option("--max-buffered", o.worker.max_buffered_messages, "messages held in memory, at most")
      ->capture_default_str();
  app.add_option("--max-buffered-bytes", o.worker.max_buffered_bytes, "bytes held in memory, at most")
      ->capture_default_str();
  app.add_option("--max-unrecorded", o.worker.max_unrecorded,
                 "messages sent but not yet in the ledger, at most (the most a crash can send twice)")
      ->capture_default_str();
  app.add_option("--max-message-bytes", max_message_bytes, "larger messages are rejected")->capture_default_str();
  app.add_option("--ledger-batch", o.worker.ledger_batch, "ledger rows per write, at most")->capture_default_str();
  app.add_option("--ledger-flush-ms", ledger_flush_ms, "a ledger row waits at most this long")->capture_default_str();
  app.add_option("--parking", parking, "park the excess of slow campaigns in PostgreSQL: on, off")
      ->capture_default_str();
  app.add_option("--park-keep-s", park_keep_s, "seconds of a campaign's send_rate kept in memory before parking")
      ->capture_default_str();
  app.add_option("--parking-lease-s", lease_s, "a claim on parked messages lasts this long unless renewed")
      ->capture_default_str();
  app.add_option("--tick-ms", tick_ms, "scheduler tick")->capture_default_str();
  app.add_option("--commit-interval-ms", commit_ms, "offset commits at least this often")->capture_default_str();
  app.add_option("--refresh-ms", refresh_ms, "campaigns and providers re-read this often")->capture_default_str();
  app.add_option("--shutdown-deadline-ms", shutdown_ms, "on SIGTERM, finish in-flight work within this")
      ->capture_default_str();
  app.add_option("--stats-interval-ms", stats_ms, "a stats line on stderr this often; 0: none")->capture_default_str();
  app.add_option("--exit-when-idle-ms", idle_ms,
                 "exit once every partition is read to its end and nothing is left to do for this long; 0: never")
      ->capture_default_str();
  app.add_option("--summary", o.summary_file, "write a per-campaign JSON summary here at exit");
  app.add_flag("!--no-migrate", o.migrate, "do not apply schema migrations at start");

  CLI::App* migrate = app.add_subcommand("migrate", "apply the schema migrations and exit");
  std::string migrate_pg;
  migrate->add_option("--postgres", migrate_pg, "libpq connection string or URL (default: $PACER_POSTGRES)")
      ->envname("PACER_POSTGRES")
      ->required();
  CLI11_PARSE(app, argc, argv);

  try {
    if (*migrate) {
      const int applied = pacer::ledger::migrate(pacer::ledger::PgLedgerOptions{migrate_pg});
      fmt::print("applied {} migration(s); schema version {}\n", applied, pacer::ledger::latestSchemaVersion());
      return 0;
    }
    auto keyValue = [](const std::string& s, const char* what) {
      const auto eq = s.find('=');
      if (eq == std::string::npos || eq == 0)
        throw pacer::worker::DaemonConfigError(fmt::format("{} '{}': expected NAME=VALUE", what, s));
      return std::make_pair(s.substr(0, eq), s.substr(eq + 1));
    };
    for (const std::string& p : kafka_props) o.kafka.insert(keyValue(p, "--kafka"));
    for (const std::string& h : http_headers) o.http.headers.push_back(keyValue(h, "--http-header"));
    if (parking != "on" && parking != "off")
      throw pacer::worker::DaemonConfigError(fmt::format("--parking '{}': expected on or off", parking));
    if (tick_ms < 1) throw pacer::worker::DaemonConfigError("--tick-ms: must be at least 1");
    if (o.sink_in_flight < 1) throw pacer::worker::DaemonConfigError("--in-flight: must be at least 1");
    if (o.worker.max_unrecorded < 1) throw pacer::worker::DaemonConfigError("--max-unrecorded: must be at least 1");
    if (o.worker.ledger_batch < 1) throw pacer::worker::DaemonConfigError("--ledger-batch: must be at least 1");
    if (max_attempts < 1) throw pacer::worker::DaemonConfigError("--max-attempts: must be at least 1");
    if (park_keep_s <= 0) throw pacer::worker::DaemonConfigError("--park-keep-s: must be above 0");
    if (lease_s < 1) throw pacer::worker::DaemonConfigError("--parking-lease-s: must be at least 1");
    o.parking = parking == "on";
    if (degraded != "local-share" && degraded != "stop")
      throw pacer::worker::DaemonConfigError(
          fmt::format("--quota-degraded '{}': expected local-share or stop", degraded));
    if (live_workers < 1) throw pacer::worker::DaemonConfigError("--live-workers: must be at least 1");
    if (lease_horizon_ms < 1) throw pacer::worker::DaemonConfigError("--lease-horizon-ms: must be at least 1");
    if (!(adaptive_decrease > 0.0 && adaptive_decrease < 1.0))
      throw pacer::worker::DaemonConfigError(
          fmt::format("--adaptive-decrease {}: expected a number above 0 and below 1", adaptive_decrease));
    if (!(adaptive_floor >= 0.0) || !std::isfinite(adaptive_floor))
      throw pacer::worker::DaemonConfigError(fmt::format("--adaptive-floor {}: expected a rate >= 0", adaptive_floor));
    if (latency_threshold_ms < 0)
      throw pacer::worker::DaemonConfigError("--latency-threshold-ms: must be 0 (off) or more");
    o.worker.adaptive.decrease = adaptive_decrease;
    o.worker.adaptive.floor = adaptive_floor;
    o.worker.adaptive.latency_threshold = std::chrono::milliseconds(latency_threshold_ms);
    if (redis_timeout_ms < 1) throw pacer::worker::DaemonConfigError("--redis-timeout-ms: must be at least 1");
    if (o.redis_cluster && o.redis.empty())
      throw pacer::worker::DaemonConfigError("--redis-cluster: give the cluster's nodes with --redis HOST:PORT");
    o.worker.degraded = degraded == "stop" ? pacer::DegradedMode::kStop : pacer::DegradedMode::kLocalShare;
    o.worker.lease.live_workers = static_cast<std::uint32_t>(live_workers);
    o.worker.lease.horizon = std::chrono::milliseconds(lease_horizon_ms);
    o.worker.lease.tick = std::chrono::milliseconds(tick_ms);
    o.worker.lease.ttl = std::max(o.worker.lease.ttl, 4 * o.worker.lease.horizon);
    o.redis_timeout = std::chrono::milliseconds(redis_timeout_ms);
    o.worker.decode.max_message_bytes = max_message_bytes;
    o.worker.retry.max_attempts = max_attempts;
    o.worker.ledger_flush_interval = std::chrono::milliseconds(ledger_flush_ms);
    o.worker.park_keep_for = std::chrono::duration_cast<pacer::Nanos>(std::chrono::duration<double>(park_keep_s));
    o.http.total_timeout = std::chrono::milliseconds(http_timeout_ms);
    o.tick = std::chrono::milliseconds(tick_ms);
    o.commit_interval = std::chrono::milliseconds(commit_ms);
    o.refresh_interval = std::chrono::milliseconds(refresh_ms);
    o.shutdown_deadline = std::chrono::milliseconds(shutdown_ms);
    o.stats_interval = std::chrono::milliseconds(stats_ms);
    o.exit_when_idle = std::chrono::milliseconds(idle_ms);
    o.parking_lease = std::chrono::seconds(lease_s);

    struct sigaction sa {};
    sa.sa_handler = onSignal;
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGINT, &sa, nullptr);
    return pacer::worker::runDaemon(o, g_stop);
  } catch (const pacer::worker::DaemonConfigError& e) {
    fmt::print(stderr, "pacerd: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "pacerd: {}\n", e.what());
    return 1;
  }
}
