// pacer-sim's provider on a bad day: random throttles and faults, a real
// ceiling below the configured rate, and the controllers against them, on
// the simulated clock.
#include "provider_model.h"

#include <gtest/gtest.h>

#include <numeric>

#include "pacer/sim/simulator.h"

namespace pacer::sim {
namespace {

const SeriesResult& provider(const SimResult& r, const std::string& id) {
  for (const SeriesResult& p : r.providers)
    if (p.id == id) return p;
  throw std::runtime_error("no provider " + id);
}

// Accepted per second over [from, to).
double acceptedPerS(const SeriesResult& p, std::size_t from, std::size_t to) {
  return static_cast<double>(std::accumulate(p.per_s.begin() + from, p.per_s.begin() + to, std::uint64_t{0})) /
         static_cast<double>(to - from);
}

std::uint64_t throttlesIn(const SeriesResult& p, std::size_t from, std::size_t to) {
  const auto& t = p.answers->throttled_per_s;
  return std::accumulate(t.begin() + from, t.begin() + to, std::uint64_t{0});
}

// The most the provider accepted in any one-second window (from per-tick bins).
std::uint64_t maxAcceptedInASecond(const SeriesResult& p, std::size_t ticks_per_s) {
  std::uint64_t best = 0, sum = 0;
  for (std::size_t k = 0; k < p.bins.size(); ++k) {
    sum += p.bins[k];
    if (k >= ticks_per_s) sum -= p.bins[k - ticks_per_s];
    best = std::max(best, sum);
  }
  return best;
}

TEST(SimProviderModel, RandomThrottlesKeepTheRateWhereTheOldControllerCollapsed) {
  const SimResult r = simulate(parseScenario(R"(
duration_s: 120
tick_ms: 5
providers:
  - {id: judged, rate: 400, throttle_noise: 0.10, fault_noise: 0.05}
  - {id: old, rate: 400, throttle_noise: 0.10, fault_noise: 0.05, controller: per_throttle}
  - {id: fixed, rate: 400, throttle_noise: 0.10, fault_noise: 0.05, controller: fixed}
campaigns: [{id: a, provider: judged}, {id: b, provider: old}, {id: c, provider: fixed}]
)"),
                               false);
  const SeriesResult& judged = provider(r, "judged");
  ASSERT_TRUE(judged.answers);
  EXPECT_DOUBLE_EQ(judged.answers->would_accept, 340);
  // What the provider takes is what it accepts at the configured rate.
  EXPECT_GE(acceptedPerS(judged, 10, 120), 0.95 * 340);
  EXPECT_LE(acceptedPerS(judged, 10, 120), 1.01 * 340);
  EXPECT_GE(judged.answers->noise_verdicts, 1u) << "the first cut was taken back";
  EXPECT_NEAR(judged.answers->noise, 0.10, 0.03);
  // The fixed rate is the upper bound any controller can reach here.
  EXPECT_GE(acceptedPerS(judged, 10, 120), 0.97 * acceptedPerS(provider(r, "fixed"), 10, 120));
  // Every throttle lowering the rate loses most of the quota.
  EXPECT_LT(acceptedPerS(provider(r, "old"), 10, 120), 0.5 * 340);
}

TEST(SimProviderModel, ACeilingBelowTheConfiguredRateIsFoundAndHeldWithFewThrottles) {
  const SimResult r = simulate(parseScenario(R"(
duration_s: 300
tick_ms: 5
providers: [{id: p, rate: 500, capacity: 400}]
campaigns: [{id: a, provider: p}]
)"),
                               true);
  const SeriesResult& p = provider(r, "p");
  EXPECT_GE(acceptedPerS(p, 10, 300), 0.9 * 400);
  EXPECT_LE(maxAcceptedInASecond(p, 200), 400u) << "the provider's own window";
  const double per_min = 60.0 * static_cast<double>(throttlesIn(p, 10, 300)) / 290;
  EXPECT_LE(per_min, 5) << per_min << " throttles a minute after the first 10 s";
  EXPECT_EQ(p.answers->noise_verdicts, 0u);
}

TEST(SimProviderModel, NothingIsLostRefusedMessagesAreRetried) {
  const SimResult r = simulate(parseScenario(R"(
duration_s: 60
tick_ms: 10
providers: [{id: p, rate: 400, capacity: 300, throttle_noise: 0.2, fault_noise: 0.1, retry_s: 0.5}]
campaigns: [{id: a, provider: p, messages: 5000}]
)"),
                               false);
  const SeriesResult& p = provider(r, "p");
  EXPECT_EQ(r.campaigns[0].sent, 5000u) << "every message accepted in the end";
  EXPECT_EQ(p.sent, 5000u);
  EXPECT_EQ(p.answers->attempts, 5000u + p.answers->throttled + p.answers->faults);
  ASSERT_TRUE(r.campaigns[0].finished_s);
}

TEST(SimProviderModel, ScenarioKeysAreChecked) {
  const char* bad[] = {
      "duration_s: 1\nproviders: [{id: p, rate: 10, throttle_noise: 1}]\n",
      "duration_s: 1\nproviders: [{id: p, rate: 10, throttle_noise: 0.6, fault_noise: 0.5}]\n",
      "duration_s: 1\nproviders: [{id: p, rate: 10, capacity: 0}]\n",
      "duration_s: 1\nproviders: [{id: p, rate: 10, capacity: 5, controller: magic}]\n",
      "duration_s: 1\nproviders: [{id: p, rate: 10, controller: fixed}]\n",
      "duration_s: 1\nproviders: [{id: p, capacity: 5}]\n",
  };
  for (const char* s : bad) EXPECT_THROW(parseScenario(s), ScenarioError) << s;
  EXPECT_NO_THROW(parseScenario(
      "duration_s: 1\nproviders: [{id: p, rate: 10, capacity: 5, retry_s: 0.1, seed: 7}]\ncampaigns: [{id: a}]\n"));
}

TEST(SimProviderModel, TheModelAnswersFromItsWindowAndItsNoise) {
  ProviderScenario ps;
  ps.rate = 100;
  ps.capacity = 3;
  ps.controller = ProviderController::kFixed;
  ProviderModel m(ps, MonoTime{});
  const MonoTime t0{};
  for (int i = 0; i < 3; ++i) EXPECT_EQ(m.send(t0), ProviderModel::Answer::kAccepted);
  EXPECT_EQ(m.send(t0 + std::chrono::milliseconds(999)), ProviderModel::Answer::kThrottled);
  EXPECT_EQ(m.send(t0 + std::chrono::seconds(1)), ProviderModel::Answer::kAccepted) << "the window slid";
  EXPECT_DOUBLE_EQ(m.limit(t0).rate_per_s, 100);
}

}  // namespace
}  // namespace pacer::sim
