// frequency_cap_bench: the Redis frequency-cap store against a real Redis
// (bench/frequency_cap_bench.sh starts one and runs this).
//
//   frequency_cap_bench --port P [--recipients 1000000] [--batch 100] [--seconds 3]
//
// 1. Memory: FLUSHALL, then every recipient gets one, two, three sends of
//    scope "class:bulk" (limit 3 per 24 h), then a fourth (all capped); then
//    again from empty with the scope named "b", and with 36-byte recipient
//    ids (one send each): what the key's length costs.
//    Redis's used_memory (INFO memory) before and after each pass (2 s after,
//    so hash-table rehashing is done), divided by the recipients, is the
//    memory per recipient; each pass is timed
//    (decisions/s for one worker = one connection, batches of --batch).
// 2. Batch size: decisions/s and round trips per decision for batches of
//    1..1000 over random recipients of the million, --seconds each.
// 3. Paced: 5,000 decisions/s for --seconds in 5 ms ticks (25 per batch),
//    as a worker at that rate would send them: round trips per message and
//    batch latency.
// The wall-clock `now` handed to the store is simulated (it starts on
// 2024-06-01 and moves a little per batch); only durations are measured.
#include <fmt/format.h>
#include <hiredis/hiredis.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "pacer/frequency_cap_redis.h"

namespace {

using Clock = std::chrono::steady_clock;
using pacer::CapDecision;
using pacer::CapQuery;
using pacer::CapVerdict;
using pacer::WallTime;
using std::chrono::hours;
using std::chrono::milliseconds;

struct Args {
  int port = 0;
  int recipients = 1'000'000;
  int batch = 100;
  double seconds = 3;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const char* v = argv[i + 1];
    if (k == "--port")
      a.port = std::stoi(v);
    else if (k == "--recipients")
      a.recipients = std::stoi(v);
    else if (k == "--batch")
      a.batch = std::stoi(v);
    else if (k == "--seconds")
      a.seconds = std::stod(v);
    else
      throw std::invalid_argument("unknown option " + k);
  }
  if (a.port <= 0) throw std::invalid_argument("--port is required");
  return a;
}

// A plain connection for INFO and FLUSHALL.
class Admin {
 public:
  explicit Admin(int port) : c_(redisConnect("127.0.0.1", port)) {
    if (c_ == nullptr || c_->err) throw std::runtime_error("cannot connect to redis");
  }
  ~Admin() { redisFree(c_); }
  std::string run(const char* cmd) {
    auto* r = static_cast<redisReply*>(redisCommand(c_, cmd));
    if (r == nullptr) throw std::runtime_error(std::string("redis: ") + c_->errstr);
    std::string out = r->type == REDIS_REPLY_INTEGER ? std::to_string(r->integer)
                                                     : (r->str ? std::string(r->str, r->len) : std::string());
    freeReplyObject(r);
    return out;
  }
  long long infoField(const char* section, const char* field) {
    const std::string info = run(fmt::format("INFO {}", section).c_str());
    const std::string key = std::string(field) + ":";
    const std::size_t at = info.find(key);
    if (at == std::string::npos) throw std::runtime_error(std::string("no ") + field + " in INFO");
    return std::stoll(info.substr(at + key.size()));
  }

 private:
  redisContext* c_;
};

std::string recipientId(int r) { return fmt::format("+49151{:08d}", r); }

struct PassResult {
  double seconds = 0;
  std::uint64_t allowed = 0;
  std::uint64_t capped = 0;
  std::uint64_t other = 0;
};

// Every recipient once, in batches, at `now`.
PassResult pass(pacer::RedisFrequencyCapStore& store, const std::vector<std::string>& ids, int batch,
                std::string_view scope, WallTime now) {
  PassResult r;
  std::vector<CapQuery> q;
  std::vector<CapDecision> out(static_cast<std::size_t>(batch));
  const auto t0 = Clock::now();
  for (std::size_t i = 0; i < ids.size(); i += static_cast<std::size_t>(batch)) {
    q.clear();
    for (std::size_t j = i; j < std::min(ids.size(), i + static_cast<std::size_t>(batch)); ++j)
      q.push_back(CapQuery{ids[j], scope, 3, hours(24)});
    store.decide(q, now, out);
    for (std::size_t j = 0; j < q.size(); ++j) {
      r.allowed += out[j].verdict == CapVerdict::kAllowed;
      r.capped += out[j].verdict == CapVerdict::kCapped;
      r.other += out[j].verdict != CapVerdict::kAllowed && out[j].verdict != CapVerdict::kCapped;
    }
    now += milliseconds(1);
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return r;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))];
}

