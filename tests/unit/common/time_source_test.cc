#include <gtest/gtest.h>

#include "pacer/time.h"

namespace pacer {
namespace {

using std::chrono::milliseconds;

TEST(SimulatedTimeSource, StartsAtTheEpochAndMovesOnlyWhenTold) {
  SimulatedTimeSource clock;
  EXPECT_EQ(clock.now(), MonoTime{});
  EXPECT_EQ(clock.now(), MonoTime{});
  clock.advance(milliseconds(15));
  EXPECT_EQ(clock.now().time_since_epoch(), milliseconds(15));
  clock.set(monoAt(milliseconds(3)));
  EXPECT_EQ(clock.now().time_since_epoch(), milliseconds(3));
}

TEST(SteadyTimeSource, NeverGoesBackwards) {
  const TimeSourcePtr clock = makeSteadyTimeSource();
  MonoTime last = clock->now();
  for (int i = 0; i < 1000; ++i) {
    const MonoTime t = clock->now();
    ASSERT_GE(t, last);
    last = t;
  }
}

}  // namespace
}  // namespace pacer
