#include "pacer/config/pacerd_config.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

namespace pacer::config {
namespace {

using worker::DaemonOptions;

// What a key holds.
enum class Shape { kScalar, kList, kMap };
// How its flag is given: --x VALUE (the last wins), --x VALUE repeatable
// (a list, or NAME=VALUE entries of a map), or a bare flag that sets true/false.
enum class FlagForm { kNone, kValue, kRepeat, kSetTrue, kSetFalse };

// Later sources win: a value from the file loses to the environment, which
// loses to a flag.
enum class Rank { kFile = 1, kEnv = 2, kFlag = 3 };

// One key's value as given, before it is checked.
struct Raw {
  std::string path;
  bool secret = false;
  Shape shape = Shape::kScalar;  // what was given
  std::string scalar;
  std::vector<std::string> list;
  std::vector<std::pair<std::string, std::string>> map;
  std::string origin;  // "pacerd.yaml:12:3", "PACER_SCHEDULER_TICK_MS", "--tick-ms"
  Rank rank = Rank::kFile;
};

// Values that need more than one key before they reach DaemonOptions.
struct Pending {
  std::optional<Raw> password, password_file, token, token_file;
  std::vector<std::pair<std::string, std::string>> header_files;  // header name, file
  std::map<std::string, Rank> header_rank;                        // who gave headers[name]
  Rank header_files_rank = Rank::kFile;
};

struct Ctx {
  DaemonOptions& o;
  Pending& p;
};

[[noreturn]] void fail(const Raw& r, std::string_view expected) {
  std::string got;
  if (r.secret)
    got = "";  // never the value of a secret
  else if (r.shape == Shape::kList)
    got = ", got a list";
  else if (r.shape == Shape::kMap)
    got = ", got a map";
  else
    got = fmt::format(", got \"{}\"", r.scalar);
  throw ConfigError(fmt::format("{}: {}: expected {}{}", r.origin, r.path, expected, got));
}

std::string trim(std::string s) {
  const auto notSpace = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), notSpace));
  s.erase(std::find_if(s.rbegin(), s.rend(), notSpace).base(), s.end());
  return s;
}

std::vector<std::string> splitCommas(const std::string& s) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(s);
  while (std::getline(in, item, ','))
    if (auto t = trim(item); !t.empty()) out.push_back(std::move(t));
  return out;
}

std::string asString(const Raw& r) {
  if (r.shape != Shape::kScalar) fail(r, "a string");
  return r.scalar;
}

std::string asNonEmpty(const Raw& r) {
  if (r.shape != Shape::kScalar || r.scalar.empty()) fail(r, "a non-empty string");
  return r.scalar;
}

long long asInt(const Raw& r, long long min, long long max = std::numeric_limits<int>::max()) {
  const std::string expected = fmt::format("an integer >= {}", min);
  if (r.shape != Shape::kScalar) fail(r, expected);
  const std::string s = trim(r.scalar);
  if (s.empty()) fail(r, expected);
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (*end != '\0' || errno == ERANGE) fail(r, expected);
  if (v < min) fail(r, expected);
  if (v > max) fail(r, fmt::format("an integer from {} to {}", min, max));
  return v;
}

double asDouble(const Raw& r, bool (*ok)(double), std::string_view expected) {
  if (r.shape != Shape::kScalar) fail(r, expected);
  const std::string s = trim(r.scalar);
  char* end = nullptr;
  const double v = s.empty() ? std::nan("") : std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || !std::isfinite(v) || !ok(v)) fail(r, expected);
  return v;
}

bool asBool(const Raw& r, std::string_view expected = "true or false") {
  if (r.shape == Shape::kScalar) {
    std::string s = trim(r.scalar);
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    if (s == "true" || s == "yes" || s == "on" || s == "1") return true;
    if (s == "false" || s == "no" || s == "off" || s == "0") return false;
  }
  fail(r, expected);
}

std::string asChoice(const Raw& r, std::initializer_list<const char*> choices) {
  std::string expected = "one of ";
  for (const char* c : choices) expected += fmt::format("{}{}", expected.size() > 7 ? ", " : "", c);
  if (r.shape == Shape::kScalar)
    for (const char* c : choices)
      if (r.scalar == c) return r.scalar;
  fail(r, expected);
}