void memoryPhase(const Args& a, pacer::RedisFrequencyCapStore& store, const std::vector<std::string>& ids,
                 std::string_view scope, int passes) {
  Admin admin(a.port);
  admin.run("FLUSHALL");
  const long long base = admin.infoField("memory", "used_memory");
  fmt::print("## 1. memory per recipient ({} recipients, scope \"{}\", limit 3 per 24 h, batches of {})\n\n",
             a.recipients, scope, a.batch);
  fmt::print("| pass | decisions | allowed | capped | decisions/s | used_memory (bytes) | bytes per recipient |\n");
  fmt::print("|---|---|---|---|---|---|---|\n");
  const WallTime t0 = WallTime(std::chrono::sys_days{std::chrono::year{2024} / 6 / 1});
  for (int p = 1; p <= passes; ++p) {
    const PassResult r = pass(store, ids, a.batch, scope, t0 + hours(p));
    // Let Redis finish growing its hash tables (active rehashing runs in
    // 1 ms steps ten times a second) so the figure is the steady state.
    std::this_thread::sleep_for(std::chrono::seconds(2));
    const long long used = admin.infoField("memory", "used_memory");
    fmt::print("| {} ({} stamp{}) | {} | {} | {} | {:.0f} | {} | {:.1f} |\n", p, std::min(p, 3), p == 1 ? "" : "s",
               ids.size(), r.allowed, r.capped, static_cast<double>(ids.size()) / r.seconds, used,
               static_cast<double>(used - base) / static_cast<double>(ids.size()));
    if (r.other != 0) fmt::print("   ({} decisions unavailable: {})\n", r.other, store.lastError());
  }
  const std::string key = fmt::format("fc:{{{}}}:{}", ids.front(), scope);
  fmt::print("\nkeys: {} (DBSIZE); example key `{}` ({} bytes), STRLEN {}, MEMORY USAGE {} bytes, PTTL {} ms\n",
             admin.run("DBSIZE"), key, key.size(), admin.run(fmt::format("STRLEN {}", key).c_str()),
             admin.run(fmt::format("MEMORY USAGE {}", key).c_str()), admin.run(fmt::format("PTTL {}", key).c_str()));
  fmt::print("used_memory before: {} bytes; mem_allocator: jemalloc (Debian's redis-server)\n\n", base);
}

void batchPhase(const Args& a, pacer::RedisFrequencyCapStore& store, const std::vector<std::string>& ids) {
  fmt::print("## 2. one worker (one connection), by batch size, random recipients, {} s each\n\n", a.seconds);
  fmt::print("| batch | decisions | decisions/s | round trips per decision | batch latency p50 (us) | p99 (us) |\n");
  fmt::print("|---|---|---|---|---|---|\n");
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<std::size_t> pick(0, ids.size() - 1);
  WallTime now = WallTime(std::chrono::sys_days{std::chrono::year{2024} / 7 / 1});
  for (const int b : {1, 10, 25, 100, 1000}) {
    std::vector<CapQuery> q(static_cast<std::size_t>(b));
    std::vector<CapDecision> out(q.size());
    std::vector<double> lat;
    const std::uint64_t rt0 = store.stats().round_trips;
    std::uint64_t n = 0;
    const auto t0 = Clock::now();
    const auto until = t0 + std::chrono::duration<double>(a.seconds);
    while (Clock::now() < until) {
      for (CapQuery& c : q) c = CapQuery{ids[pick(rng)], "campaign:flash", 1, hours(1)};
      const auto s = Clock::now();
      store.decide(q, now, out);
      lat.push_back(std::chrono::duration<double, std::micro>(Clock::now() - s).count());
      n += q.size();
      now += milliseconds(10);
    }
    const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    fmt::print("| {} | {} | {:.0f} | {:.3f} | {:.0f} | {:.0f} |\n", b, n, static_cast<double>(n) / secs,
               static_cast<double>(store.stats().round_trips - rt0) / static_cast<double>(n), percentile(lat, 0.5),
               percentile(lat, 0.99));
  }
  fmt::print("\n");
}

