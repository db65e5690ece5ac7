#include <gtest/gtest.h>

#include <vector>

#include "pacer/quota.h"

namespace pacer {
namespace {

using std::chrono::milliseconds;

LeaseRequest req(std::uint64_t want, RateLimit campaign, std::optional<RateLimit> provider = std::nullopt) {
  LeaseRequest r;
  r.scope = "prov";
  r.levels.push_back(QuotaLevel{"c:one", campaign});
  if (provider) r.levels.push_back(QuotaLevel{"p", *provider});
  r.want = want;
  return r;
}

LeaseReply one(QuotaBackend& b, const LeaseRequest& r, MonoTime now) {
  LeaseReply reply;
  b.acquire(std::span<const LeaseRequest>(&r, 1), now, std::span<LeaseReply>(&reply, 1));
  return reply;
}

TEST(LocalQuotaBackend, GrantsTheMinimumOverEveryLevelAndChargesAll) {
  auto b = makeLocalQuotaBackend();
  const MonoTime t0{};
  // Campaign holds 10, provider 4: grant 4, and both lose 4.
  LeaseReply r = one(*b, req(100, {100, 10}, RateLimit{100, 4}), t0);
  ASSERT_EQ(r.status, QuotaStatus::kOk);
  EXPECT_EQ(r.granted, 4u);
  // The provider is dry; the campaign still has 6 but cannot use them.
  EXPECT_EQ(one(*b, req(100, {100, 10}, RateLimit{100, 4}), t0).granted, 0u);
  // Alone (no provider level) the campaign has exactly its 6 left.
  EXPECT_EQ(one(*b, req(100, {100, 10}), t0).granted, 6u);
}

TEST(LocalQuotaBackend, NextTokenIsTheSlowestLevelsWait) {
  auto b = makeLocalQuotaBackend();
  LeaseReply r = one(*b, req(10, {1000, 10}, RateLimit{10, 10}), MonoTime{});
  EXPECT_EQ(r.granted, 10u);
  EXPECT_GE(r.next_token, milliseconds(99));  // the provider needs 100 ms for one token
  EXPECT_LE(r.next_token, milliseconds(101));
}

TEST(LocalQuotaBackend, RateZeroGrantsNothingAndNeverHasANextToken) {
  auto b = makeLocalQuotaBackend();
  for (int i = 0; i < 100; ++i) {
    LeaseReply r = one(*b, req(5, {0, 50}), MonoTime{} + std::chrono::seconds(i));
    EXPECT_EQ(r.status, QuotaStatus::kOk);
    EXPECT_EQ(r.granted, 0u);
    EXPECT_EQ(r.next_token, kNever);
  }
}

TEST(LocalQuotaBackend, NewRateTakesEffectWithoutRefillingTheBucket) {
  auto b = makeLocalQuotaBackend();
  const MonoTime t0{};
  EXPECT_EQ(one(*b, req(100, {10, 10}), t0).granted, 10u);  // drained
  // A higher rate and burst: the bucket is not reset to full.
  EXPECT_EQ(one(*b, req(100, {1000, 100}), t0).granted, 0u);
  EXPECT_EQ(one(*b, req(100, {1000, 100}), t0 + milliseconds(10)).granted, 10u);  // 1000/s for 10 ms
}

TEST(LocalQuotaBackend, MissingBucketStartsEmptyWhenAsked) {
  auto b = makeLocalQuotaBackend();
  LeaseRequest r = req(100, {100, 50});
  r.fill_new = false;
  EXPECT_EQ(one(*b, r, MonoTime{}).granted, 0u);
  EXPECT_EQ(one(*b, r, MonoTime{} + milliseconds(100)).granted, 10u);
}

TEST(LocalQuotaBackend, InvalidRateIsUnavailableNotAGrant) {
  auto b = makeLocalQuotaBackend();
  LeaseReply r = one(*b, req(5, {-1, 5}), MonoTime{});
  EXPECT_EQ(r.status, QuotaStatus::kUnavailable);
  EXPECT_EQ(r.granted, 0u);
}

// Property: over many simulated ticks with random-ish demand, total grants
// stay within rate*t + burst and, with demand above the rate, above rate*t.
TEST(LocalQuotaBackend, GrantsStayWithinRateTimesTimePlusBurstOverThousandsOfTicks) {
  auto b = makeLocalQuotaBackend();
  const double rate = 400, burst = 40;
  std::uint64_t total = 0;
  std::uint64_t seed = 7;
  for (int tick = 0; tick <= 20000; ++tick) {  // 20 s of 1 ms ticks
    const MonoTime now = MonoTime{} + milliseconds(tick);
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    const std::uint64_t want = (seed >> 33) % 5;  // 0..4 per ms: 2000/s on average, above the rate
    total += one(*b, req(want, {1e6, 1e6}, RateLimit{rate, burst}), now).granted;
    const double t = tick / 1000.0;
    ASSERT_LE(static_cast<double>(total), rate * t + burst + 1e-9) << "tick " << tick;
  }
  EXPECT_GE(static_cast<double>(total), rate * 20.0 * 0.99);
}


// An adaptive provider level: requests carry the provider's AIMD settings;
// the state is the scope's, whoever asks.
LeaseRequest adaptiveReq(std::uint64_t want, Nanos throttled = Nanos{-1}) {
  LeaseRequest r = req(want, {1e6, 1e6}, RateLimit{400, 40});
  r.adaptive = AdaptiveLevel{1, AdaptiveRateOptions{}, throttled};
  return r;
}

TEST(LocalQuotaBackend, AThrottleReportSlowsAndPausesTheScopeForEveryRequest) {
  auto b = makeLocalQuotaBackend();
  const MonoTime t0 = MonoTime{} + std::chrono::seconds(10);
  LeaseReply r = one(*b, adaptiveReq(10), t0);
  EXPECT_EQ(r.granted, 10u);
  EXPECT_DOUBLE_EQ(r.effective_rate, 400.0);
  EXPECT_EQ(r.paused, Nanos{0});
  // One worker reports a 429 with Retry-After 1 s: halved, paused.
  r = one(*b, adaptiveReq(0, std::chrono::seconds(1)), t0);
  EXPECT_DOUBLE_EQ(r.effective_rate, 200.0);
  EXPECT_EQ(r.paused, std::chrono::seconds(1));
  // Another worker, half-way through: nothing, and told how long is left.
  r = one(*b, adaptiveReq(10), t0 + milliseconds(500));
  EXPECT_EQ(r.granted, 0u);
  EXPECT_EQ(r.paused, milliseconds(500));
  EXPECT_EQ(r.next_token, milliseconds(500));
  EXPECT_DOUBLE_EQ(r.effective_rate, 200.0) << "no climb during a pause";
  // After it: the bucket's burst shrank with the rate (40 * 200/400 = 20).
  r = one(*b, adaptiveReq(100), t0 + milliseconds(1001));
  EXPECT_EQ(r.paused, Nanos{0});
  EXPECT_GE(r.granted, 19u);
  EXPECT_LE(r.granted, 21u);
}

TEST(LocalQuotaBackend, ReportsWithinTheHoldDecreaseOnceAndTheRateClimbsBackToTheCeiling) {
  auto b = makeLocalQuotaBackend();
  const MonoTime t0 = MonoTime{} + std::chrono::seconds(10);
  one(*b, adaptiveReq(0, Nanos{0}), t0);
  LeaseReply r = one(*b, adaptiveReq(0, Nanos{0}), t0 + milliseconds(100));
  // 200, climbing 100/s (a quarter of the ceiling) for 0.1 s; no second halving.
  EXPECT_NEAR(r.effective_rate, 210.0, 1e-6) << "several workers' 429s of one burst count once";
  r = one(*b, adaptiveReq(0, Nanos{0}), t0 + milliseconds(400));
  EXPECT_NEAR(r.effective_rate, 120.0, 1e-6) << "past the hold it halves again (from 240)";
  // Healthy from here: fast, then the plateau, then fast to the ceiling, never above.
  double last = r.effective_rate;
  for (int s = 1; s <= 60; ++s) {
    r = one(*b, adaptiveReq(0), t0 + milliseconds(400) + std::chrono::seconds(s));
    EXPECT_GE(r.effective_rate, last);
    EXPECT_LE(r.effective_rate, 400.0);
    last = r.effective_rate;
  }
  EXPECT_DOUBLE_EQ(last, 400.0);
}

}  // namespace
}  // namespace pacer
