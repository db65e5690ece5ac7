#include "strict_window.h"

#include <gtest/gtest.h>

#include <deque>
#include <random>

namespace pacer::fake {
namespace {

MonoTime at(std::int64_t ms) { return monoAt(std::chrono::milliseconds(ms)); }

TEST(StrictWindowTest, AdmitsTheLimitThenRefusesUntilTheFirstAdmissionIsOneSecondOld) {
  StrictWindow w(3);
  EXPECT_TRUE(w.tryAdmit(at(0)));
  EXPECT_TRUE(w.tryAdmit(at(10)));
  EXPECT_TRUE(w.tryAdmit(at(20)));
  EXPECT_FALSE(w.tryAdmit(at(20)));
  EXPECT_FALSE(w.tryAdmit(at(999)));
  EXPECT_TRUE(w.tryAdmit(at(1000)));  // the admission at 0 no longer counts
  EXPECT_FALSE(w.tryAdmit(at(1009)));
  EXPECT_TRUE(w.tryAdmit(at(1010)));
  EXPECT_EQ(w.busiest(), 3u);
}

TEST(StrictWindowTest, HasNoBurstAllowanceAfterIdleTime) {
  StrictWindow w(2);
  EXPECT_TRUE(w.tryAdmit(at(0)));
  // Idle for a minute earns nothing beyond the limit.
  EXPECT_TRUE(w.tryAdmit(at(60000)));
  EXPECT_TRUE(w.tryAdmit(at(60000)));
  EXPECT_FALSE(w.tryAdmit(at(60000)));
}

TEST(StrictWindowTest, ZeroLimitAdmitsEverythingAndStillMeasuresTheBusiestSecond) {
  StrictWindow w(0);
  for (int i = 0; i < 1000; ++i) EXPECT_TRUE(w.tryAdmit(at(i)));       // 1000 in [0, 999]
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(w.tryAdmit(at(5000 + i)));  // a quiet later second
  EXPECT_EQ(w.busiest(), 1000u);
}

TEST(StrictWindowTest, TimeGoingBackwardsDoesNotOpenTheWindow) {
  StrictWindow w(2);
  EXPECT_TRUE(w.tryAdmit(at(5000)));
  EXPECT_TRUE(w.tryAdmit(at(5001)));
  EXPECT_FALSE(w.tryAdmit(at(1000)));
  EXPECT_FALSE(w.tryAdmit(at(5500)));
}

// Over many random arrivals: no one-second interval holds more than the
// limit (upper bound), and no request is refused while the interval ending at
// it holds fewer (lower bound: the window is not stricter than it says).
TEST(StrictWindowTest, RandomArrivalsNeverExceedTheLimitAndAreNeverRefusedBelowIt) {
  constexpr std::uint32_t kLimit = 50;
  StrictWindow w(kLimit);
  std::mt19937_64 rng(7);
  std::exponential_distribution<double> gap_ms(0.2);  // ~200 offered per second, 4x the limit
  std::deque<double> admitted;
  double t = 0;
  int refusals = 0;
  for (int i = 0; i < 20000; ++i) {
    t += gap_ms(rng);
    const auto now = monoAt(std::chrono::nanoseconds(static_cast<std::int64_t>(t * 1e6)));
    const double now_ms = static_cast<double>(now.time_since_epoch().count()) / 1e6;
    while (!admitted.empty() && now_ms - admitted.front() >= 1000.0) admitted.pop_front();
    if (w.tryAdmit(now)) {
      admitted.push_back(now_ms);
      ASSERT_LE(admitted.size(), kLimit) << "at " << now_ms << " ms";
    } else {
      ++refusals;
      ASSERT_EQ(admitted.size(), kLimit) << "refused below the limit at " << now_ms << " ms";
    }
  }
  EXPECT_GT(refusals, 10000);
  EXPECT_EQ(w.busiest(), kLimit);
}

}  // namespace
}  // namespace pacer::fake