void pacedPhase(const Args& a, pacer::RedisFrequencyCapStore& store, const std::vector<std::string>& ids) {
  constexpr int kRate = 5000;
  constexpr auto kTick = milliseconds(5);
  const int per_tick = kRate * static_cast<int>(kTick.count()) / 1000;
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<std::size_t> pick(0, ids.size() - 1);
  std::vector<CapQuery> q(static_cast<std::size_t>(per_tick));
  std::vector<CapDecision> out(q.size());
  std::vector<double> lat;
  const std::uint64_t rt0 = store.stats().round_trips;
  std::uint64_t n = 0, allowed = 0;
  WallTime now = WallTime(std::chrono::sys_days{std::chrono::year{2024} / 8 / 1});
  const auto start = Clock::now();
  auto next = start;
  const auto until = start + std::chrono::duration<double>(a.seconds);
  while (next < until) {
    std::this_thread::sleep_until(next);  // a bench may wait; it paces like a worker's tick
    for (CapQuery& c : q) c = CapQuery{ids[pick(rng)], "class:bulk", 3, hours(24)};
    const auto s = Clock::now();
    store.decide(q, now, out);
    lat.push_back(std::chrono::duration<double, std::micro>(Clock::now() - s).count());
    for (const CapDecision& d : out) allowed += d.verdict == CapVerdict::kAllowed;
    n += q.size();
    next += kTick;
    now += kTick;
  }
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  fmt::print("## 3. paced: {}/s in {} ms ticks ({} per batch) for {} s\n\n", kRate, kTick.count(), per_tick, a.seconds);
  fmt::print(
      "decisions {} ({:.0f}/s), allowed {}, round trips per message {:.3f}, batch latency p50 {:.0f} us, "
      "p99 {:.0f} us, max {:.0f} us\n",
      n, static_cast<double>(n) / secs, allowed,
      static_cast<double>(store.stats().round_trips - rt0) / static_cast<double>(n), percentile(lat, 0.5),
      percentile(lat, 0.99), percentile(lat, 1.0));
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Args a = parse(argc, argv);
    pacer::RedisFrequencyCapOptions o;
    o.port = a.port;
    o.link.command_timeout = milliseconds(2000);
    auto store = pacer::makeRedisFrequencyCapStore(o);
    std::string why;
    if (store->connect(why) != pacer::CapFault::kNone) throw std::runtime_error(why);
    std::vector<std::string> ids;
    ids.reserve(static_cast<std::size_t>(a.recipients));
    for (int r = 0; r < a.recipients; ++r) ids.push_back(recipientId(r));
    memoryPhase(a, *store, ids, "class:bulk", 4);
    // Key length: Redis keeps a key of up to 30 bytes in a 32-byte block and
    // 31..46 bytes in a 48-byte one. A one-byte scope (21-byte keys) and
    // UUID-sized recipient ids (52-byte keys), one send each.
    memoryPhase(a, *store, ids, "b", 1);
    std::vector<std::string> uuids;
    uuids.reserve(ids.size());
    for (int r = 0; r < a.recipients; ++r) uuids.push_back(fmt::format("3f2c9a7e-0b1d-4c55-9e21-{:012d}", r));
    memoryPhase(a, *store, uuids, "class:bulk", 1);
    batchPhase(a, *store, ids);
    pacedPhase(a, *store, ids);
    const auto& s = store->stats();
    fmt::print(
        "\nstore totals: {} EVALSHA, {} round trips, {} script loads, {} io errors, {} timeouts, {} reply "
        "errors\n",
        s.commands, s.round_trips, s.script_loads, s.io_errors, s.timeouts, s.reply_errors);
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "frequency_cap_bench: {}\n", e.what());
    return 1;
  }
}
