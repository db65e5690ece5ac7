// What the admin listener costs pacerd's loop: one snapshot build (every
// 250 ms on the loop thread) and one render (per scrape, on the listener's
// thread), for N campaigns with traffic on this worker.
//   build/release/bench/admin_bench
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "pacer/admin/metrics.h"

namespace {

struct Inputs {
  pacer::WorkerStats w;
  std::vector<pacer::CampaignStats> campaigns;
  std::vector<pacer::ProviderStats> providers;
  std::vector<pacer::admin::PartitionMetrics> partitions;
};

Inputs inputs(int n) {
  Inputs in;
  for (int i = 0; i < n; ++i) {
    pacer::CampaignStats c;
    c.id = "campaign-" + std::to_string(i);
    c.provider = "sms-" + std::to_string(i % 4);
    c.limit = pacer::RateLimit{100, 2};
    c.sent = 1000 + i;
    c.queued = 10;
    in.campaigns.push_back(c);
  }
  for (int p = 0; p < 4; ++p) {
    pacer::ProviderStats s;
    s.id = "sms-" + std::to_string(p);
    s.ceiling = 400;
    s.effective = 400;
    in.providers.push_back(s);
  }
  for (int p = 0; p < 8; ++p) in.partitions.push_back({"messages", p, 1000, 1200});
  return in;
}

void BM_BuildSnapshot(benchmark::State& state) {
  const Inputs in = inputs(static_cast<int>(state.range(0)));
  pacer::admin::SnapshotBuilder b("0", "null", "local", 0);
  pacer::MonoTime now{};
  for (auto _ : state) {
    now += std::chrono::milliseconds(250);
    auto s = b.build(now, in.w, in.campaigns, in.providers, nullptr, in.partitions, true, false);
    benchmark::DoNotOptimize(s);
  }
}
BENCHMARK(BM_BuildSnapshot)->Arg(20)->Arg(1000);

void BM_RenderMetrics(benchmark::State& state) {
  const Inputs in = inputs(static_cast<int>(state.range(0)));
  pacer::admin::SnapshotBuilder b("0", "null", "local", 0);
  const auto s = b.build(pacer::MonoTime{}, in.w, in.campaigns, in.providers, nullptr, in.partitions, true, false);
  for (auto _ : state) {
    std::string text = pacer::admin::renderMetrics(s);
    benchmark::DoNotOptimize(text);
  }
}
BENCHMARK(BM_RenderMetrics)->Arg(20)->Arg(1000);

}  // namespace

BENCHMARK_MAIN();
