#include "leaky_bucket.h"

#include <gtest/gtest.h>

namespace pacer::ratelimit {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

MonoTime at(Nanos t) { return monoAt(t); }

TEST(LeakyBucket, SpacesUnitsEvenlyWithNoBurst) {
  LeakyBucket lb({100, 50}, Nanos{0}, at(Nanos{0}));  // burst is ignored
  EXPECT_TRUE(lb.canDoWork(at(Nanos{0})));
  EXPECT_FALSE(lb.canDoWork(at(Nanos{0})));
  EXPECT_FALSE(lb.canDoWork(at(milliseconds(9))));
  EXPECT_TRUE(lb.canDoWork(at(milliseconds(10))));
  EXPECT_FALSE(lb.canDoWork(at(milliseconds(10))));
}

TEST(LeakyBucket, IdleTimeIsNotSavedUp) {
  LeakyBucket lb({1000, 1}, milliseconds(10), at(Nanos{0}));
  // After an hour idle only the slots of the last max_lateness (10 ms) are usable.
  EXPECT_EQ(lb.available(at(seconds(3600)), 1'000'000), 11u);
}

TEST(LeakyBucket, ReleasesOneTicksSlotsPerTickAtFullRate) {
  LeakyBucket lb({1000, 1}, milliseconds(10), at(Nanos{0}));
  std::uint64_t total = 0;
  for (int k = 0; k <= 1000; ++k) {  // 10 s of 10 ms ticks
    const std::uint64_t got = lb.acquireUpTo(1'000'000, at(milliseconds(10) * k));
    if (k > 0) {
      EXPECT_EQ(got, 10u) << "tick " << k;
    }
    total += got;
  }
  EXPECT_EQ(total, 10'001u);
}

TEST(LeakyBucket, RateZeroLetsNothingThrough) {
  LeakyBucket lb({0, 1}, milliseconds(10), at(Nanos{0}));
  EXPECT_FALSE(lb.canDoWork(at(seconds(100))));
  EXPECT_EQ(lb.timeUntil(1, at(seconds(100))), kNever);
}

TEST(LeakyBucket, TimeUntilPointsAtTheNextSlot) {
  LeakyBucket lb({10, 1}, Nanos{0}, at(Nanos{0}));
  ASSERT_TRUE(lb.canDoWork(at(Nanos{0})));
  EXPECT_EQ(lb.timeUntil(1, at(milliseconds(30))), milliseconds(70));
  EXPECT_EQ(lb.timeUntil(2, at(milliseconds(30))), kNever);  // two at once never fit without lateness
  EXPECT_TRUE(lb.canDoWork(at(milliseconds(100))));
}

TEST(LeakyBucket, ClockGoingBackwardsGrantsNothingExtra) {
  LeakyBucket lb({10, 1}, Nanos{0}, at(seconds(10)));
  ASSERT_TRUE(lb.canDoWork(at(seconds(10))));
  EXPECT_FALSE(lb.canDoWork(at(seconds(1))));
  EXPECT_FALSE(lb.canDoWork(at(seconds(10) + milliseconds(99))));
  EXPECT_TRUE(lb.canDoWork(at(seconds(10) + milliseconds(100))));
}

TEST(LeakyBucket, SetLimitChangesTheSpacingAfterTheNextSlot) {
  LeakyBucket lb({10, 1}, Nanos{0}, at(Nanos{0}));
  ASSERT_TRUE(lb.canDoWork(at(Nanos{0})));  // next slot at 100 ms
  lb.setLimit({1000, 1}, at(milliseconds(50)));
  EXPECT_FALSE(lb.canDoWork(at(milliseconds(99))));
  EXPECT_TRUE(lb.canDoWork(at(milliseconds(100))));
  EXPECT_TRUE(lb.canDoWork(at(milliseconds(101))));
}

}  // namespace
}  // namespace pacer::ratelimit
