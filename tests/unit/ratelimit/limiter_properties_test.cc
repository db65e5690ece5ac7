// Properties every algorithm keeps, checked over thousands of simulated ticks.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "pacer/rate_limiter.h"

namespace pacer {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

MonoTime at(Nanos t) { return monoAt(t); }

class EveryAlgorithm : public ::testing::TestWithParam<Algorithm> {
 protected:
  LimiterOptions options() const {
    LimiterOptions o;
    o.algorithm = GetParam();
    o.window = seconds(1);
    o.max_lateness = milliseconds(10);
    return o;
  }
};

TEST_P(EveryAlgorithm, RateZeroLetsNothingThrough) {
  auto l = makeLimiter(options(), {0, 100}, at(Nanos{0}));
  for (int s = 0; s < 100; ++s) ASSERT_FALSE(l->canDoWork(at(seconds(s))));
  EXPECT_EQ(l->timeUntil(1, at(seconds(100))), kNever);
}

TEST_P(EveryAlgorithm, LongRunRateIsTheConfiguredRate) {
  const Algorithm a = GetParam();
  for (double rate : {1.0, 37.5, 1000.0, 20000.0}) {
    auto l = makeLimiter(options(), {rate, rate / 100 + 1}, at(Nanos{0}));
    std::uint64_t sent = 0;
    const int ticks = 10000;  // 100 s of 10 ms ticks, 100 windows of 1 s
    for (int k = 0; k < ticks; ++k) sent += l->acquireUpTo(UINT64_MAX, at(milliseconds(10) * k));
    // The log and the counter count whole messages per window: floor(rate * 1 s).
    // The counter's estimate also costs up to one message per window.
    double per_window = rate;
    if (a == Algorithm::kSlidingLog || a == Algorithm::kSlidingWindow) per_window = std::floor(rate);
    double low = per_window * 100.0 * 0.99 - 1;
    if (a == Algorithm::kSlidingWindow) low = (per_window - 1) * 100.0 * 0.99;
    EXPECT_GE(static_cast<double>(sent), low) << algorithmName(a) << " rate " << rate;
    // Upper bound: the rate, plus one window or burst that may go at the start.
    EXPECT_LE(static_cast<double>(sent), rate * 100.0 + rate + 2) << algorithmName(a) << " rate " << rate;
  }
}

TEST_P(EveryAlgorithm, BackwardJumpsNeverGrantMoreThanAMonotonicClock) {
  std::mt19937_64 rng(7);
  auto jumpy = makeLimiter(options(), {500, 20}, at(Nanos{0}));
  auto steady = makeLimiter(options(), {500, 20}, at(Nanos{0}));
  std::uint64_t jumpy_sent = 0;
  std::uint64_t steady_sent = 0;
  Nanos t{0};
  Nanos latest{0};
  for (int k = 0; k < 20000; ++k) {
    t += milliseconds(std::uniform_int_distribution<int>(0, 5)(rng));
    Nanos seen = t;
    if (k % 7 == 3) seen = t - milliseconds(std::uniform_int_distribution<int>(1, 3000)(rng));  // jump back
    latest = std::max(latest, seen);
    const std::uint64_t demand = std::uniform_int_distribution<int>(0, 10)(rng);
    jumpy_sent += jumpy->acquireUpTo(demand, at(seen));
    steady_sent += steady->acquireUpTo(demand, at(latest));
  }
  EXPECT_LE(jumpy_sent, steady_sent);
  EXPECT_GT(steady_sent, 0u);
}

TEST_P(EveryAlgorithm, TimeUntilIsNeitherEarlyNorLate) {
  std::mt19937_64 rng(11);
  int checked = 0;
  for (int trial = 0; trial < 300; ++trial) {
    auto l = makeLimiter(options(), {200, 10}, at(Nanos{0}));
    Nanos t{0};
    const int warm = std::uniform_int_distribution<int>(1, 400)(rng);
    for (int k = 0; k < warm; ++k) {
      t += Nanos{std::uniform_int_distribution<std::int64_t>(0, 20'000'000)(rng)};
      l->acquireUpTo(std::uniform_int_distribution<int>(0, 15)(rng), at(t));
    }
    const std::uint64_t n = std::uniform_int_distribution<int>(1, 3)(rng);
    const Nanos wait = l->timeUntil(n, at(t));
    if (wait == kNever) continue;
    if (wait >= milliseconds(1)) {
      // Clearly before the answer, n units do not fit yet.
      EXPECT_LT(l->available(at(t + wait * 9 / 10), n), n) << algorithmName(GetParam());
      ++checked;
    }
    EXPECT_TRUE(l->tryAcquire(n, at(t + wait))) << algorithmName(GetParam()) << " wait " << wait.count();
  }
  EXPECT_GT(checked, 20);
}

TEST_P(EveryAlgorithm, SetLimitMidRunTakesEffectWithoutAFreshStart) {
  auto l = makeLimiter(options(), {100, 2}, at(Nanos{0}));
  std::uint64_t first = 0;
  for (int k = 0; k < 1000; ++k) first += l->acquireUpTo(UINT64_MAX, at(milliseconds(10) * k));
  l->setLimit({1000, 11}, at(seconds(10)));
  EXPECT_EQ(l->limit().rate_per_s, 1000);
  std::uint64_t second = 0;
  for (int k = 1000; k < 2000; ++k) second += l->acquireUpTo(UINT64_MAX, at(milliseconds(10) * k));
  EXPECT_NEAR(static_cast<double>(first), 1000.0, 110.0);
  EXPECT_NEAR(static_cast<double>(second), 10000.0, 1010.0);
}

TEST_P(EveryAlgorithm, RefusesNegativeAndNonNumericRates) {
  EXPECT_THROW(makeLimiter(options(), {-1, 1}, at(Nanos{0})), InvalidLimitError);
  EXPECT_THROW(makeLimiter(options(), {std::nan(""), 1}, at(Nanos{0})), InvalidLimitError);
  EXPECT_THROW(makeLimiter(options(), {2e7, 1}, at(Nanos{0})), InvalidLimitError);
  EXPECT_THROW(makeLimiter(options(), {10, 0.5}, at(Nanos{0})), InvalidLimitError);
}

INSTANTIATE_TEST_SUITE_P(Limiters, EveryAlgorithm,
                         ::testing::Values(Algorithm::kTokenBucket, Algorithm::kLeakyBucket, Algorithm::kFixedWindow,
                                           Algorithm::kSlidingLog, Algorithm::kSlidingWindow),
                         [](const auto& info) { return std::string(algorithmName(info.param)); });

TEST(AlgorithmNames, RoundTrip) {
  for (Algorithm a : {Algorithm::kTokenBucket, Algorithm::kLeakyBucket, Algorithm::kFixedWindow, Algorithm::kSlidingLog,
                      Algorithm::kSlidingWindow}) {
    Algorithm back{};
    ASSERT_TRUE(parseAlgorithm(algorithmName(a), back));
    EXPECT_EQ(back, a);
  }
  Algorithm x{};
  EXPECT_FALSE(parseAlgorithm("token-bucket", x));
}

}  // namespace
}  // namespace pacer