// A list: a YAML sequence, or one string of comma-separated items.
std::vector<std::string> asList(const Raw& r) {
  if (r.shape == Shape::kList) {
    std::vector<std::string> out;
    for (const std::string& s : r.list)
      for (std::string& item : splitCommas(s)) out.push_back(std::move(item));
    return out;
  }
  if (r.shape == Shape::kScalar) return splitCommas(r.scalar);
  fail(r, "a list of strings");
}

const std::vector<std::pair<std::string, std::string>>& asMap(const Raw& r) {
  if (r.shape != Shape::kMap) fail(r, "a map of NAME: VALUE");
  return r.map;
}

// HOST:PORT with a port in 1..65535.
void checkHostPort(const Raw& r, const std::string& node, int min_port = 1) {
  const std::size_t colon = node.rfind(':');
  bool ok = colon != std::string::npos && colon > 0 && colon + 1 < node.size();
  if (ok) {
    const std::string port = node.substr(colon + 1);
    ok = port.size() <= 5 && std::all_of(port.begin(), port.end(), [](unsigned char c) { return std::isdigit(c); });
    if (ok) ok = std::stoi(port) >= min_port && std::stoi(port) <= 65535;
  }
  if (!ok) {
    Raw one = r;
    one.shape = Shape::kScalar;
    one.scalar = node;
    fail(one, "HOST:PORT");
  }
}

// The whole file, or why not (a directory opens but does not read).
std::optional<std::string> readTextFile(const std::string& path, std::string& why) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    why = "is a directory, not a file";
    return std::nullopt;
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    why = std::strerror(errno);
    return std::nullopt;
  }
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) {
    why = "read error";
    return std::nullopt;
  }
  return text;
}

