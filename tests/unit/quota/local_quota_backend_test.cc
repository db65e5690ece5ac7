#include <gtest/gtest.h>

#include <algorithm>
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

// As lease.lua: a limit it cannot hold is a typed refusal, never a grant
// (and never a time past what a MonoTime holds).
TEST(LocalQuotaBackend, ALimitItCannotHoldIsATypedRefusalNotAGrant) {
  auto b = makeLocalQuotaBackend();
  LeaseReply r = one(*b, req(5, {-1, 5}), MonoTime{});
  EXPECT_EQ(r.status, QuotaStatus::kRefusedLimit);
  EXPECT_EQ(r.refusal, LimitRefusal::kOutOfRange);
  EXPECT_EQ(r.granted, 0u);
  r = one(*b, req(5, {1e-300, 1}), MonoTime{} + std::chrono::seconds(1));
  EXPECT_EQ(r.status, QuotaStatus::kRefusedLimit);
  EXPECT_EQ(r.refusal, LimitRefusal::kRefillTooLong);
  EXPECT_EQ(r.granted, 0u);
  EXPECT_EQ(one(*b, req(5, {100, 5}), MonoTime{} + std::chrono::seconds(1)).granted, 5u) << "a good limit still grants";
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

// Tokens ahead of time: a bucket may owe up to rate * lookahead; each grant
// says where its tokens start, so the next one starts after them.
TEST(LocalQuotaBackend, GrantsAheadOfTimeUpToTheLookaheadAndSaysWhereTheyStart) {
  auto b = makeLocalQuotaBackend();
  const MonoTime t0{};
  LeaseRequest r = req(50, {1e6, 1e6}, RateLimit{100, 5});
  r.lookahead = std::chrono::seconds(1);
  r.min_grant = 20;
  LeaseReply a = one(*b, r, t0);
  EXPECT_EQ(a.granted, 50u);
  EXPECT_DOUBLE_EQ(a.start_tokens, 5.0) << "the provider held its burst";
  EXPECT_EQ(a.binding, 1u);
  LeaseReply c = one(*b, r, t0);
  EXPECT_EQ(c.granted, 50u);
  EXPECT_DOUBLE_EQ(c.start_tokens, -45.0) << "owed to the first grant: its tokens are due 0.45 s on";
  // 5 + 100 * 1 s - 100 taken: 5 fit, below the minimum of 20.
  LeaseReply d = one(*b, r, t0);
  EXPECT_EQ(d.granted, 0u);
  EXPECT_EQ(d.next_token, milliseconds(150)) << "until 20 fit";
  EXPECT_EQ(one(*b, r, t0 + milliseconds(150)).granted, 20u);
}

// Whatever the workers ask, the tokens granted with their due times never put
// more than rate * w + burst into any window (the schedule the leases follow).
TEST(LocalQuotaBackend, TokensAheadOfTimeAreDueNoFasterThanTheRate) {
  auto b = makeLocalQuotaBackend();
  const double rate = 400, burst = 5;
  std::vector<double> due;  // seconds
  std::uint64_t seed = 11;
  for (int tick = 0; tick < 10000; ++tick) {  // 10 s of 1 ms ticks, demand far above the rate
    const MonoTime now = MonoTime{} + milliseconds(tick);
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    LeaseRequest r = req(1 + (seed >> 33) % 60, {1e6, 1e6}, RateLimit{rate, burst});
    r.lookahead = milliseconds(500);
    r.min_grant = 1;
    const LeaseReply reply = one(*b, r, now);
    for (std::uint64_t k = 1; k <= reply.granted; ++k)
      due.push_back(tick / 1000.0 + std::max(0.0, (static_cast<double>(k) - reply.start_tokens) / reply.schedule_rate));
  }
  std::sort(due.begin(), due.end());
  std::size_t lo = 0;
  for (std::size_t hi = 0; hi < due.size(); ++hi) {
    while (due[hi] - due[lo] >= 1.0) ++lo;
    ASSERT_LE(static_cast<double>(hi - lo + 1), rate + burst + 1e-9) << "window ending at " << due[hi];
  }
  EXPECT_GE(static_cast<double>(due.size()), rate * 10 * 0.99);
}

// Two levels: a campaign (300/s, its bucket full) under a provider (400/s,
// owing 100 tokens to earlier grants). The provider binds: the grant's tokens
// follow its schedule (after the debt, 400/s), not the campaign's slower rate,
// and none is due before either level would have held it.
TEST(LocalQuotaBackend, AGrantFollowsTheBindingLevelsSchedule) {
  auto b = makeLocalQuotaBackend();
  const MonoTime t0{};
  LeaseRequest debt = req(105, {1e6, 1e6}, RateLimit{400, 5});
  debt.lookahead = std::chrono::seconds(1);
  ASSERT_EQ(one(*b, debt, t0).granted, 105u);  // the provider now owes 100
  LeaseRequest r = req(25, {300, 4}, RateLimit{400, 5});
  r.lookahead = std::chrono::seconds(1);
  const LeaseReply g = one(*b, r, t0);
  ASSERT_EQ(g.granted, 25u);
  EXPECT_NEAR(g.schedule_rate, 400, 1e-9);
  EXPECT_NEAR(g.start_tokens, -100, 1e-9);
  for (int k = 1; k <= 25; ++k) {
    const double due = (k - g.start_tokens) / g.schedule_rate;
    const double provider = (k + 100) / 400.0;               // when the provider holds token k
    const double campaign = std::max(0.0, (k - 4) / 300.0);  // when the campaign does
    EXPECT_GE(due + 1e-12, std::max(provider, campaign)) << k;
    EXPECT_NEAR(due, provider, 1e-9) << k;
  }
}

TEST(LocalQuotaBackend, CountsTheWorkersThatAskedInTheLastTwoSeconds) {
  auto b = makeLocalQuotaBackend();
  LeaseRequest r = req(1, {1e6, 1e6}, RateLimit{100, 5});
  const MonoTime t0{};
  for (std::uint64_t w : {7u, 8u, 9u}) {
    r.worker = w;
    one(*b, r, t0);
  }
  r.worker = 7;
  EXPECT_EQ(one(*b, r, t0 + milliseconds(1500)).active_workers, 3u);
  EXPECT_EQ(one(*b, r, t0 + milliseconds(2500)).active_workers, 1u) << "8 and 9 went quiet";
  r.worker = 0;
  EXPECT_EQ(one(*b, r, t0 + milliseconds(2500)).active_workers, 0u) << "not counted";
}

// An adaptive provider level: requests carry the provider's settings; the
// state is the scope's, whoever asks.
LeaseRequest adaptiveReq(std::uint64_t want, Nanos throttled = Nanos{-1}, std::uint64_t ok = 0,
                         std::uint64_t faults = 0) {
  LeaseRequest r = req(want, {1e6, 1e6}, RateLimit{400, 40});
  r.adaptive = AdaptiveLevel{1, AdaptiveRateOptions{}, BreakerOptions{}, throttled, ok, faults};
  return r;
}

// The scenario of RedisQuota.AJudgedCutAndItsRestoreActInRedisAsInAdaptiveRate,
// on simulated time: a judged cut (keep) and its restore.
TEST(LocalQuotaBackend, AJudgedCutAndItsRestoreActAsInAdaptiveRate) {
  auto b = makeLocalQuotaBackend();
  const MonoTime t0 = MonoTime{} + std::chrono::seconds(10);
  auto judged = [](Nanos throttled, double keep, double restore) {
    LeaseRequest r = adaptiveReq(0, throttled);
    r.adaptive->keep = keep;
    r.adaptive->restore = restore;
    return r;
  };
  LeaseReply r = one(*b, judged(Nanos{0}, 0.75, 0), t0);
  EXPECT_NEAR(r.effective_rate, 400 * 0.75 * 0.98, 1e-9);
  EXPECT_EQ(r.paused, Nanos{0});
  // Another worker's measured cut on the same moment: the round's keeps are
  // averaged, from the rate before the round, never one cut on top of another.
  r = one(*b, judged(Nanos{0}, 0.65, 0), t0);
  EXPECT_NEAR(r.effective_rate, 400 * 0.7 * 0.98, 1e-9) << "the mean of 0.75 and 0.65 of 400";
  // A judge's first step back (keep 1) in the round changes nothing.
  r = one(*b, judged(Nanos{0}, 1.0, 0), t0);
  EXPECT_NEAR(r.effective_rate, 274.4, 1e-9);
  r = one(*b, judged(Nanos{-1}, 0, 0), t0 + milliseconds(500));
  EXPECT_NEAR(r.effective_rate, 274.4 + 0.5 * 5.6 / 30, 1e-9) << "only the slow probe towards 280";
  r = one(*b, judged(Nanos{-1}, 0, 1.0), t0 + milliseconds(500));  // noise: the limit is 400 again
  r = one(*b, judged(Nanos{-1}, 0, 0), t0 + milliseconds(1000));
  EXPECT_NEAR(r.effective_rate, 274.4 + 0.5 * 5.6 / 30 + 0.5 * 100, 1e-9) << "fast again, 100/s per second";
  // Another cut within the round (5 s) after the restore: averaged only
  // with what came after it, from the rate before the round.
  r = one(*b, judged(Nanos{0}, 0.9, 0), t0 + milliseconds(1400));
  EXPECT_NEAR(r.effective_rate, 400 * 0.9 * 0.98, 1e-9) << "0.9 of 400 (the restored keeps forgotten)";
  // A new round: a cut, then a restore as far as 0.9 of the rate at that cut.
  r = one(*b, judged(Nanos{0}, 0.5, 0), t0 + milliseconds(6000));
  const double at_cut = r.effective_rate / (0.5 * 0.98);
  one(*b, judged(Nanos{-1}, 0, 0.9), t0 + milliseconds(6000));  // a ceiling under the noise after all
  r = one(*b, judged(Nanos{-1}, 0, 0), t0 + std::chrono::seconds(10));
  EXPECT_NEAR(r.effective_rate, 0.9 * at_cut * 0.98, 1.0) << "back to just under 0.9 of the rate at the cut";
}

// One worker judges the scope's throttles for all: the first to report
// answers, until it reports none for two seconds; only its noise level is
// kept, and every worker hears it.
TEST(LocalQuotaBackend, OneWorkerJudgesForAllUntilItFallsSilent) {
  auto b = makeLocalQuotaBackend();
  const MonoTime t0 = MonoTime{} + std::chrono::seconds(10);
  auto ask = [&](std::uint64_t worker, std::uint64_t answers, double noise, MonoTime now) {
    LeaseRequest r = adaptiveReq(1, Nanos{-1}, answers);
    r.worker = worker;
    r.adaptive->noise = noise;
    return one(*b, r, now);
  };
  EXPECT_FALSE(ask(1, 0, -1, t0).judge) << "no answers yet: nobody judges";
  EXPECT_TRUE(ask(2, 5, -1, t0).judge) << "the first to report answers";
  EXPECT_FALSE(ask(1, 5, -1, t0).judge);
  EXPECT_TRUE(ask(2, 0, -1, t0 + milliseconds(10)).judge) << "kept while asking";
  EXPECT_EQ(ask(1, 5, 0.3, t0 + milliseconds(20)).noise, 0) << "a worker that does not judge sets no noise";
  EXPECT_DOUBLE_EQ(ask(2, 5, 0.1, t0 + milliseconds(30)).noise, 0.1);
  EXPECT_DOUBLE_EQ(ask(1, 5, -1, t0 + milliseconds(40)).noise, 0.1) << "heard by every worker";
  // Worker 2 reports no answers for two seconds (it asks, it sends nothing):
  // the next worker to report answers judges.
  EXPECT_TRUE(ask(2, 0, -1, t0 + milliseconds(2000)).judge);
  EXPECT_FALSE(ask(1, 5, -1, t0 + milliseconds(2020)).judge) << "within two seconds of its last answers";
  EXPECT_TRUE(ask(1, 5, -1, t0 + milliseconds(2040)).judge);
  EXPECT_FALSE(ask(2, 5, -1, t0 + milliseconds(2050)).judge);
  EXPECT_DOUBLE_EQ(ask(2, 5, -1, t0 + milliseconds(2060)).noise, 0.1) << "the noise outlives its judge";
  // Without a worker id (or an adaptive level) each judges alone.
  EXPECT_TRUE(ask(0, 5, -1, t0 + milliseconds(2070)).judge);
  EXPECT_TRUE(one(*b, req(1, {1e6, 1e6}, RateLimit{400, 40}), t0).judge);
}

// Every worker reports its own answers per second; the backend sums the
// last report of each worker heard in the last two seconds, and knows the
// sum only when every active worker's is known (lease.lua does the same);
// the throttles of one recipient are summed whether or not.
TEST(LocalQuotaBackend, SumsEveryWorkersAnswersPerSecond) {
  auto b = makeLocalQuotaBackend();
  const MonoTime t0 = MonoTime{} + std::chrono::seconds(10);
  auto ask = [&](std::uint64_t worker, AcceptedRates rates, MonoTime now) {
    LeaseRequest r = adaptiveReq(1, Nanos{-1}, 5);
    r.worker = worker;
    r.adaptive->rates = rates;
    return one(*b, r, now).provider_rates;
  };
  AcceptedRates sum = ask(1, AcceptedRates{100, 20}, t0);
  ASSERT_TRUE(sum.known()) << "one worker: its own";
  EXPECT_DOUBLE_EQ(sum.accepted, 100);
  sum = ask(2, AcceptedRates{150, 30, 2}, t0 + milliseconds(10));
  ASSERT_TRUE(sum.known());
  EXPECT_DOUBLE_EQ(sum.accepted, 250);
  EXPECT_DOUBLE_EQ(sum.throttled, 50);
  EXPECT_DOUBLE_EQ(sum.recipient, 2) << "one recipient's throttles: their own sum";
  sum = ask(1, AcceptedRates{110, 0, 1.5}, t0 + milliseconds(20));
  EXPECT_DOUBLE_EQ(sum.accepted, 260) << "a worker's last report replaces its earlier one";
  EXPECT_DOUBLE_EQ(sum.throttled, 30);
  EXPECT_DOUBLE_EQ(sum.recipient, 3.5);
  sum = ask(3, AcceptedRates{-1, -1, 4}, t0 + milliseconds(30));
  EXPECT_FALSE(sum.known()) << "one worker's second held a pause";
  EXPECT_DOUBLE_EQ(sum.recipient, 7.5) << "the recipients' throttles are summed all the same";
  EXPECT_FALSE(ask(1, AcceptedRates{110, 0}, t0 + milliseconds(40)).known());
  // Worker 3 falls silent; after two seconds only 1 and 2 ask and report.
  ask(2, AcceptedRates{150, 0}, t0 + milliseconds(2100));
  sum = ask(1, AcceptedRates{110, 0}, t0 + milliseconds(2110));
  ASSERT_TRUE(sum.known());
  EXPECT_DOUBLE_EQ(sum.accepted, 260);
  ask(0, AcceptedRates{}, t0 + milliseconds(2120));  // without a worker id: not counted, the reports kept
  sum = ask(2, AcceptedRates{150, 0}, t0 + milliseconds(2130));
  ASSERT_TRUE(sum.known()) << "a request without a worker id wiped the workers' reports";
  EXPECT_DOUBLE_EQ(sum.accepted, 260);
}

TEST(LocalQuotaBackend, AThrottleReportSlowsAndPausesTheScopeForEveryRequest) {
  auto b = makeLocalQuotaBackend();
  const MonoTime t0 = MonoTime{} + std::chrono::seconds(10);
  LeaseReply r = one(*b, adaptiveReq(10), t0);
  EXPECT_EQ(r.granted, 10u);
  EXPECT_DOUBLE_EQ(r.effective_rate, 400.0);
  EXPECT_EQ(r.paused, Nanos{0});
  // One worker reports a 429 with Retry-After 1 s: down to 0.8 of it, paused.
  r = one(*b, adaptiveReq(0, std::chrono::seconds(1)), t0);
  EXPECT_DOUBLE_EQ(r.effective_rate, 320.0);
  EXPECT_EQ(r.paused, std::chrono::seconds(1));
  // Another worker, half-way through: nothing, and told how long is left.
  r = one(*b, adaptiveReq(10), t0 + milliseconds(500));
  EXPECT_EQ(r.granted, 0u);
  EXPECT_EQ(r.paused, milliseconds(500));
  EXPECT_EQ(r.next_token, milliseconds(500));
  EXPECT_DOUBLE_EQ(r.effective_rate, 320.0) << "no climb during a pause";
  // After it: the bucket's burst shrank with the rate (40 * 320/400 = 32).
  r = one(*b, adaptiveReq(100), t0 + milliseconds(1001));
  EXPECT_EQ(r.paused, Nanos{0});
  EXPECT_GE(r.granted, 31u);
  EXPECT_LE(r.granted, 33u);
}

TEST(LocalQuotaBackend, ReportsWithinTheHoldDecreaseOnceAndTheRateSettlesThenClimbs) {
  auto b = makeLocalQuotaBackend();
  const MonoTime t0 = MonoTime{} + std::chrono::seconds(10);
  one(*b, adaptiveReq(0, Nanos{0}), t0);
  LeaseReply r = one(*b, adaptiveReq(0, Nanos{0}), t0 + milliseconds(100));
  // 320, climbing 100/s (a quarter of the ceiling) for 0.1 s; no second decrease.
  EXPECT_NEAR(r.effective_rate, 330.0, 1e-6) << "several workers' 429s of one burst count once";
  r = one(*b, adaptiveReq(0, Nanos{0}), t0 + milliseconds(400));
  EXPECT_NEAR(r.effective_rate, 360 * 0.64, 1e-6) << "past the hold, below 392: the limit dropped to 360";
  // Fast (100/s) to 0.98 * 360 = 352.8 in 1.224 s, then slowly (30 s) towards 360.
  r = one(*b, adaptiveReq(0), t0 + milliseconds(1400));
  EXPECT_NEAR(r.effective_rate, 330.4, 0.5);
  r = one(*b, adaptiveReq(0), t0 + milliseconds(11400));
  EXPECT_NEAR(r.effective_rate, 352.8 + (11.0 - 1.224) / 30 * 7.2, 0.05)
      << "the probe is slow: no straight climb back into the limit";
  double last = r.effective_rate;
  // Then on slowly to 4% past it (two more probe times, 92 s), then probes
  // from there, each four times as quick (15 s, then 3.75 s to the ceiling).
  for (int s = 12; s <= 120; ++s) {
    r = one(*b, adaptiveReq(0), t0 + milliseconds(400) + std::chrono::seconds(s));
    EXPECT_GE(r.effective_rate, last);
    EXPECT_LE(r.effective_rate, 400.0);
    if (s == 96) {
      EXPECT_LT(r.effective_rate, 390.0) << "a new probe past the band, not the fast climb";
    }
    last = r.effective_rate;
  }
  EXPECT_DOUBLE_EQ(last, 400.0) << "no 429 where the last came: the limit moved, climb to the ceiling";
}

// The circuit breaker counts every worker's answers: half faults over 20
// answers open it; the scope pauses for the cooldown and slows down.
TEST(LocalQuotaBackend, SustainedFaultsFromAllWorkersOpenTheSharedBreaker) {
  auto b = makeLocalQuotaBackend();
  const MonoTime t0 = MonoTime{} + std::chrono::seconds(10);
  LeaseReply r = one(*b, adaptiveReq(0, Nanos{-1}, 9, 1), t0);  // 10% faults: nothing happens
  EXPECT_FALSE(r.circuit_open);
  r = one(*b, adaptiveReq(0, Nanos{-1}, 1, 9), t0 + milliseconds(10));  // now 10 of 20
  EXPECT_TRUE(r.circuit_open);
  EXPECT_EQ(r.paused, std::chrono::seconds(5));
  EXPECT_DOUBLE_EQ(r.effective_rate, 320.0);
  r = one(*b, adaptiveReq(10), t0 + milliseconds(2010));
  EXPECT_EQ(r.granted, 0u);
  EXPECT_TRUE(r.circuit_open);
  r = one(*b, adaptiveReq(10), t0 + milliseconds(5011));
  EXPECT_FALSE(r.circuit_open);
  EXPECT_GT(r.granted, 0u) << "half-open: it sends again, judged on fresh answers";
  // Faults again at once: open again, for twice as long.
  r = one(*b, adaptiveReq(0, Nanos{-1}, 0, 20), t0 + milliseconds(5100));
  EXPECT_TRUE(r.circuit_open);
  EXPECT_EQ(r.paused, std::chrono::seconds(10));
}

}  // namespace
}  // namespace pacer
