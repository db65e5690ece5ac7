// quota_bench: the global quota (leases + Redis Lua) against a real Redis.
//
//   quota_bench [--seconds 30] [--port P] [--workers 1,4] [--decision-seconds 3]
//               [--horizon-ms 50] [--refill-fraction 0.5] [--ttl-ms 250]
//
// Starts its own redis-server on loopback (unless --port names a running one),
// then runs, each with W worker processes (fork) on one shared quota:
//   provider : a provider quota of 400/s (burst 40), 2 campaigns per worker with
//              endless backlog (demand far above the quota);
//   campaign : one campaign of 5,000/s (burst 500), no provider cap.
// Every worker ticks every 5 ms (refresh leases in one pipelined round trip,
// then Scheduler::tick) and records the messages it was granted to spend at
// 1 ms resolution in shared memory. Reported per run: the largest count in
// any 1 s sliding window (vs rate + burst), utilisation (sent / rate*seconds),
// Redis round trips per message.
// Then decisions per second, same Redis, same run: leases (one worker, an
// effectively unlimited campaign, ticking back to back) against the seed
// design (one EVALSHA per message on a two-key token bucket with a
// client-supplied timestamp).
// Output: one JSON document on stdout.
#include <fmt/format.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "pacer/quota_lease.h"
#include "pacer/quota_redis.h"

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

pacer::Nanos g_horizon = pacer::LeaseOptions{}.horizon;  // LeaseOptions defaults unless told
double g_refill_fraction = pacer::LeaseOptions{}.refill_fraction;
pacer::Nanos g_ttl = pacer::LeaseOptions{}.ttl;

// The seed design, written for this comparison: one call per message, the
// client's clock, tokens and timestamp in two keys.
constexpr const char* kSeedScript = R"lua(
local rate = tonumber(ARGV[1])
local cap = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local req = tonumber(ARGV[4])
local tokens = tonumber(redis.call('GET', KEYS[1]))
if tokens == nil then tokens = cap end
local last = tonumber(redis.call('GET', KEYS[2]))
if last == nil then last = now end
local delta = math.max(0, now - last)
tokens = math.min(cap, tokens + delta * rate / 1000000)
local allowed = 0
if tokens >= req then
  tokens = tokens - req
  allowed = 1
end
local ttl = math.floor(cap / rate * 2000) + 1000
redis.call('SET', KEYS[1], tokens, 'PX', ttl)
redis.call('SET', KEYS[2], now, 'PX', ttl)
return allowed
)lua";

struct Shared {
  std::atomic<std::int64_t> start_ns;  // steady clock; all workers start then
  std::atomic<std::uint64_t> round_trips;
  std::atomic<std::uint64_t> sent;
  std::atomic<std::uint64_t> batches;
  std::atomic<std::uint64_t> degraded;
};

struct Scenario {
  std::string name;
  std::optional<pacer::RateLimit> provider;
  std::optional<pacer::RateLimit> campaign;
  int campaigns_per_worker;
  double rate;   // the binding global rate
  double burst;  // its burst
};

std::int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

pacer::MonoTime mono() { return pacer::MonoTime{std::chrono::nanoseconds(nowNs())}; }

void workerMain(const Scenario& sc, int port, int workers, int seconds, Shared* shared,
                std::atomic<std::uint32_t>* per_ms) {
  pacer::RedisQuotaOptions ro;
  ro.nodes = {pacer::RedisAddress{"127.0.0.1", port}};
  auto backend = pacer::makeRedisQuotaBackend(ro);
  backend->connect();
  pacer::LeaseOptions lo;
  lo.live_workers = static_cast<std::uint32_t>(workers);
  lo.horizon = g_horizon;
  lo.refill_fraction = g_refill_fraction;
  lo.ttl = g_ttl;
  lo.seed = static_cast<std::uint64_t>(getpid());  // each worker process its own jitter
  pacer::Scheduler scheduler(pacer::SchedulerOptions{});
  pacer::QuotaLeaser leaser(scheduler, *backend, lo);
  pacer::QuotaProviderSpec spec;
  spec.name = sc.name;
  spec.name.insert(0, "bench-");  // not "bench-" + name: GCC 12 warns falsely (-Wrestrict) on that
  spec.limit = sc.provider;
  spec.degraded = pacer::DegradedMode::kStop;
  const std::uint32_t p = leaser.addProvider(spec);
  const pacer::MonoTime t0 = mono();
  for (int c = 0; c < sc.campaigns_per_worker; ++c) {
    std::string name = std::to_string(c);
    name.insert(0, 1, 'c');  // not "c" + to_string(c): GCC 12 warns falsely (-Wrestrict) on that
    const pacer::CampaignId id = leaser.addCampaign({name, sc.campaign, 1.0, p}, t0);
    scheduler.addBacklog(id, 1ull << 50);
  }
  const std::int64_t start = shared->start_ns.load();
  const auto total = static_cast<std::size_t>(seconds) * 1000;
  std::uint64_t sent = 0;
  for (std::int64_t next = start;; next += 5'000'000) {
    std::this_thread::sleep_until(Clock::time_point(std::chrono::nanoseconds(next)));
    const std::int64_t now_ns = nowNs();
    const auto ms = static_cast<std::size_t>((now_ns - start) / 1'000'000);
    if (ms >= total) break;
    const pacer::MonoTime now{std::chrono::nanoseconds(now_ns)};
    leaser.refresh(now);
    std::uint64_t n = 0;
    for (const pacer::Grant& g : scheduler.tick(now, pacer::kUnlimitedCapacity)) n += g.count;
    per_ms[ms] += static_cast<std::uint32_t>(n);
    sent += n;
  }
  shared->round_trips += backend->stats().round_trips;
  shared->sent += sent;
  shared->batches += leaser.metrics().batches;
  shared->degraded += leaser.metrics().degraded_entered;
}

