#include "sliding_window.h"

#include <gtest/gtest.h>

namespace pacer::ratelimit {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

MonoTime at(Nanos t) { return monoAt(t); }

TEST(SlidingWindow, UsesSeed004sWeightedEstimate) {
  // 7 per minute; 5 in the previous minute; now 30% into the current one with 3:
  // estimate = 3 + 5 * 0.7 = 6.5, so one more fits (7.5 > 7 would not).
  SlidingWindow sw({7.0 / 60.0, 1}, seconds(60), at(Nanos{0}));
  ASSERT_EQ(sw.acquireUpTo(5, at(seconds(10))), 5u);
  ASSERT_EQ(sw.acquireUpTo(3, at(seconds(60))), 2u);  // 5*1.0 + 2 = 7
  SlidingWindow sw2({7.0 / 60.0, 1}, seconds(60), at(Nanos{0}));
  ASSERT_EQ(sw2.acquireUpTo(5, at(seconds(10))), 5u);
  ASSERT_EQ(sw2.acquireUpTo(3, at(seconds(66))), 2u);  // 5*0.9 = 4.5 -> 2 fit
  EXPECT_EQ(sw2.acquireUpTo(3, at(seconds(78))), 1u);  // 2 + 5*0.7 = 5.5 -> 1 fits
  EXPECT_EQ(sw2.acquireUpTo(3, at(seconds(78))), 0u);
}

TEST(SlidingWindow, SpreadsLoadAfterTheFirstWindow) {
  SlidingWindow sw({1000, 1}, seconds(1), at(Nanos{0}));
  std::vector<std::uint64_t> per_tick;
  for (int k = 0; k < 300; ++k) per_tick.push_back(sw.acquireUpTo(100000, at(milliseconds(10) * k)));
  EXPECT_EQ(per_tick[0], 1000u);  // no history yet: the first window goes at once
  // In the steady state each 10 ms tick gets about 1% of the window.
  for (int k = 200; k < 300; ++k) {
    EXPECT_GE(per_tick[k], 5u) << k;
    EXPECT_LE(per_tick[k], 15u) << k;
  }
}

TEST(SlidingWindow, RateZeroLetsNothingThrough) {
  SlidingWindow sw({0, 1}, seconds(1), at(Nanos{0}));
  EXPECT_FALSE(sw.canDoWork(at(seconds(10))));
  EXPECT_EQ(sw.timeUntil(1, at(seconds(10))), kNever);
}

TEST(SlidingWindow, TimeUntilAgreesWithTheEstimate) {
  SlidingWindow sw({10, 1}, seconds(1), at(Nanos{0}));
  ASSERT_EQ(sw.acquireUpTo(10, at(Nanos{0})), 10u);
  // In window 1, previous = 10: room for 1 once 10*(1-f) <= 9, f >= 0.1.
  const Nanos wait = sw.timeUntil(1, at(milliseconds(500)));
  EXPECT_EQ(wait, milliseconds(600));
  EXPECT_FALSE(sw.canDoWork(at(milliseconds(1099))));
  EXPECT_TRUE(sw.canDoWork(at(milliseconds(500) + wait)));
}

TEST(SlidingWindow, ClockGoingBackwardsGrantsNothingExtra) {
  SlidingWindow sw({10, 1}, seconds(1), at(seconds(5)));
  ASSERT_EQ(sw.acquireUpTo(100, at(seconds(5))), 10u);
  EXPECT_EQ(sw.acquireUpTo(100, at(seconds(2))), 0u);
}

}  // namespace
}  // namespace pacer::ratelimit
