// Micro-benchmarks for the core: canDoWork per algorithm against a
// mutex-guarded token bucket (the way Guava's RateLimiter is built), and the
// scheduler's tick cost by number of active campaigns with 100,000 registered.
//
//   build/release/bench/limiter_bench --benchmark_repetitions=9 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <algorithm>
#include <mutex>

#include "pacer/rate_limiter.h"
#include "pacer/scheduler.h"

namespace {

using pacer::Algorithm;
using pacer::MonoTime;
using pacer::Nanos;

// Every benchmark moves time 700 ns per call at 1e6 units/s, so about 70% of
// calls are granted: both branches are exercised.
constexpr double kRate = 1e6;
constexpr std::int64_t kStepNs = 700;

void BM_CanDoWork(benchmark::State& state, Algorithm algorithm) {
  pacer::LimiterOptions options;
  options.algorithm = algorithm;
  options.max_lateness = std::chrono::milliseconds(1);
  auto limiter = pacer::makeLimiter(options, {kRate, 100}, MonoTime{});
  std::int64_t t = 0;
  std::uint64_t granted = 0;
  for (auto _ : state) {
    t += kStepNs;
    granted += limiter->canDoWork(MonoTime{Nanos{t}}) ? 1 : 0;
  }
  benchmark::DoNotOptimize(granted);
  state.counters["granted"] =
      benchmark::Counter(static_cast<double>(granted) / static_cast<double>(state.iterations()));
}
BENCHMARK_CAPTURE(BM_CanDoWork, token_bucket, Algorithm::kTokenBucket);
BENCHMARK_CAPTURE(BM_CanDoWork, leaky_bucket, Algorithm::kLeakyBucket);
BENCHMARK_CAPTURE(BM_CanDoWork, fixed_window, Algorithm::kFixedWindow);
BENCHMARK_CAPTURE(BM_CanDoWork, sliding_log, Algorithm::kSlidingLog);
BENCHMARK_CAPTURE(BM_CanDoWork, sliding_window, Algorithm::kSlidingWindow);

// The baseline: the textbook refill-then-take token bucket with its state
// behind a std::mutex, as Guava's RateLimiter synchronises every call.
class MutexTokenBucket {
 public:
  MutexTokenBucket(double rate_per_s, double burst) : rate_per_ns_(rate_per_s / 1e9), burst_(burst), tokens_(burst) {}
  bool canDoWork(std::int64_t now_ns) {
    std::lock_guard<std::mutex> lock(mu_);
    if (now_ns > last_ns_) {
      tokens_ = std::min(burst_, tokens_ + static_cast<double>(now_ns - last_ns_) * rate_per_ns_);
      last_ns_ = now_ns;
    }
    if (tokens_ < 1.0) return false;
    tokens_ -= 1.0;
    return true;
  }

 private:
  std::mutex mu_;
  double rate_per_ns_;
  double burst_;
  double tokens_;
  std::int64_t last_ns_ = 0;
};

void BM_CanDoWork_MutexBaseline(benchmark::State& state) {
  MutexTokenBucket limiter(kRate, 100);
  std::int64_t t = 0;
  std::uint64_t granted = 0;
  for (auto _ : state) {
    t += kStepNs;
    granted += limiter.canDoWork(t) ? 1 : 0;
  }
  benchmark::DoNotOptimize(granted);
  state.counters["granted"] =
      benchmark::Counter(static_cast<double>(granted) / static_cast<double>(state.iterations()));
}
BENCHMARK(BM_CanDoWork_MutexBaseline);

// One scheduler tick with state.range(0) active campaigns out of 100,000
// registered: each has a 1000/s token bucket and one of 10 providers (20,000
// to 110,000/s); the worker can dispatch 5,000 per 10 ms tick, so at 10,000
// active campaigns the capacity and some providers bind.
void BM_SchedulerTick(benchmark::State& state) {
  const auto active = static_cast<int>(state.range(0));
  constexpr int kRegistered = 100'000;
  pacer::Scheduler scheduler(pacer::SchedulerOptions{});
  std::vector<pacer::ProviderId> providers;
  for (int p = 0; p < 10; ++p) {
    const double rate = 20'000.0 + 10'000.0 * p;
    providers.push_back(scheduler.addProvider({pacer::RateLimit{rate, rate / 100 + 1}}, MonoTime{}));
  }
  const int step = kRegistered / active;
  for (int i = 0; i < kRegistered; ++i) {
    const auto id = scheduler.addCampaign({pacer::RateLimit{1000, 11}, 1.0, providers[(i / step) % 10]}, MonoTime{});
    // Spread the active ones over the id space.
    if (i % step == 0) scheduler.addBacklog(id, std::uint64_t{1} << 40);
  }
  std::int64_t t = 0;
  std::uint64_t granted = 0;
  for (auto _ : state) {
    t += 10'000'000;
    for (const pacer::Grant& g : scheduler.tick(MonoTime{Nanos{t}}, 5000)) granted += g.count;
  }
  state.counters["active"] = static_cast<double>(scheduler.activeCount());
  state.counters["granted/tick"] = static_cast<double>(granted) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_SchedulerTick)->Arg(1)->Arg(100)->Arg(10'000)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