nlohmann::json runScenario(const Scenario& sc, int port, int workers, int seconds) {
  const std::size_t total = static_cast<std::size_t>(seconds) * 1000;
  const std::size_t bytes = sizeof(Shared) + total * sizeof(std::atomic<std::uint32_t>);
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) throw std::runtime_error("mmap failed");
  std::memset(mem, 0, bytes);
  auto* shared = static_cast<Shared*>(mem);
  auto* per_ms = reinterpret_cast<std::atomic<std::uint32_t>*>(static_cast<char*>(mem) + sizeof(Shared));
  shared->start_ns = nowNs() + 300'000'000;  // time for every worker to connect
  std::vector<pid_t> pids;
  for (int w = 0; w < workers; ++w) {
    const pid_t pid = fork();
    if (pid == 0) {
      int rc = 0;
      try {
        workerMain(sc, port, workers, seconds, shared, per_ms);
      } catch (const std::exception& e) {
        fmt::print(stderr, "worker: {}\n", e.what());
        rc = 1;
      }
      _exit(rc);
    }
    pids.push_back(pid);
  }
  bool ok = true;
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  if (!ok) throw std::runtime_error("a worker failed");
  std::uint64_t peak = 0, window = 0, sum = 0;
  for (std::size_t i = 0; i < total; ++i) {
    window += per_ms[i];
    if (i >= 1000) window -= per_ms[i - 1000];
    peak = std::max(peak, window);
    sum += per_ms[i];
  }
  nlohmann::json j;
  j["scenario"] = sc.name;
  j["workers"] = workers;
  j["seconds"] = seconds;
  j["rate"] = sc.rate;
  j["burst"] = sc.burst;
  j["sent"] = sum;
  j["max_1s_window"] = peak;
  j["limit_rate_plus_burst"] = sc.rate + sc.burst;
  j["within_limit"] = static_cast<double>(peak) <= sc.rate + sc.burst;
  j["utilisation"] = static_cast<double>(sum) / (sc.rate * seconds);
  j["redis_round_trips"] = shared->round_trips.load();
  j["round_trips_per_message"] = sum ? static_cast<double>(shared->round_trips.load()) / static_cast<double>(sum) : 0.0;
  j["lease_batches"] = shared->batches.load();
  j["degraded_entries"] = shared->degraded.load();
  munmap(mem, bytes);
  return j;
}

// Leases, one worker, an effectively unlimited campaign, ticks back to back.
double leaseDecisionsPerSecond(int port, double seconds) {
  pacer::RedisQuotaOptions ro;
  ro.nodes = {pacer::RedisAddress{"127.0.0.1", port}};
  auto backend = pacer::makeRedisQuotaBackend(ro);
  backend->connect();
  pacer::Scheduler scheduler(pacer::SchedulerOptions{});
  pacer::QuotaLeaser leaser(scheduler, *backend, pacer::LeaseOptions{});
  const pacer::CampaignId id = leaser.addCampaign({"decisions", pacer::RateLimit{1e7, 1e6}, 1.0, UINT32_MAX}, mono());
  scheduler.addBacklog(id, 1ull << 50);
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  std::uint64_t sent = 0;
  const auto t0 = Clock::now();
  while (Clock::now() < end) {
    const pacer::MonoTime now = mono();
    leaser.refresh(now);
    for (const pacer::Grant& g : scheduler.tick(now, pacer::kUnlimitedCapacity)) sent += g.count;
  }
  return static_cast<double>(sent) / std::chrono::duration<double>(Clock::now() - t0).count();
}

