// WorkerCore's per-message cost on its limits path: one provider, N
// campaigns, a sink that answers every message at once and a ledger that
// keeps nothing, stepped every 5 ms of simulated time (one benchmark
// iteration = one step). Two paths:
//   - direct: no global quota (WorkerOptions::quota null);
//   - leaser: the in-process quota backend (makeLocalQuotaBackend()), counted.
// The provider's rate binds (100,000/s: 500 a step); each campaign's rate is
// twice its share, so it never binds alone. Arguments: campaigns, and the
// backlog kept queued in steps of the provider's rate (2: about one message
// per campaign at 1000 campaigns; 40: twenty). Counters: msgs_per_s (messages
// sent per second of this process's CPU), round_trips_per_msg (backend
// acquire() calls per message sent), requests_per_msg (lease requests),
// empty_per_msg (of them, requests for tokens answered with none).
//
//   build/default/bench/worker_core_bench --benchmark_repetitions=5
//       (add --benchmark_report_aggregates_only=true for medians only)
//
// bench/worker_core_ab.sh runs two builds of it alternately (A/B in one sitting).
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "pacer/ledger.h"
#include "pacer/quota.h"
#include "pacer/sink.h"
#include "pacer/worker.h"

namespace pacer {
namespace {

constexpr double kProviderRate = 100'000;
constexpr auto kTick = std::chrono::milliseconds(5);

class CountingLedger final : public LedgerInterface {
 public:
  std::size_t record(std::span<const DeliveryRecord> rows) override {
    rows_ += rows.size();
    return rows.size();
  }
  std::vector<std::int64_t> finishedOffsets(const std::string&, std::int32_t, std::int64_t, std::int64_t) override {
    return {};
  }
  void recordReceipts(std::span<const DeliveryReceipt>) override {}
  std::size_t rows_ = 0;
};

// Accepts everything; answers at the next poll().
class AnsweringSink final : public SinkInterface {
 public:
  bool submit(const Message&, std::uint64_t ticket) override {
    if (tickets_.size() >= 100'000) return false;
    tickets_.push_back(ticket);
    ++sent_;
    return true;
  }
  void poll(std::vector<SendResult>& out) override {
    for (std::uint64_t t : tickets_) {
      SendResult r;
      r.ticket = t;
      out.push_back(std::move(r));
    }
    tickets_.clear();
  }
  std::size_t inFlight() const override { return tickets_.size(); }
  std::size_t maxInFlight() const override { return 100'000; }
  std::vector<std::uint64_t> tickets_;
  std::uint64_t sent_ = 0;
};

class CountingBackend final : public QuotaBackend {
 public:
  void acquire(std::span<const LeaseRequest> requests, MonoTime now, std::span<LeaseReply> replies) noexcept override {
    ++calls_;
    requests_ += requests.size();
    inner_->acquire(requests, now, replies);
    for (std::size_t i = 0; i < requests.size(); ++i) empty_ += requests[i].want > 0 && replies[i].granted == 0;
  }
  QuotaBackendPtr inner_ = makeLocalQuotaBackend();
  std::uint64_t calls_ = 0, requests_ = 0, empty_ = 0;  // empty_: asked for tokens, granted none
};

void BM_WorkerCoreStep(benchmark::State& state, bool leaser) {
  const int campaigns = static_cast<int>(state.range(0));
  const double backlog_steps = static_cast<double>(state.range(1));
  CountingLedger ledger;
  AnsweringSink sink;
  CountingBackend backend;
  WorkerOptions o;
  if (leaser) o.quota = &backend;
  MonoTime now = monoAt(std::chrono::seconds(1000));
  WorkerCore core(o, ledger, sink, nullptr, now);
  core.upsertProvider(ProviderInfo{"p", RateLimit{kProviderRate, kProviderRate / 100}}, now);
  const double rate = 2 * kProviderRate / campaigns;
  std::vector<std::string> ids;
  for (int i = 0; i < campaigns; ++i) {
    CampaignInfo c;
    c.id = "c" + std::to_string(i);
    c.provider = "p";
    c.limit = RateLimit{rate, std::max(1.0, rate / 100)};
    core.upsertCampaign(c, now);
    ids.push_back(c.id);
  }
  core.assign(TopicPartition{"t", 0}, {});
  const std::uint64_t backlog = static_cast<std::uint64_t>(backlog_steps * kProviderRate * 0.005);
  std::int64_t offset = 0;
  RawMessage raw;
  raw.value = "p";
  auto top_up = [&] {
    while (static_cast<std::uint64_t>(offset) < sink.sent_ + backlog) {
      raw.position = Position{"t", 0, offset};
      raw.key = ids[static_cast<std::size_t>(offset) % ids.size()];
      raw.headers.assign({{"message-id", "m" + std::to_string(offset)}});
      core.offer(raw, now);
      ++offset;
    }
  };
  // Warm up: leases granted, queues full, before the timed steps.
  for (int i = 0; i < 200; ++i) {
    top_up();
    now += kTick;
    core.step(now);
  }
  const std::uint64_t sent0 = sink.sent_, calls0 = backend.calls_, req0 = backend.requests_, empty0 = backend.empty_;
  for (auto _ : state) {
    top_up();
    now += kTick;
    core.step(now);
  }
  const double sent = static_cast<double>(sink.sent_ - sent0);
  state.SetItemsProcessed(static_cast<std::int64_t>(sent));
  state.counters["msgs_per_s"] = benchmark::Counter(sent, benchmark::Counter::kIsRate);
  state.counters["msgs_per_step"] = sent / static_cast<double>(state.iterations());
  state.counters["round_trips_per_msg"] = sent > 0 ? static_cast<double>(backend.calls_ - calls0) / sent : 0;
  state.counters["requests_per_msg"] = sent > 0 ? static_cast<double>(backend.requests_ - req0) / sent : 0;
  state.counters["empty_per_msg"] = sent > 0 ? static_cast<double>(backend.empty_ - empty0) / sent : 0;
}

void Shapes(benchmark::internal::Benchmark* b) {
  for (int n : {1, 10, 100, 1000}) b->Args({n, 2});
  b->Args({1000, 40});
}
BENCHMARK_CAPTURE(BM_WorkerCoreStep, direct, false)->Apply(Shapes);
BENCHMARK_CAPTURE(BM_WorkerCoreStep, leaser, true)->Apply(Shapes);

}  // namespace
}  // namespace pacer

BENCHMARK_MAIN();
