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

// sink: the kind and the in-flight limit; then each kind's own keys
// (sink.<kind>.*), declared by its folder (sinkKindKeys).
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
  };
}

// scheduler
std::vector<Key> schedulerKeys() {
  return {
      {"scheduler.tick_ms", Shape::kScalar, "--tick-ms", FlagForm::kValue, false, false, "scheduler tick (default 5)",
       [](const Raw& r, Ctx& c) { c.o.tick = ms(asInt(r, 1)); }},
      {"scheduler.max_buffered", Shape::kScalar, "--max-buffered", FlagForm::kValue, false, false,
       "messages held in memory before only kept reads go on (default 100000; 5/4 of it at most)",
       [](const Raw& r, Ctx& c) {
         c.o.worker.max_buffered_messages =
             static_cast<std::size_t>(asInt(r, 1, std::numeric_limits<long long>::max()));
       }},
      {"scheduler.max_buffered_bytes", Shape::kScalar, "--max-buffered-bytes", FlagForm::kValue, false, false,
       "bytes held in memory before only kept reads go on (default 268435456; 5/4 of it at most)",
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
      {"ledger.writer", Shape::kScalar, "--ledger-writer", FlagForm::kValue, false, false,
       "where ledger rows and receipts are written: thread (its own PostgreSQL connection; the loop never "
       "waits on a commit) or inline (on the loop's thread) (default thread)",
       [](const Raw& r, Ctx& c) {
         c.o.ledger_writer = asChoice(r, {"thread", "inline"}) == "thread";
       }},
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

// The sink registry's keys, in its kinds' order (pacer/sinks/sink_keys.h).
std::vector<Key> sinkKindKeys() {
  std::vector<Key> out;
  for (const sink::SinkKey& k : sink::sinkKeys())
    out.push_back(Key{k.path, k.shape, k.flag, k.form, k.secret, false, k.help, nullptr, &k});
  return out;
}

// A sink key's value as its checks see it (pacer/sinks/sink_keys.h).
class RawValue final : public sink::KeyValue {
 public:
  explicit RawValue(const Raw& r) : r_(r) {}
  std::string asString() const override { return detail::asString(r_); }
  std::string asNonEmpty() const override { return detail::asNonEmpty(r_); }
  long long asInt(long long min, long long max) const override { return detail::asInt(r_, min, max); }
  double asDouble(bool (*ok)(double), std::string_view expected) const override {
    return detail::asDouble(r_, ok, expected);
  }
  bool asBool(std::string_view expected) const override { return detail::asBool(r_, expected); }
  std::string asChoice(std::initializer_list<const char*> choices) const override {
    return detail::asChoice(r_, choices);
  }
  std::vector<std::string> asList() const override { return detail::asList(r_); }
  const std::vector<std::pair<std::string, std::string>>& asMap() const override { return detail::asMap(r_); }
  [[noreturn]] void fail(std::string_view expected) const override { detail::fail(r_, expected); }

 private:
  const Raw& r_;
};

}  // namespace

void applyKey(const Key& k, const Raw& r, Ctx& c) {
  if (!k.sink_key) return k.apply(r, c);
  const sink::SinkKey& sk = *k.sink_key;
  sk.apply(RawValue(r), c.o);
  if (sk.files_for) {
    c.p.file_maps.push_back({&sk, r});
  } else if (sk.shape == Shape::kMap) {
    for (const auto& entry : r.map) c.p.map_rank[sk.path][entry.first] = r.rank;
  }
}

std::string applyFileMaps(DaemonOptions& o, const Pending& pending, const std::string& shown) {
  std::string held;
  for (const Pending::FileMap& f : pending.file_maps) {
    const Raw& r = f.raw;
    const sink::SinkKey* target = findKey(f.key->files_for)->sink_key;
    const auto ranks = pending.map_rank.find(target->path);
    const std::map<std::string, Rank> none;
    const auto& given = ranks == pending.map_rank.end() ? none : ranks->second;
    for (const auto& [name, file] : r.map) {
      auto it = given.find(name);
      if (it != given.end() && it->second > r.rank) continue;
      if (it != given.end() && it->second == r.rank)
        throw ConfigError(fmt::format("{}: {}{} and {}{} both give {}; give one", r.origin, shown, target->path, shown,
                                      f.key->path, name));
      Raw one = r;
      one.path = shown + target->path;
      one.secret = true;
      one.map = {{name, readSecretFile(r, file)}};
      held += name + '\n' + one.map[0].second + '\n';
      Pending scratch;  // the entry's rank is settled above
      Ctx ctx{o, scratch};
      applyKey(*findKey(target->path), one, ctx);
    }
  }
  return held;
}

const std::vector<Key>& keys() {
  static const std::vector<Key> table = [] {
    std::vector<Key> all;
    for (auto section : {kafkaKeys, postgresKeys, redisKeys, capsKeys, sinkKeys, sinkKindKeys,
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