// The seed design: one EVALSHA per message (a huge rate: every call decides).
double seedDecisionsPerSecond(int port, double seconds) {
  redisContext* c = redisConnect("127.0.0.1", port);
  if (c == nullptr || c->err) throw std::runtime_error("baseline: cannot connect");
  auto* r = static_cast<redisReply*>(redisCommand(c, "SCRIPT LOAD %s", kSeedScript));
  if (r == nullptr || r->type != REDIS_REPLY_STRING) throw std::runtime_error("baseline: SCRIPT LOAD failed");
  const std::string sha(r->str, r->len);
  freeReplyObject(r);
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  const auto t0 = Clock::now();
  std::uint64_t decisions = 0, allowed = 0;
  while (Clock::now() < end) {
    const std::string now_us = std::to_string(nowNs() / 1000);
    r = static_cast<redisReply*>(redisCommand(c, "EVALSHA %s 2 seed:{b}:tokens seed:{b}:ts %s %s %s %s", sha.c_str(),
                                              "10000000", "1000000", now_us.c_str(), "1"));
    if (r == nullptr) throw std::runtime_error("baseline: connection lost");
    if (r->type == REDIS_REPLY_INTEGER) allowed += static_cast<std::uint64_t>(r->integer);
    freeReplyObject(r);
    ++decisions;
  }
  redisFree(c);
  (void)allowed;
  return static_cast<double>(decisions) / std::chrono::duration<double>(Clock::now() - t0).count();
}

// A redis-server of our own (not daemonized, so we can reap it).
struct OwnRedis {
  pid_t pid = -1;
  std::string dir;
  int port = 0;
  ~OwnRedis() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    if (!dir.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  }
};

void startRedis(OwnRedis& r, int port) {
  char tmpl[] = "/tmp/pacer-quota-bench-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
  r.dir = tmpl;
  r.port = port;
  r.pid = fork();
  if (r.pid == 0) {
    const std::string p = std::to_string(port);
    execlp("redis-server", "redis-server", "--bind", "127.0.0.1", "--port", p.c_str(), "--save", "", "--appendonly",
           "no", "--dir", r.dir.c_str(), "--logfile", (r.dir + "/redis.log").c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  for (int i = 0; i < 500; ++i) {
    redisContext* c = redisConnect("127.0.0.1", port);
    const bool up = c != nullptr && c->err == 0;
    if (c) redisFree(c);
    if (up) return;
    std::this_thread::sleep_for(milliseconds(10));
  }
  throw std::runtime_error("redis-server did not come up");
}

}  // namespace

int main(int argc, char** argv) {
  int seconds = 30;
  int port = 0;
  double decision_seconds = 3;
  std::vector<int> worker_counts{1, 4};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const std::string v = argv[i + 1];
    if (k == "--seconds") {
      seconds = std::stoi(v);
    } else if (k == "--port") {
      port = std::stoi(v);
    } else if (k == "--horizon-ms") {
      g_horizon = milliseconds(std::stoi(v));
    } else if (k == "--ttl-ms") {
      g_ttl = milliseconds(std::stoi(v));
    } else if (k == "--refill-fraction") {
      g_refill_fraction = std::stod(v);
    } else if (k == "--decision-seconds") {
      decision_seconds = std::stod(v);
    } else if (k == "--workers") {
      worker_counts.clear();
      std::stringstream ss(v);
      for (std::string w; std::getline(ss, w, ',');) worker_counts.push_back(std::stoi(w));
    } else {
      fmt::print(stderr, "unknown option {}\n", k);
      return 2;
    }
  }
  try {
    OwnRedis own;
    if (port == 0) startRedis(own, port = 46379 + static_cast<int>(getpid() % 1000));
    const std::vector<Scenario> scenarios{
        {"provider_400", pacer::RateLimit{400, 40}, std::nullopt, 2, 400, 40},
        {"campaign_5000", std::nullopt, pacer::RateLimit{5000, 500}, 1, 5000, 500},
    };
    nlohmann::json out;
    out["redis_port"] = port;
    out["lease_horizon_ms"] = std::chrono::duration<double, std::milli>(g_horizon).count();
    out["lease_refill_fraction"] = g_refill_fraction;
    out["lease_ttl_ms"] = std::chrono::duration<double, std::milli>(g_ttl).count();
    for (const Scenario& sc : scenarios)
      for (int w : worker_counts) {
        fmt::print(stderr, "running {} with {} worker(s) for {} s\n", sc.name, w, seconds);
        out["runs"].push_back(runScenario(sc, port, w, seconds));
      }
    const double lease = leaseDecisionsPerSecond(port, decision_seconds);
    const double seed = seedDecisionsPerSecond(port, decision_seconds);
    out["decisions_per_second"] = {{"lease", lease}, {"seed_evalsha_per_message", seed}, {"ratio", lease / seed}};
    fmt::print("{}\n", out.dump(2));
  } catch (const std::exception& e) {
    fmt::print(stderr, "quota_bench: {}\n", e.what());
    return 1;
  }
  return 0;
}