std::string readSecretFile(const Raw& r, const std::string& path) {
  std::string why;
  std::optional<std::string> text = readTextFile(path, why);
  if (!text) throw ConfigError(fmt::format("{}: {}: cannot read \"{}\": {}", r.origin, r.path, path, why));
  std::string s = std::move(*text);
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

// libpq: a password added to a keyword conninfo (quoted) or a URL (a query
// parameter, percent-encoded); either overrides one already in it.
std::string withPassword(const std::string& conninfo, const std::string& password) {
  if (conninfo.rfind("postgresql://", 0) == 0 || conninfo.rfind("postgres://", 0) == 0) {
    std::string enc;
    for (unsigned char c : password) {
      if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~')
        enc += static_cast<char>(c);
      else
        enc += fmt::format("%{:02X}", c);
    }
    return conninfo + (conninfo.find('?') == std::string::npos ? "?" : "&") + "password=" + enc;
  }
  std::string quoted;
  for (char c : password) {
    if (c == '\\' || c == '\'') quoted += '\\';
    quoted += c;
  }
  return conninfo + (conninfo.empty() ? "" : " ") + "password='" + quoted + "'";
}

using Apply = void (*)(const Raw&, Ctx&);

struct Key {
  const char* path;
  Shape shape;
  const char* flag;  // nullptr: no flag
  FlagForm form;
  bool secret;
  bool live;  // SIGHUP applies it
  const char* help;
  Apply apply;
};

std::chrono::milliseconds ms(long long v) { return std::chrono::milliseconds(v); }

// The table: every setting of pacerd. Order is the order of
// config/pacerd.example.yaml and of the checks.
const std::vector<Key>& keys() {
  static const std::vector<Key> table = {
      // kafka
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
       [](const Raw& r, Ctx& c) { c.o.assignment = asChoice(r, {"range", "roundrobin", "cooperative-sticky"}); }},
      {"kafka.session_timeout_ms", Shape::kScalar, "--session-timeout-ms", FlagForm::kValue, false, false,
       "Kafka session.timeout.ms (default 10000)",
       [](const Raw& r, Ctx& c) { c.o.session_timeout_ms = static_cast<int>(asInt(r, 1)); }},
      // Secret: it may hold sasl.password or ssl.key.password.
      {"kafka.properties", Shape::kMap, "--kafka", FlagForm::kRepeat, true, false,
       "any other consumer property, KEY=VALUE (repeatable)",
       [](const Raw& r, Ctx& c) {
         for (const auto& [k, v] : asMap(r)) c.o.kafka[k] = v;
       }},
      // postgres
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
      // redis
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
      // sink
      {"sink.kind", Shape::kScalar, "--sink", FlagForm::kValue, false, false,
       "where messages go: stdout, null, http, kafka (default stdout)",
       [](const Raw& r, Ctx& c) { c.o.sink = asChoice(r, {"stdout", "null", "http", "kafka"}); }},
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
           hs.erase(std::remove_if(hs.begin(), hs.end(), [&](const auto& h) { return h.first == k; }), hs.end());
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
      // scheduler
      {"scheduler.tick_ms", Shape::kScalar, "--tick-ms", FlagForm::kValue, false, false, "scheduler tick (default 5)",
       [](const Raw& r, Ctx& c) { c.o.tick = ms(asInt(r, 1)); }},
      {"scheduler.max_buffered", Shape::kScalar, "--max-buffered", FlagForm::kValue, false, false,
       "messages held in memory, at most (default 100000)",
       [](const Raw& r, Ctx& c) {
         c.o.worker.max_buffered_messages = static_cast<std::size_t>(asInt(r, 1, std::numeric_limits<long long>::max()));
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
      // limits
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
       "on a throttle a provider's effective rate drops to this fraction of the rate it came at, in (0, 1); "
       "squared when the limit has dropped (default 0.8)",
       [](const Raw& r, Ctx& c) {
         c.o.worker.adaptive.decrease =
             asDouble(r, [](double v) { return v > 0.0 && v < 1.0; }, "a number above 0 and below 1");
       }},
      {"limits.adaptive_hold_fraction", Shape::kScalar, "--adaptive-hold-fraction", FlagForm::kValue, false, true,
       "after a throttle the rate climbs fast to this fraction of the rate the provider refused, in (0, 1] "
       "(default 0.98)",
       [](const Raw& r, Ctx& c) {
         c.o.worker.adaptive.hold_fraction =
             asDouble(r, [](double v) { return v > 0.0 && v <= 1.0; }, "a number above 0 and at most 1");
       }},
      {"limits.adaptive_probe_s", Shape::kScalar, "--adaptive-probe-s", FlagForm::kValue, false, true,
       "then takes this many seconds to probe up to that rate; about one 429 per probe at a fixed limit "
       "(default 30)",
       [](const Raw& r, Ctx& c) { c.o.worker.adaptive.probe_time = std::chrono::seconds(asInt(r, 0, 3600)); }},
      {"limits.breaker_threshold", Shape::kScalar, "--breaker-threshold", FlagForm::kValue, false, false,
       "a provider's circuit breaker opens when this fraction of its answers are faults, in (0, 1] (default 0.5)",
       [](const Raw& r, Ctx& c) {
         c.o.worker.breaker.threshold =
             asDouble(r, [](double v) { return v > 0.0 && v <= 1.0; }, "a number above 0 and at most 1");
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
         c.o.worker.adaptive.floor = asDouble(r, [](double v) { return v >= 0.0; }, "a rate >= 0");
       }},
      {"limits.latency_threshold_ms", Shape::kScalar, "--latency-threshold-ms", FlagForm::kValue, false, true,
       "an answer slower than this lowers the provider's effective rate; 0: latency is not watched (default 0)",
       [](const Raw& r, Ctx& c) { c.o.worker.adaptive.latency_threshold = ms(asInt(r, 0)); }},
      // ledger
      {"ledger.batch", Shape::kScalar, "--ledger-batch", FlagForm::kValue, false, false,
       "ledger rows per write, at most (default 5000)",
       [](const Raw& r, Ctx& c) { c.o.worker.ledger_batch = static_cast<std::size_t>(asInt(r, 1)); }},
      {"ledger.flush_ms", Shape::kScalar, "--ledger-flush-ms", FlagForm::kValue, false, false,
       "a ledger row waits at most this long (default 50)",
       [](const Raw& r, Ctx& c) { c.o.worker.ledger_flush_interval = ms(asInt(r, 0)); }},
      {"ledger.parking", Shape::kScalar, "--parking", FlagForm::kValue, false, false,
       "park the excess of slow campaigns in PostgreSQL: on, off (default on)",
       [](const Raw& r, Ctx& c) { c.o.parking = asBool(r, "on or off"); }},
      {"ledger.park_keep_s", Shape::kScalar, "--park-keep-s", FlagForm::kValue, false, false,
       "seconds of a campaign's send_rate kept in memory before parking (default 10)",
       [](const Raw& r, Ctx& c) {
         const double s = asDouble(r, [](double v) { return v > 0.0; }, "a number of seconds above 0");
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
      // admin
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
      {"admin.token_file", Shape::kScalar, nullptr, FlagForm::kNone, false, false, "",
       [](const Raw& r, Ctx& c) {
         asString(r);
         c.p.token_file = r;
       }},
      // logging
      {"logging.stats_interval_ms", Shape::kScalar, "--stats-interval-ms", FlagForm::kValue, false, true,
       "a stats line on stderr this often; 0: none (default 0)",
       [](const Raw& r, Ctx& c) { c.o.stats_interval = ms(asInt(r, 0)); }},
      // top level
      {"shutdown_deadline_ms", Shape::kScalar, "--shutdown-deadline-ms", FlagForm::kValue, false, true,
       "on SIGTERM, finish in-flight work within this (default 10000)",
       [](const Raw& r, Ctx& c) { c.o.shutdown_deadline = ms(asInt(r, 0)); }},
      {"exit_when_idle_ms", Shape::kScalar, "--exit-when-idle-ms", FlagForm::kValue, false, false,
       "exit once every partition is read to its end and nothing is left to do for this long; 0: never",
       [](const Raw& r, Ctx& c) { c.o.exit_when_idle = ms(asInt(r, 0)); }},
      {"summary_file", Shape::kScalar, "--summary", FlagForm::kValue, false, true,
       "write a per-campaign JSON summary here at exit", [](const Raw& r, Ctx& c) { c.o.summary_file = asString(r); }},
  };
  return table;
}

const Key* findKey(std::string_view path) {
  for (const Key& k : keys())
    if (path == k.path) return &k;
  return nullptr;
}

bool isSection(std::string_view prefix) {
  for (const Key& k : keys()) {
    const std::string_view p = k.path;
    if (p.size() > prefix.size() && p.substr(0, prefix.size()) == prefix && p[prefix.size()] == '.') return true;
  }
  return false;
}

std::size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// The closest known key or section to `path`, if close enough to be a typo,
// or a key elsewhere with the same last name ("tick_ms" -> scheduler.tick_ms).
std::string suggest(const std::string& path) {
  std::set<std::string> candidates{"providers"};
  for (const Key& k : keys()) {
    std::string p = k.path;
    candidates.insert(p);
    for (std::size_t dot = p.find('.'); dot != std::string::npos; dot = p.find('.', dot + 1))
      candidates.insert(p.substr(0, dot));
  }
  const std::string last = path.substr(path.rfind('.') == std::string::npos ? 0 : path.rfind('.') + 1);
  std::string best;
  std::size_t best_d = std::max<std::size_t>(2, last.size() / 4) + 1;
  for (const std::string& c : candidates) {
    const std::size_t d = editDistance(path, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  if (!best.empty()) return best;
  for (const std::string& c : candidates)
    if (c.size() > last.size() && c.compare(c.size() - last.size(), last.size(), last) == 0 &&
        c[c.size() - last.size() - 1] == '.')
      return c;
  return {};
}

using Merged = std::map<std::string, Raw>;

// Keyed by the table's path (for a provider's sink too: "sink.http.url").
void put(Merged& m, const std::string& key, Raw r) {
  auto it = m.find(key);
  if (it != m.end() && it->second.shape == Shape::kMap && r.shape == Shape::kMap) {
    // Maps merge by entry: a later source overrides one name, not the map.
    Raw merged = std::move(r);
    for (const auto& [k, v] : it->second.map) {
      const bool replaced =
          std::any_of(merged.map.begin(), merged.map.end(), [&](const auto& e) { return e.first == k; });
      if (!replaced) merged.map.emplace_back(k, v);
    }
    it->second = std::move(merged);
    return;
  }
  m[key] = std::move(r);
}

using ProviderMerged = std::map<std::string, Merged>;  // provider id -> its sink keys

std::string position(const std::string& file, const YAML::Mark& mark) {
  if (mark.line < 0) return file;
  return fmt::format("{}:{}:{}", file, mark.line + 1, mark.column + 1);
}

void readProviders(const YAML::Node& node, const std::string& where, const std::string& file, ProviderMerged& out);

// `shown` goes before a path in messages ("providers.sms."); with
// `providers` null the section reads only the sink keys (a provider's).
void readYamlSection(const YAML::Node& node, const std::string& prefix, const std::string& file, Merged& out,
                     ProviderMerged* providers, const std::string& shown = "") {
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string name = it->first.as<std::string>();
    const std::string path = prefix.empty() ? name : prefix + "." + name;
    const std::string where = position(file, it->first.Mark());
    const YAML::Node v = it->second;  // a copy: the iterator hands out a temporary
    const bool allowed = providers || path == "sink" || path.rfind("sink.", 0) == 0;
    if (path == "providers" && providers) {
      readProviders(v, where, file, *providers);
    } else if (const Key* k = allowed ? findKey(path) : nullptr) {
      // `key:` with no value keeps the default. YAML reads `kind: null` as
      // no value too, but for the sink it means the null sink.
      const bool null_sink = path == "sink.kind" && v.IsNull();
      if (v.IsNull() && !null_sink) continue;
      Raw r;
      r.path = shown + path;
      r.secret = k->secret;
      r.origin = where;
      r.rank = Rank::kFile;
      if (null_sink) {
        r.scalar = "null";
      } else if (v.IsScalar()) {
        r.shape = Shape::kScalar;
        r.scalar = v.Scalar();
      } else if (v.IsSequence()) {
        r.shape = Shape::kList;
        for (const YAML::Node& e : v) {
          if (!e.IsScalar()) {
            r.origin = position(file, e.Mark());
            fail(r, "a list of strings");
          }
          r.list.push_back(e.Scalar());
        }
      } else if (v.IsMap()) {
        r.shape = Shape::kMap;
        for (auto e = v.begin(); e != v.end(); ++e) {
          if (!e->second.IsScalar()) {
            r.origin = position(file, e->first.Mark());
            fail(r, "a map of NAME: VALUE (each value a string)");
          }
          r.map.emplace_back(e->first.as<std::string>(), e->second.Scalar());
        }
      }
      put(out, path, std::move(r));
    } else if (allowed && isSection(path)) {
      if (v.IsNull()) continue;
      if (!v.IsMap())
        throw ConfigError(fmt::format("{}: {}{}: expected a section (a map of keys)", where, shown, path));
      readYamlSection(v, path, file, out, providers, shown);
    } else {
      std::string hint = providers ? suggest(path) : (suggest(path).rfind("sink", 0) == 0 ? suggest(path) : "");
      throw ConfigError(fmt::format("{}: {}{}: unknown key{}", where, shown, path,
                                    hint.empty() ? "" : fmt::format(" (did you mean {}{}?)", shown, hint)));
    }
  }
}

// providers: {<id>: {sink: {...the keys of `sink`...}}}
void readProviders(const YAML::Node& node, const std::string& where, const std::string& file, ProviderMerged& out) {
  if (node.IsNull()) return;
  if (!node.IsMap())
    throw ConfigError(fmt::format("{}: providers: expected a map of provider ids, each with a sink section", where));
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string id = it->first.as<std::string>();
    const YAML::Node v = it->second;
    const std::string at = position(file, it->first.Mark());
    if (id.empty() || !v.IsMap())
      throw ConfigError(fmt::format("{}: providers.{}: expected a section with a sink section", at, id));
    readYamlSection(v, "", file, out[id], nullptr, "providers." + id + ".");
  }
}

void readYaml(const Sources& s, Merged& out, ProviderMerged& providers) {
  std::string text;
  if (s.text) {
    text = *s.text;
  } else {
    std::string why;
    std::optional<std::string> read = readTextFile(s.file, why);
    if (!read) throw ConfigError(fmt::format("{}: cannot read the configuration: {}", s.file, why));
    text = std::move(*read);
  }
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw ConfigError(fmt::format("{}: YAML syntax error: {}", position(s.file, e.mark), e.msg));
  }
  if (root.IsNull()) return;  // an empty file
  if (!root.IsMap())
    throw ConfigError(fmt::format("{}: expected a map of sections at the top", position(s.file, root.Mark())));
  try {
    readYamlSection(root, "", s.file, out, &providers);
  } catch (const YAML::Exception& e) {
    throw ConfigError(fmt::format("{}: {}", position(s.file, e.mark), e.msg));
  }
}

// NAME=VALUE; the value of a secret map never appears in the message.
std::pair<std::string, std::string> nameValue(const Raw& r, const std::string& item) {
  const auto eq = item.find('=');
  if (eq == std::string::npos || eq == 0) {
    Raw one = r;
    one.shape = Shape::kScalar;
    one.scalar = item;
    fail(one, "NAME=VALUE");
  }
  return {item.substr(0, eq), item.substr(eq + 1)};
}

// One environment variable's value for key `k` at `path`: a map's entries
// are split at commas (a value with a comma goes in the file); a list stays
// one comma-separated scalar, split later like a flag's.
Raw envRaw(const Key& k, std::string path, const std::string& name, const char* v) {
  Raw r;
  r.path = std::move(path);
  r.secret = k.secret;
  r.origin = name;
  r.rank = Rank::kEnv;
  if (k.shape == Shape::kMap) {
    r.shape = Shape::kMap;
    std::string item;
    std::istringstream in(v);
    while (std::getline(in, item, ','))
      if (!trim(item).empty()) r.map.push_back(nameValue(r, trim(item)));
  } else {
    r.shape = Shape::kScalar;
    r.scalar = v;
  }
  return r;
}

void readEnv(const Sources& s, Merged& out) {
  if (!s.getenv) return;
  for (const Key& k : keys()) {
    std::string name = envName(k.path);
    const char* v = s.getenv(name.c_str());
    // PACER_POSTGRES (as pacerctl reads it) stands for postgres.url when
    // PACER_POSTGRES_URL is not set.
    if (!v && std::string_view(k.path) == "postgres.url") {
      name = "PACER_POSTGRES";
      v = s.getenv(name.c_str());
    }
    if (!v) continue;
    put(out, k.path, envRaw(k, k.path, name, v));
  }
}

// PACER_PROVIDERS_<ID>_SINK_...: the id upper-cased, other than letters and
// digits as '_'; for the providers the file names.
std::string providerEnvName(const std::string& id, std::string_view path) {
  std::string s = "PACER_PROVIDERS_";
  for (unsigned char c : id) s += std::isalnum(c) ? static_cast<char>(std::toupper(c)) : '_';
  return s + "_" + envName(path).substr(6);
}

void readProviderEnv(const Sources& s, const std::string& id, Merged& out) {
  if (!s.getenv) return;
  for (const Key& k : keys()) {
    if (std::string_view(k.path).rfind("sink.", 0) != 0) continue;
    const std::string name = providerEnvName(id, k.path);
    const char* v = s.getenv(name.c_str());
    if (!v) continue;
    put(out, k.path, envRaw(k, "providers." + id + "." + k.path, name, v));
  }
}

void readFlags(const Sources& s, Merged& out) {
  for (const Key& k : keys()) {
    auto it = s.flags.find(k.path);
    if (it == s.flags.end() || it->second.empty() || !k.flag) continue;
    Raw r;
    r.path = k.path;
    r.secret = k.secret;
    r.origin = k.flag;
    r.rank = Rank::kFlag;
    if (k.form == FlagForm::kSetTrue || k.form == FlagForm::kSetFalse) {
      r.scalar = k.form == FlagForm::kSetTrue ? "true" : "false";
    } else if (k.shape == Shape::kMap) {
      r.shape = Shape::kMap;
      for (const std::string& item : it->second) r.map.push_back(nameValue(r, item));
    } else if (k.shape == Shape::kList && k.form == FlagForm::kRepeat) {
      r.shape = Shape::kList;
      r.list = it->second;
    } else {
      r.scalar = it->second.back();
    }
    put(out, k.path, std::move(r));
  }
}

std::string canonical(const Raw& r) {
  switch (r.shape) {
    case Shape::kScalar: return "s:" + r.scalar;
    case Shape::kList: {
      std::string s = "l:";
      for (const std::string& e : r.list) s += e + "\n";
      return s;
    }
    case Shape::kMap: {
      auto sorted = r.map;
      std::sort(sorted.begin(), sorted.end());
      std::string s = "m:";
      for (const auto& [k, v] : sorted) s += k + "=" + v + "\n";
      return s;
    }
  }
  return {};
}

// One of two keys giving the same secret: the one from the later source.
std::optional<std::string> secretFrom(const std::optional<Raw>& value, const std::optional<Raw>& file) {
  if (value && file && value->rank == file->rank)
    throw ConfigError(fmt::format("{}: {} and {}: give one of them, not both", file->origin, value->path, file->path));
  if (file && (!value || file->rank > value->rank)) return readSecretFile(*file, file->scalar);
  if (value) return value->scalar;
  return std::nullopt;
}

// sink.http.header_files: each file's contents become the header's value.
void applyHeaderFiles(DaemonOptions& o, const Pending& pending, const Merged& merged, const std::string& shown) {
  if (pending.header_files.empty()) return;
  const Raw& r = merged.at("sink.http.header_files");
  for (const auto& [name, file] : pending.header_files) {
    auto given = pending.header_rank.find(name);
    if (given != pending.header_rank.end() && given->second > pending.header_files_rank) continue;
    if (given != pending.header_rank.end() && given->second == pending.header_files_rank)
      throw ConfigError(fmt::format("{}: {}sink.http.headers and {}sink.http.header_files both give {}; give one",
                                    r.origin, shown, shown, name));
    const std::string value = readSecretFile(r, file);
    auto& hs = o.http.headers;
    hs.erase(std::remove_if(hs.begin(), hs.end(), [&](const auto& h) { return h.first == name; }), hs.end());
    hs.emplace_back(name, value);
  }
}

}  // namespace

std::string envName(std::string_view path) {
  std::string s = "PACER_";
  for (char c : path) s += c == '.' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::vector<std::string> keyPaths() {
  std::vector<std::string> out;
  for (const Key& k : keys()) out.emplace_back(k.path);
  return out;
}

bool isLive(std::string_view path) {
  const Key* k = findKey(path);
  return k && k->live;
}

void addFlags(CLI::App& app, FlagValues& out) {
  for (const Key& k : keys()) {
    if (!k.flag) continue;
    std::vector<std::string>& dest = out[k.path];
    const std::string help = fmt::format("{} [{}, {}]", k.help, k.path, envName(k.path));
    CLI::Option* opt = nullptr;
    if (k.form == FlagForm::kSetTrue || k.form == FlagForm::kSetFalse) {
      opt = app.add_flag_callback(
          k.flag, [&dest] { dest.push_back("1"); }, help);
    } else if (k.form == FlagForm::kRepeat) {
      opt = app.add_option(k.flag, dest, help);
    } else {
      opt = app.add_option_function<std::string>(
          k.flag, [&dest](const std::string& v) { dest.push_back(v); }, help);
    }
    (void)opt;
  }
}

Config load(const Sources& sources) {
  Merged merged;
  ProviderMerged providers;
  if (!sources.file.empty() || sources.text) readYaml(sources, merged, providers);
  readEnv(sources, merged);
  readFlags(sources, merged);
  for (auto& [id, m] : providers) readProviderEnv(sources, id, m);

  Config config;
  DaemonOptions& o = config.options;
  Pending pending;
  Ctx ctx{o, pending};
  for (const Key& k : keys()) {
    auto it = merged.find(k.path);
    if (it == merged.end()) continue;
    k.apply(it->second, ctx);
    config.values[k.path] = canonical(it->second);
  }

  // Secrets that may come from a file.
  // A password without a connection string is left out: "postgres: empty" says what is missing.
  if (auto pw = secretFrom(pending.password, pending.password_file); pw && !o.postgres.empty())
    o.postgres = withPassword(o.postgres, *pw);
  if (auto token = secretFrom(pending.token, pending.token_file)) o.admin_token = *token;
  applyHeaderFiles(o, pending, merged, "");
  // What the secret files held, as fingerprints (never the secrets): a reload
  // that reads a rotated file says it needs a restart instead of saying nothing.
  const auto fingerprint = [](const std::string& s) { return fmt::format("{:016x}", std::hash<std::string>{}(s)); };
  if (pending.password_file) config.values["postgres.password_file (contents)"] = fingerprint(o.postgres);
  if (pending.token_file) config.values["admin.token_file (contents)"] = fingerprint(o.admin_token);
  if (!pending.header_files.empty()) {
    std::string all;
    for (const auto& [name, value] : o.http.headers) all += name + '\n' + value + '\n';
    config.values["sink.http.header_files (contents)"] = fingerprint(all);
  }

  // Each provider's sink: the default sink's settings with its own on top,
  // except the headers: they carry one host's credentials, and a provider's
  // sink usually talks to another host.
  for (const auto& [id, m] : providers) {
    DaemonOptions p = o;
    p.http.headers.clear();
    Pending pp;
    Ctx pctx{p, pp};
    for (const Key& k : keys()) {
      auto it = m.find(k.path);
      if (it == m.end()) continue;
      k.apply(it->second, pctx);
      config.values["providers." + id + "." + k.path] = canonical(it->second);
    }
    applyHeaderFiles(p, pp, m, "providers." + id + ".");
    config.values["providers." + id] = "provider";  // a provider added or removed is a change too
    o.provider_sinks[id] = worker::ProviderSinkOptions{p.sink, p.sink_in_flight, p.http, p.sink_topic, p.sink_brokers};
  }

  // Checks across keys, and settings derived from others.
  if (o.redis_cluster && o.redis.empty())
    throw ConfigError("redis.cluster: give the cluster's nodes (redis.nodes, --redis HOST:PORT)");
  o.worker.lease.tick = o.tick;
  o.worker.lease.lookahead = std::max(o.worker.lease.lookahead, o.worker.lease.horizon);
  o.worker.lease.ttl = std::max(o.worker.lease.ttl, o.worker.lease.lookahead + 2 * o.worker.lease.horizon);
  return config;
}

ReloadPlan planReload(const Config& current, const Config& next) {
  ReloadPlan plan;
  plan.config = current;
  for (const Key& k : keys()) {
    auto a = current.values.find(k.path);
    auto b = next.values.find(k.path);
    const bool same = (a == current.values.end()) == (b == next.values.end()) &&
                      (a == current.values.end() || a->second == b->second);
    if (same) continue;
    if (!k.live) {
      plan.needs_restart.emplace_back(k.path);
      continue;
    }
    plan.changed.emplace_back(k.path);
    if (b == next.values.end())
      plan.config.values.erase(k.path);
    else
      plan.config.values[k.path] = b->second;
  }
  // Keys outside the table (providers.<id>.sink...) need a restart.
  std::set<std::string> other;
  for (const auto& [key, v] : current.values)
    if (!findKey(key)) other.insert(key);
  for (const auto& [key, v] : next.values)
    if (!findKey(key)) other.insert(key);
  for (const std::string& key : other) {
    auto a = current.values.find(key);
    auto b = next.values.find(key);
    if (a == current.values.end() || b == next.values.end() || a->second != b->second)
      plan.needs_restart.push_back(key);
  }
  // The live keys' fields, from the new options.
  DaemonOptions& o = plan.config.options;
  const DaemonOptions& n = next.options;
  o.worker.retry.max_attempts = n.worker.retry.max_attempts;
  o.worker.retry.max_throttled = n.worker.retry.max_throttled;
  o.worker.retry.max_age = n.worker.retry.max_age;
  o.worker.adaptive.decrease = n.worker.adaptive.decrease;
  o.worker.adaptive.hold_fraction = n.worker.adaptive.hold_fraction;
  o.worker.adaptive.probe_time = n.worker.adaptive.probe_time;
  o.worker.adaptive.floor = n.worker.adaptive.floor;
  o.worker.adaptive.latency_threshold = n.worker.adaptive.latency_threshold;
  o.commit_interval = n.commit_interval;
  o.refresh_interval = n.refresh_interval;
  o.stats_interval = n.stats_interval;
  o.shutdown_deadline = n.shutdown_deadline;
  o.summary_file = n.summary_file;
  return plan;
}

}  // namespace pacer::config
