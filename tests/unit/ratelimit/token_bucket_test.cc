#include "token_bucket.h"

#include <gtest/gtest.h>

#include <random>

#include "support/series.h"

namespace pacer::ratelimit {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

MonoTime at(Nanos t) { return monoAt(t); }

TEST(TokenBucket, StartsFullWithBurstTokens) {
  TokenBucket tb({100, 5}, at(Nanos{0}));
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(tb.canDoWork(at(Nanos{0}))) << i;
  EXPECT_FALSE(tb.canDoWork(at(Nanos{0})));
}

TEST(TokenBucket, RefillsOneTokenPerIntervalAndNoSooner) {
  TokenBucket tb({100, 1}, at(Nanos{0}));  // one token per 10 ms
  ASSERT_TRUE(tb.canDoWork(at(Nanos{0})));
  EXPECT_FALSE(tb.canDoWork(at(milliseconds(10) - Nanos{1})));
  EXPECT_TRUE(tb.canDoWork(at(milliseconds(10))));
  EXPECT_FALSE(tb.canDoWork(at(milliseconds(10))));
}

TEST(TokenBucket, NeverHoldsMoreThanBurst) {
  TokenBucket tb({1000, 10}, at(Nanos{0}));
  EXPECT_EQ(tb.available(at(seconds(3600)), 1000000), 10u);
  EXPECT_DOUBLE_EQ(tb.tokens(at(seconds(3600))), 10.0);
}

TEST(TokenBucket, RateZeroLetsNothingThroughEver) {
  TokenBucket tb({0, 100}, at(Nanos{0}));
  EXPECT_FALSE(tb.canDoWork(at(Nanos{0})));
  EXPECT_FALSE(tb.canDoWork(at(seconds(1000000))));
  EXPECT_EQ(tb.available(at(seconds(5)), 10), 0u);
  EXPECT_EQ(tb.timeUntil(1, at(seconds(5))), kNever);
}

TEST(TokenBucket, FractionalRateOfOnePerThousandSeconds) {
  TokenBucket tb({0.001, 1}, at(Nanos{0}));
  ASSERT_TRUE(tb.canDoWork(at(Nanos{0})));
  EXPECT_FALSE(tb.canDoWork(at(seconds(999))));
  // One second, give or take the nanosecond that rounding up may add.
  EXPECT_NEAR(static_cast<double>(tb.timeUntil(1, at(seconds(999))).count()), 1e9, 1.0);
  EXPECT_TRUE(tb.canDoWork(at(seconds(1000))));
}

TEST(TokenBucket, TenMillionPerSecondIsExact) {
  TokenBucket tb({1e7, 1}, at(Nanos{0}));
  ASSERT_TRUE(tb.canDoWork(at(Nanos{0})));
  std::uint64_t sent = 0;
  for (std::int64_t t = 1; t <= 1'000'000; ++t) {  // 1 ms in 1 ns steps
    sent += tb.canDoWork(at(Nanos{t})) ? 1 : 0;
  }
  EXPECT_EQ(sent, 10'000u);
}

TEST(TokenBucket, TakesNUnitsAllOrNothing) {
  TokenBucket tb({10, 5}, at(Nanos{0}));
  EXPECT_FALSE(tb.tryAcquire(6, at(Nanos{0})));
  EXPECT_EQ(tb.available(at(Nanos{0}), 100), 5u);
  EXPECT_TRUE(tb.tryAcquire(3, at(Nanos{0})));
  EXPECT_FALSE(tb.tryAcquire(3, at(Nanos{0})));
  EXPECT_TRUE(tb.tryAcquire(2, at(Nanos{0})));
  EXPECT_TRUE(tb.tryAcquire(0, at(Nanos{0})));
}

TEST(TokenBucket, TimeUntilSaysExactlyWhenNUnitsFit) {
  TokenBucket tb({100, 10}, at(Nanos{0}));
  ASSERT_TRUE(tb.tryAcquire(10, at(Nanos{0})));
  EXPECT_EQ(tb.timeUntil(3, at(Nanos{0})), milliseconds(30));
  EXPECT_FALSE(tb.tryAcquire(3, at(milliseconds(29))));
  EXPECT_TRUE(tb.tryAcquire(3, at(milliseconds(30))));
  EXPECT_EQ(tb.timeUntil(11, at(milliseconds(30))), kNever);  // above burst
  EXPECT_EQ(tb.timeUntil(0, at(milliseconds(30))), Nanos{0});
}

TEST(TokenBucket, ClockGoingBackwardsGrantsNothingExtra) {
  TokenBucket tb({100, 1}, at(seconds(10)));
  ASSERT_TRUE(tb.canDoWork(at(seconds(10))));
  EXPECT_FALSE(tb.canDoWork(at(seconds(5))));  // back in time
  EXPECT_FALSE(tb.canDoWork(at(seconds(10))));
  // The refill after a jump back is measured from the latest time seen.
  EXPECT_FALSE(tb.canDoWork(at(seconds(10) + milliseconds(9))));
  EXPECT_TRUE(tb.canDoWork(at(seconds(10) + milliseconds(10))));
}

TEST(TokenBucket, SetLimitKeepsAccumulatedTokens) {
  TokenBucket tb({100, 50}, at(Nanos{0}));
  ASSERT_TRUE(tb.tryAcquire(30, at(Nanos{0})));  // 20 left
  tb.setLimit({1000, 50}, at(Nanos{0}));
  EXPECT_NEAR(tb.tokens(at(Nanos{0})), 20.0, 1e-9);
  EXPECT_NEAR(tb.tokens(at(milliseconds(10))), 30.0, 1e-9);  // new rate from now on
  tb.setLimit({1000, 5}, at(milliseconds(10)));              // smaller burst clips
  EXPECT_NEAR(tb.tokens(at(milliseconds(10))), 5.0, 1e-9);
  EXPECT_EQ(tb.limit().rate_per_s, 1000);
}

TEST(TokenBucket, SetLimitToZeroAndBackStartsEmpty) {
  TokenBucket tb({100, 10}, at(Nanos{0}));
  tb.setLimit({0, 10}, at(Nanos{0}));
  EXPECT_FALSE(tb.canDoWork(at(seconds(100))));
  tb.setLimit({100, 10}, at(seconds(100)));
  EXPECT_FALSE(tb.canDoWork(at(seconds(100))));
  EXPECT_TRUE(tb.canDoWork(at(seconds(100) + milliseconds(10))));
}

TEST(TokenBucket, StaysExactOverHoursFarFromTheEpoch) {
  // Three years of uptime, then two hours in 1 ms steps: long enough for the
  // bucket to re-base its internal origin several times.
  const Nanos far = std::chrono::hours(24 * 365 * 3);
  TokenBucket tb({3'000'000, 5000}, at(far));
  std::uint64_t sent = 0;
  const std::int64_t steps = 2 * 3600 * 1000;
  for (std::int64_t k = 0; k <= steps; ++k) sent += tb.acquireUpTo(UINT64_MAX, at(far + milliseconds(k)));
  // 5000 at the start, then 3000 per ms: never more, and short by less than
  // the documented 1/409,600 of the rate.
  const double expected = 5000.0 + 3000.0 * static_cast<double>(steps);
  EXPECT_LE(static_cast<double>(sent), expected);
  EXPECT_GE(static_cast<double>(sent), expected * (1.0 - 1.0 / 409600.0));
}

TEST(TokenBucket, AWeekIdleStillGrantsOneBurstNotTwo) {
  // Idle spells longer than the bucket tracks (~6.5 days) must not hand out
  // a second burst after the first grant.
  for (auto idle : {std::chrono::hours(24 * 7), std::chrono::hours(24 * 30), std::chrono::hours(24 * 400)}) {
    TokenBucket tb({10, 100}, at(Nanos{0}));
    ASSERT_TRUE(tb.tryAcquire(100, at(Nanos{0})));
    const MonoTime later = at(idle);
    EXPECT_TRUE(tb.tryAcquire(100, later));
    EXPECT_FALSE(tb.canDoWork(later));
    EXPECT_EQ(tb.available(at(idle + milliseconds(100)), 1000), 1u);  // 10/s refills one per 100 ms
  }
}

TEST(TokenBucket, SetLimitWithAnEarlierClockKeepsTheDebt) {
  TokenBucket tb({1, 1}, at(Nanos{0}));
  ASSERT_TRUE(tb.canDoWork(at(seconds(100))));
  tb.setLimit({1, 1}, at(seconds(99)));  // a clock that went back
  EXPECT_FALSE(tb.canDoWork(at(seconds(100))));
  EXPECT_TRUE(tb.canDoWork(at(seconds(101))));
}

TEST(TokenBucket, TimeUntilAgreesWithWhatTheBucketCanHold) {
  // 1000 tokens at 0.001/s would take 11.6 days to fill; the bucket tracks
  // about 3.3 days, so it holds 281 and never more.
  TokenBucket tb({0.001, 1000}, at(Nanos{0}));
  const std::uint64_t held = tb.available(at(Nanos{0}), 100000);
  EXPECT_EQ(held, tb.available(at(std::chrono::hours(24 * 365)), 100000));
  EXPECT_EQ(tb.timeUntil(held + 1, at(Nanos{0})), kNever);
  EXPECT_EQ(tb.timeUntil(held, at(Nanos{0})), Nanos{0});
  TokenBucket huge({0.001, 1e9}, at(Nanos{0}));
  EXPECT_EQ(huge.timeUntil(10000, at(Nanos{0})), kNever);  // no overflow, a clear answer
}

// Property: over thousands of random ticks with random demand, no window of
// any length holds more than rate*w + burst, and a backlogged bucket gets at
// least rate*T - 1.
TEST(TokenBucketProperty, WindowUpperBoundAndBackloggedLowerBound) {
  std::mt19937_64 rng(42);
  for (int trial = 0; trial < 20; ++trial) {
    const double rate = std::uniform_real_distribution<double>(0.5, 5000)(rng);
    // At least one tick of tokens plus one, so a backlogged bucket is never capped.
    const double burst = rate * 1e-3 + 1 + std::uniform_real_distribution<double>(0, 200)(rng);
    const Nanos tick = milliseconds(1);
    TokenBucket tb({rate, burst}, at(Nanos{0}));
    std::vector<std::uint32_t> bins;
    std::uint64_t total = 0;
    const bool backlogged = trial % 2 == 0;
    const int ticks = 20000;
    for (int k = 0; k < ticks; ++k) {
      const std::uint64_t demand = backlogged ? 1'000'000 : std::uniform_int_distribution<int>(0, 20)(rng);
      const std::uint64_t got = tb.acquireUpTo(demand, at(tick * k));
      bins.push_back(static_cast<std::uint32_t>(got));
      total += got;
    }
    for (std::size_t w : {1, 2, 7, 50, 333, 1000, 5000}) {
      const double bound = rate * static_cast<double>(w - 1) * 1e-3 + burst;  // w bins span (w-1) ticks
      EXPECT_LE(static_cast<double>(pacer::testing::maxWindowSum(bins, w)), bound + 1e-6)
          << "rate " << rate << " burst " << burst << " window " << w;
    }
    if (backlogged) {
      const double span_s = static_cast<double>(ticks - 1) * 1e-3;
      EXPECT_GE(static_cast<double>(total), rate * span_s + std::floor(burst) - 1) << "rate " << rate;
    }
  }
}

}  // namespace
}  // namespace pacer::ratelimit
