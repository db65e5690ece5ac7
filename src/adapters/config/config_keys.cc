// The table of pacerd's settings (config_keys.h), one function per section
// of config/pacerd.example.yaml, in its order.
#include "config_keys.h"

#include <fmt/format.h>

#include "pacer/sinks/sink_registry.h"

namespace pacer::config::detail {
namespace {

// kafka
std::vector<Key> kafkaKeys() {
  return {
      {"kafka.brokers", Shape::kList, "--brokers", FlagForm::kValue, false, false,
       "Kafka bootstrap servers (HOST:PORT,...)",
       [](const Raw& r, Ctx& c) {
         std::string joined;
         for (const std::string& b : asList(r)) joined += (joined.empty() ? "" : ",") + b;
         c.o.brokers = joined;
       }},
      {"kafka.topics", Shape::kList, "--topic", FlagForm::kRepeat, false, false, "topic to consume (repeatable)",
       [](const Raw& r, Ctx& c) { c.o.topics = asList(r); }},
      {"kafka.group", Shape::kScalar, "--group", FlagForm::kValue, false, false, "consumer group id (default pacer)",
       [](const Raw& r, Ctx& c) { c.o.group = asNonEmpty(r); }},
      {"kafka.assignment", Shape::kScalar, "--assignment", FlagForm::kValue, false, false,
       "partition assignment strategy: range, roundrobin, cooperative-sticky (default range)",
       [](const Raw& r, Ctx& c) {
         c.o.assignment = asChoice(r, {"range", "roundrobin", "cooperative-sticky"});
       }},
      {"kafka.session_timeout_ms", Shape::kScalar, "--session-timeout-ms", FlagForm::kValue, false, false,
       "Kafka session.timeout.ms (default 10000)",
       [](const Raw& r, Ctx& c) { c.o.session_timeout_ms = static_cast<int>(asInt(r, 1)); }},
      // Secret: it may hold sasl.password or ssl.key.password.
      {"kafka.properties", Shape::kMap, "--kafka", FlagForm::kRepeat, true, false,
       "any other consumer property, KEY=VALUE (repeatable)",
       [](const Raw& r, Ctx& c) {
         for (const auto& [k, v] : asMap(r)) c.o.kafka[k] = v;
       }},
  };
}

// postgres
std::vector<Key> postgresKeys() {
  return {
      {"postgres.url", Shape::kScalar, "--postgres", FlagForm::kValue, true, false,
       "libpq connection string or postgresql:// URL for campaigns, providers, ledger and parking "
       "(also $PACER_POSTGRES)",
       // libpq itself judges the string (at connect, with any password hidden).
       [](const Raw& r, Ctx& c) { c.o.postgres = asString(r); }},
      {"postgres.password", Shape::kScalar, nullptr, FlagForm::kNone, true, false, "",
       [](const Raw& r, Ctx& c) {
         asString(r);
         c.p.password = r;
       }},
      {"postgres.password_file", Shape::kScalar, nullptr, FlagForm::kNone, false, false, "",
       [](const Raw& r, Ctx& c) {
         asString(r);
         c.p.password_file = r;
       }},
      {"postgres.migrate", Shape::kScalar, "--no-migrate", FlagForm::kSetFalse, false, false,
       "do not apply schema migrations at start", [](const Raw& r, Ctx& c) { c.o.migrate = asBool(r); }},
  };
}

// redis
std::vector<Key> redisKeys() {
  return {
      {"redis.nodes", Shape::kList, "--redis", FlagForm::kRepeat, false, false,
       "global quota on Redis: HOST:PORT (repeatable; cluster seed nodes with --redis-cluster); "
       "without it each worker applies every rate on its own",
       [](const Raw& r, Ctx& c) {
         c.o.redis = asList(r);
         for (const std::string& n : c.o.redis) checkHostPort(r, n);
       }},
      {"redis.cluster", Shape::kScalar, "--redis-cluster", FlagForm::kSetTrue, false, false,
       "the --redis nodes are a Redis Cluster", [](const Raw& r, Ctx& c) { c.o.redis_cluster = asBool(r); }},
      {"redis.timeout_ms", Shape::kScalar, "--redis-timeout-ms", FlagForm::kValue, false, false,
       "Redis connect and command timeout (default 50)",
       [](const Raw& r, Ctx& c) { c.o.redis_timeout = ms(asInt(r, 1)); }},
      {"redis.lease_horizon_ms", Shape::kScalar, "--lease-horizon-ms", FlagForm::kValue, false, false,
       "a full lease is this much of the worker's share (default 500)",
       [](const Raw& r, Ctx& c) { c.o.worker.lease.horizon = ms(asInt(r, 1)); }},
      {"redis.lease_lookahead_ms", Shape::kScalar, "--lease-lookahead-ms", FlagForm::kValue, false, false,
       "a shared bucket may grant this far ahead of its tokens (at least the horizon; default 1000)",
       [](const Raw& r, Ctx& c) { c.o.worker.lease.lookahead = ms(asInt(r, 1)); }},
      {"redis.live_workers", Shape::kScalar, "--live-workers", FlagForm::kValue, false, false,
       "workers sharing the global quota (lease sizes, degraded share; default 1)",
       [](const Raw& r, Ctx& c) { c.o.worker.lease.live_workers = static_cast<std::uint32_t>(asInt(r, 1)); }},
      {"redis.degraded", Shape::kScalar, "--quota-degraded", FlagForm::kValue, false, false,
       "when Redis does not answer: local-share or stop (default local-share)",
       [](const Raw& r, Ctx& c) {
         c.o.worker.degraded =
             asChoice(r, {"local-share", "stop"}) == "stop" ? DegradedMode::kStop : DegradedMode::kLocalShare;
       }},
  };
}

// sink
std::vector<Key> sinkKeys() {
  // The kinds are the sink registry's (pacer/sinks/sink_registry.h).
  static const std::string kind_help = fmt::format("where messages go: {} (default stdout)", sink::sinkKindNames());
  return {
      {"sink.kind", Shape::kScalar, "--sink", FlagForm::kValue, false, false, kind_help.c_str(),
       [](const Raw& r, Ctx& c) {
         if (r.shape != Shape::kScalar || !sink::findSinkKind(r.scalar)) fail(r, "one of " + sink::sinkKindNames());
         c.o.sink = r.scalar;
       }},
      {"sink.in_flight", Shape::kScalar, "--in-flight", FlagForm::kValue, false, false,
       "messages in the sink at once, at most (default 1000)",
       [](const Raw& r, Ctx& c) { c.o.sink_in_flight = static_cast<std::size_t>(asInt(r, 1)); }},
      {"sink.http.url", Shape::kScalar, "--http-url", FlagForm::kValue, false, false,
       "sink http: URL template; may contain {recipient} and {campaign}",
       [](const Raw& r, Ctx& c) { c.o.http.url = asString(r); }},
      {"sink.http.method", Shape::kScalar, "--http-method", FlagForm::kValue, false, false,
       "sink http: method (default POST)", [](const Raw& r, Ctx& c) { c.o.http.method = asNonEmpty(r); }},
      {"sink.http.content_type", Shape::kScalar, "--http-content-type", FlagForm::kValue, false, false,
       "sink http: Content-Type (default application/json)",
       [](const Raw& r, Ctx& c) { c.o.http.content_type = asString(r); }},
      {"sink.http.headers", Shape::kMap, "--http-header", FlagForm::kRepeat, true, false,
       "sink http: static header NAME=VALUE (repeatable; never logged)",
       [](const Raw& r, Ctx& c) {
         auto& hs = c.o.http.headers;
         for (const auto& [k, v] : asMap(r)) {
           const std::string& key = k;  // (Clang 14 cannot capture a structured binding)
           hs.erase(std::remove_if(hs.begin(), hs.end(), [&](const auto& h) { return h.first == key; }), hs.end());
           hs.emplace_back(k, v);
           c.p.header_rank[k] = r.rank;
         }
       }},
      {"sink.http.header_files", Shape::kMap, nullptr, FlagForm::kNone, false, false, "",
       [](const Raw& r, Ctx& c) {
         c.p.header_files = asMap(r);
         c.p.header_files_rank = r.rank;
       }},
      {"sink.http.timeout_ms", Shape::kScalar, "--http-timeout-ms", FlagForm::kValue, false, false,
       "sink http: total timeout per request (default 10000)",
       [](const Raw& r, Ctx& c) { c.o.http.total_timeout = ms(asInt(r, 1)); }},
      {"sink.kafka.topic", Shape::kScalar, "--sink-topic", FlagForm::kValue, false, false,
       "sink kafka: the outbound topic", [](const Raw& r, Ctx& c) { c.o.sink_topic = asString(r); }},
      {"sink.kafka.brokers", Shape::kList, "--sink-brokers", FlagForm::kValue, false, false,
       "sink kafka: bootstrap servers (default: --brokers)",
       [](const Raw& r, Ctx& c) {
         std::string joined;
         for (const std::string& b : asList(r)) joined += (joined.empty() ? "" : ",") + b;
         c.o.sink_brokers = joined;
       }},
  };
}

// sink.smpp (docs/smpp.md): an SMSC over SMPP 3.4
std::vector<Key> smppKeys() {
  return {
      {"sink.smpp.host", Shape::kScalar, "--smpp-host", FlagForm::kValue, false, false,
       "sink smpp: the SMSC's host (default 127.0.0.1)", [](const Raw& r, Ctx& c) { c.o.smpp.host = asNonEmpty(r); }},
      {"sink.smpp.port", Shape::kScalar, "--smpp-port", FlagForm::kValue, false, false,
       "sink smpp: the SMSC's port (default 2775)",
       [](const Raw& r, Ctx& c) { c.o.smpp.port = static_cast<int>(asInt(r, 1, 65535)); }},
      {"sink.smpp.system_id", Shape::kScalar, "--smpp-system-id", FlagForm::kValue, false, false,
       "sink smpp: the account (system_id) to bind as", [](const Raw& r, Ctx& c) { c.o.smpp.system_id = asString(r); }},
      {"sink.smpp.password_env", Shape::kScalar, "--smpp-password-env", FlagForm::kValue, false, false,
       "sink smpp: the environment variable holding the bind password (default PACER_SMPP_PASSWORD)",
       [](const Raw& r, Ctx& c) { c.o.smpp_password_env = asNonEmpty(r); }},
      {"sink.smpp.system_type", Shape::kScalar, "--smpp-system-type", FlagForm::kValue, false, false,
       "sink smpp: system_type in the bind (default empty)",
       [](const Raw& r, Ctx& c) { c.o.smpp.system_type = asString(r); }},
      {"sink.smpp.bind_mode", Shape::kScalar, "--smpp-bind-mode", FlagForm::kValue, false, false,
       "sink smpp: transceiver, or transmitter-receiver (two connections per bind) (default transceiver)",
       [](const Raw& r, Ctx& c) {
         c.o.smpp.bind_mode = asChoice(r, {"transceiver", "transmitter-receiver"}) == "transceiver"
                                  ? sink::SmppBindMode::kTransceiver
                                  : sink::SmppBindMode::kTransmitterReceiver;
       }},
      {"sink.smpp.binds", Shape::kScalar, "--smpp-binds", FlagForm::kValue, false, false,
       "sink smpp: binds per worker (default 1)",
       [](const Raw& r, Ctx& c) { c.o.smpp.binds = static_cast<std::size_t>(asInt(r, 1, 64)); }},
      {"sink.smpp.window", Shape::kScalar, "--smpp-window", FlagForm::kValue, false, false,
       "sink smpp: outstanding submit_sm per bind (default 10)",
       [](const Raw& r, Ctx& c) { c.o.smpp.window = static_cast<std::size_t>(asInt(r, 1, 10000)); }},
      {"sink.smpp.enquire_link_ms", Shape::kScalar, "--smpp-enquire-link-ms", FlagForm::kValue, false, false,
       "sink smpp: enquire_link on an idle bind this often (default 30000)",
       [](const Raw& r, Ctx& c) { c.o.smpp.enquire_link_interval = ms(asInt(r, 100)); }},
      {"sink.smpp.response_timeout_ms", Shape::kScalar, "--smpp-response-timeout-ms", FlagForm::kValue, false, false,
       "sink smpp: an unanswered request is retried on another connection after this (default 10000)",
       [](const Raw& r, Ctx& c) { c.o.smpp.response_timeout = ms(asInt(r, 10)); }},
      {"sink.smpp.reconnect_backoff_ms", Shape::kScalar, "--smpp-reconnect-backoff-ms", FlagForm::kValue, false,
       false, "sink smpp: the first reconnect wait, doubling up to 60 times it, at most 30 s (default 500)",
       [](const Raw& r, Ctx& c) {
         c.o.smpp.reconnect_backoff_min = ms(asInt(r, 1, 30000));
         c.o.smpp.reconnect_backoff_max = std::max<Nanos>(ms(30000), c.o.smpp.reconnect_backoff_min);
       }},
      {"sink.smpp.throttle_pause_ms", Shape::kScalar, "--smpp-throttle-pause-ms", FlagForm::kValue, false, false,
       "sink smpp: ESME_RTHROTTLED/ESME_RMSGQFUL pause the provider this long, then the message is retried "
       "(default 250)",
       [](const Raw& r, Ctx& c) { c.o.smpp.throttle_retry_after = ms(asInt(r, 1, 60000)); }},
      {"sink.smpp.source_addr", Shape::kScalar, "--smpp-source-addr", FlagForm::kValue, false, false,
       "sink smpp: the sender address (default empty: the SMSC's)",
       [](const Raw& r, Ctx& c) {
         c.o.smpp.submit.source_addr = asString(r);
         if (c.o.smpp.submit.source_addr.size() > 20) fail(r, "at most 20 characters");
       }},
      {"sink.smpp.concatenation", Shape::kScalar, "--smpp-concatenation", FlagForm::kValue, false, false,
       "sink smpp: how long texts are joined: udh or sar (default udh)",
       [](const Raw& r, Ctx& c) {
         c.o.smpp.submit.concatenation =
             asChoice(r, {"udh", "sar"}) == "udh" ? smpp::Concatenation::kUdh : smpp::Concatenation::kSar;
       }},
      {"sink.smpp.receipts", Shape::kScalar, "--smpp-receipts", FlagForm::kValue, false, false,
       "sink smpp: which segments ask for a delivery receipt: first, all, none (default first)",
       [](const Raw& r, Ctx& c) {
         const std::string v = asChoice(r, {"first", "all", "none"});
         c.o.smpp.submit.receipts = v == "first" ? smpp::ReceiptRequest::kFirst
                                    : v == "all" ? smpp::ReceiptRequest::kAll
                                                 : smpp::ReceiptRequest::kNone;
       }},
  };
}

// scheduler
std::vector<Key> schedulerKeys() {
  return {
      {"scheduler.tick_ms", Shape::kScalar, "--tick-ms", FlagForm::kValue, false, false, "scheduler tick (default 5)",
       [](const Raw& r, Ctx& c) { c.o.tick = ms(asInt(r, 1)); }},
      {"scheduler.max_buffered", Shape::kScalar, "--max-buffered", FlagForm::kValue, false, false,
       "messages held in memory, at most (default 100000)",
       [](const Raw& r, Ctx& c) {
         c.o.worker.max_buffered_messages =
             static_cast<std::size_t>(asInt(r, 1, std::numeric_limits<long long>::max()));
       }},
      {"scheduler.max_buffered_bytes", Shape::kScalar, "--max-buffered-bytes", FlagForm::kValue, false, false,
       "bytes held in memory, at most (default 268435456)",
       [](const Raw& r, Ctx& c) {
         c.o.worker.max_buffered_bytes = static_cast<std::size_t>(asInt(r, 1, std::numeric_limits<long long>::max()));
       }},
      {"scheduler.max_unrecorded", Shape::kScalar, "--max-unrecorded", FlagForm::kValue, false, false,
       "messages sent but not yet in the ledger, at most (the most a crash can send twice; default 10000)",
       [](const Raw& r, Ctx& c) {
         c.o.worker.max_unrecorded = static_cast<std::size_t>(asInt(r, 1, std::numeric_limits<long long>::max()));
       }},
  };
}

// limits
std::vector<Key> limitsKeys() {
  return {
      {"limits.max_attempts", Shape::kScalar, "--max-attempts", FlagForm::kValue, false, true,
       "attempts per message for faults (5xx, timeouts) before `failed` (default 5)",
       [](const Raw& r, Ctx& c) { c.o.worker.retry.max_attempts = static_cast<int>(asInt(r, 1)); }},
      {"limits.max_throttled", Shape::kScalar, "--max-throttled", FlagForm::kValue, false, true,
       "throttled attempts per message (429, 503 with Retry-After) before `failed` (default 30)",
       [](const Raw& r, Ctx& c) { c.o.worker.retry.max_throttled = static_cast<int>(asInt(r, 1, 100000)); }},
      {"limits.max_age_s", Shape::kScalar, "--max-age-s", FlagForm::kValue, false, true,
       "no retry later than this many seconds after a message's first attempt; then `failed` (default 3600)",
       [](const Raw& r, Ctx& c) { c.o.worker.retry.max_age = std::chrono::seconds(asInt(r, 1, 365LL * 86400)); }},
      {"limits.max_message_bytes", Shape::kScalar, "--max-message-bytes", FlagForm::kValue, false, false,
       "larger messages are rejected (default 1048576)",
       [](const Raw& r, Ctx& c) {
         c.o.worker.decode.max_message_bytes =
             static_cast<std::size_t>(asInt(r, 1, std::numeric_limits<long long>::max()));
       }},
      {"limits.adaptive_decrease", Shape::kScalar, "--adaptive-decrease", FlagForm::kValue, false, true,
       "on a slow answer or the circuit breaker opening a provider's effective rate drops to this fraction, in "
       "(0, 1) (default 0.8; throttles are judged instead, docs/provider-contract.md)",
       [](const Raw& r, Ctx& c) {
         c.o.worker.adaptive.decrease = asDouble(
             r, [](double v) { return v > 0.0 && v < 1.0; }, "a number above 0 and below 1");
       }},
      {"limits.adaptive_hold_fraction", Shape::kScalar, "--adaptive-hold-fraction", FlagForm::kValue, false, true,
       "after a cut the rate climbs fast to this fraction of the limit measured, in (0, 1] (default 0.98)",
       [](const Raw& r, Ctx& c) {
         c.o.worker.adaptive.hold_fraction = asDouble(
             r, [](double v) { return v > 0.0 && v <= 1.0; }, "a number above 0 and at most 1");
       }},
      {"limits.adaptive_probe_s", Shape::kScalar, "--adaptive-probe-s", FlagForm::kValue, false, true,
       "then takes this many seconds to probe up to the limit, and twice as long beyond it; a throttle or two per "
       "probe at a fixed limit (default 30)",
       [](const Raw& r, Ctx& c) { c.o.worker.adaptive.probe_time = std::chrono::seconds(asInt(r, 0, 3600)); }},
      {"limits.breaker_threshold", Shape::kScalar, "--breaker-threshold", FlagForm::kValue, false, false,
       "a provider's circuit breaker opens when this fraction of its answers are faults, in (0, 1] (default 0.5)",
       [](const Raw& r, Ctx& c) {
         c.o.worker.breaker.threshold = asDouble(
             r, [](double v) { return v > 0.0 && v <= 1.0; }, "a number above 0 and at most 1");
       }},
      {"limits.breaker_min_answers", Shape::kScalar, "--breaker-min-answers", FlagForm::kValue, false, false,
       "answers in the breaker's window before it judges (default 20)",
       [](const Raw& r, Ctx& c) { c.o.worker.breaker.min_requests = static_cast<std::uint32_t>(asInt(r, 1)); }},
      {"limits.breaker_window_s", Shape::kScalar, "--breaker-window-s", FlagForm::kValue, false, false,
       "the breaker's sliding window of answers, seconds (default 10)",
       [](const Raw& r, Ctx& c) { c.o.worker.breaker.window = std::chrono::seconds(asInt(r, 1, 3600)); }},
      {"limits.breaker_cooldown_s", Shape::kScalar, "--breaker-cooldown-s", FlagForm::kValue, false, false,
       "an open breaker pauses the provider this long, doubled for each open in a row up to 12x (default 5)",
       [](const Raw& r, Ctx& c) {
         c.o.worker.breaker.cooldown = std::chrono::seconds(asInt(r, 1, 3600));
         c.o.worker.breaker.max_cooldown = 12 * c.o.worker.breaker.cooldown;
       }},
      {"limits.adaptive_floor", Shape::kScalar, "--adaptive-floor", FlagForm::kValue, false, true,
       "a provider's effective rate never goes below this (msg/s; default 1)",
       [](const Raw& r, Ctx& c) {
         c.o.worker.adaptive.floor = asDouble(
             r, [](double v) { return v >= 0.0; }, "a rate >= 0");
       }},
      {"limits.latency_threshold_ms", Shape::kScalar, "--latency-threshold-ms", FlagForm::kValue, false, true,
       "an answer slower than this lowers the provider's effective rate; 0: latency is not watched (default 0)",
       [](const Raw& r, Ctx& c) { c.o.worker.adaptive.latency_threshold = ms(asInt(r, 0)); }},
  };
}

// ledger
std::vector<Key> ledgerKeys() {
  return {
      {"ledger.batch", Shape::kScalar, "--ledger-batch", FlagForm::kValue, false, false,
       "ledger rows per write, at most (default 5000)",
       [](const Raw& r, Ctx& c) { c.o.worker.ledger_batch = static_cast<std::size_t>(asInt(r, 1)); }},
      {"ledger.flush_ms", Shape::kScalar, "--ledger-flush-ms", FlagForm::kValue, false, false,
       "a ledger row waits at most this long (default 50)",
       [](const Raw& r, Ctx& c) { c.o.worker.ledger_flush_interval = ms(asInt(r, 0)); }},
      {"ledger.parking", Shape::kScalar, "--parking", FlagForm::kValue, false, false,
       "park the excess of slow campaigns in PostgreSQL: on, off (default on)",
       [](const Raw& r, Ctx& c) { c.o.parking = asBool(r, "on or off"); }},
      {"ledger.park_writer", Shape::kScalar, "--park-writer", FlagForm::kValue, false, false,
       "write parked messages and scan for unclaimed ones on a thread with its own PostgreSQL connection: "
       "on, off (default on)",
       [](const Raw& r, Ctx& c) { c.o.park_writer = asBool(r, "on or off"); }},
      {"ledger.park_keep_s", Shape::kScalar, "--park-keep-s", FlagForm::kValue, false, false,
       "seconds of a campaign's send_rate kept in memory before parking (default 10)",
       [](const Raw& r, Ctx& c) {
         const double s = asDouble(
             r, [](double v) { return v > 0.0; }, "a number of seconds above 0");
         c.o.worker.park_keep_for = std::chrono::duration_cast<Nanos>(std::chrono::duration<double>(s));
       }},
      {"ledger.parking_lease_s", Shape::kScalar, "--parking-lease-s", FlagForm::kValue, false, false,
       "a claim on parked messages lasts this long unless renewed (default 60)",
       [](const Raw& r, Ctx& c) { c.o.parking_lease = std::chrono::seconds(asInt(r, 1)); }},
      {"ledger.commit_interval_ms", Shape::kScalar, "--commit-interval-ms", FlagForm::kValue, false, true,
       "offset commits at least this often (default 1000)",
       [](const Raw& r, Ctx& c) { c.o.commit_interval = ms(asInt(r, 1)); }},
      {"ledger.refresh_ms", Shape::kScalar, "--refresh-ms", FlagForm::kValue, false, true,
       "campaigns and providers re-read this often (default 1000)",
       [](const Raw& r, Ctx& c) { c.o.refresh_interval = ms(asInt(r, 1)); }},
  };
}

// admin
std::vector<Key> adminKeys() {
  return {
      {"admin.listen", Shape::kScalar, "--admin-listen", FlagForm::kValue, false, false,
       "admin listener for /metrics, /healthz, /readyz, POST /admin/drain: HOST:PORT (port 0: any free port); "
       "empty or off: none (default 127.0.0.1:9464)",
       [](const Raw& r, Ctx& c) {
         c.o.admin_listen = asString(r);
         if (!c.o.admin_listen.empty() && c.o.admin_listen != "off") checkHostPort(r, c.o.admin_listen, 0);
       }},
      {"admin.token", Shape::kScalar, "--admin-token", FlagForm::kValue, true, false,
       "bearer token POST /admin/drain requires; none: state changes answer 403 (never logged)",
       [](const Raw& r, Ctx& c) {
         asString(r);
         c.p.token = r;
       }},
      {"admin.console_controls", Shape::kScalar, "--admin-console-controls", FlagForm::kValue, false, false,
       "the console at /console/ may pause, resume, cancel and set rates (with the token): on, off (default off: "
       "read-only)",
       [](const Raw& r, Ctx& c) { c.o.admin_console_controls = asBool(r, "on or off"); }},
      {"admin.allowed_hosts", Shape::kList, "--admin-allowed-hosts", FlagForm::kValue, false, false,
       "host names the admin listener answers to besides IP literals and localhost (NAME,...; * for any); "
       "a request whose Host header names another gets 403 (against DNS rebinding)",
       [](const Raw& r, Ctx& c) { c.o.admin_allowed_hosts = asList(r); }},
      {"admin.reads_need_token", Shape::kScalar, "--admin-reads-need-token", FlagForm::kValue, false, false,
       "reading /api/v1, the event stream and /metrics needs the admin token (or, for /metrics, the scrape "
       "token): on, off (default off)",
       [](const Raw& r, Ctx& c) { c.o.admin_reads_need_token = asBool(r, "on or off"); }},
      {"admin.scrape_token", Shape::kScalar, "--admin-scrape-token", FlagForm::kValue, true, false,
       "a bearer token that reads /metrics only, for a Prometheus scraper when reads need a token (never logged)",
       [](const Raw& r, Ctx& c) { c.o.admin_scrape_token = asString(r); }},
      {"admin.token_file", Shape::kScalar, nullptr, FlagForm::kNone, false, false, "",
       [](const Raw& r, Ctx& c) {
         asString(r);
         c.p.token_file = r;
       }},
  };
}

// logging
std::vector<Key> loggingKeys() {
  return {
      {"logging.format", Shape::kScalar, "--log-format", FlagForm::kValue, false, false,
       "the log's lines: text (default) or json (one object per line, with time, level, event, message)",
       [](const Raw& r, Ctx& c) {
         const std::string f = asString(r);
         if (f != "text" && f != "json")
           throw ConfigError(fmt::format("{}: {}: '{}' is not one of text, json", r.origin, r.path, f));
         c.o.log_json = f == "json";
       }},
      {"logging.stats_interval_ms", Shape::kScalar, "--stats-interval-ms", FlagForm::kValue, false, true,
       "a stats line on stderr this often; 0: none (default 0)",
       [](const Raw& r, Ctx& c) { c.o.stats_interval = ms(asInt(r, 0)); }},
  };
}

// top level
std::vector<Key> topLevelKeys() {
  return {
      {"shutdown_deadline_ms", Shape::kScalar, "--shutdown-deadline-ms", FlagForm::kValue, false, true,
       "on SIGTERM, finish in-flight work within this (default 10000)",
       [](const Raw& r, Ctx& c) { c.o.shutdown_deadline = ms(asInt(r, 0)); }},
      {"exit_when_idle_ms", Shape::kScalar, "--exit-when-idle-ms", FlagForm::kValue, false, false,
       "exit once every partition is read to its end and nothing is left to do for this long; 0: never",
       [](const Raw& r, Ctx& c) { c.o.exit_when_idle = ms(asInt(r, 0)); }},
      {"summary_file", Shape::kScalar, "--summary", FlagForm::kValue, false, true,
       "write a per-campaign JSON summary here at exit", [](const Raw& r, Ctx& c) { c.o.summary_file = asString(r); }},
  };
}

}  // namespace

const std::vector<Key>& keys() {
  static const std::vector<Key> table = [] {
    std::vector<Key> all;
    for (auto section : {kafkaKeys, postgresKeys, redisKeys, capsKeys, sinkKeys, smppKeys, smppCarrierKeys, pushKeys,
                         schedulerKeys, priorityKeys, limitsKeys, deadTokenKeys, ledgerKeys, eventsKeys, callbacksKeys,
                         adminKeys, loggingKeys, topLevelKeys}) {
      std::vector<Key> keys = section();
      all.insert(all.end(), keys.begin(), keys.end());
    }
    return all;
  }();
  return table;
}

const Key* findKey(std::string_view path) {
  for (const Key& k : keys())
    if (path == k.path) return &k;
  return nullptr;
}

}  // namespace pacer::config::detail
