#include "fixed_window.h"

#include <gtest/gtest.h>

namespace pacer::ratelimit {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

MonoTime at(Nanos t) { return monoAt(t); }

TEST(FixedWindow, ReleasesAWindowsAllowanceAtOnce) {
  FixedWindow fw({1000, 1}, seconds(1), at(Nanos{0}));
  EXPECT_EQ(fw.acquireUpTo(5000, at(Nanos{0})), 1000u);
  EXPECT_FALSE(fw.canDoWork(at(milliseconds(999))));
  EXPECT_EQ(fw.acquireUpTo(5000, at(seconds(1))), 1000u);
}

TEST(FixedWindow, BoundaryLetsTwoWindowsThroughCloseTogether) {
  // The known weakness: the end of one window and the start of the next.
  FixedWindow fw({100, 1}, seconds(1), at(Nanos{0}));
  EXPECT_EQ(fw.acquireUpTo(1000, at(milliseconds(999))), 100u);
  EXPECT_EQ(fw.acquireUpTo(1000, at(milliseconds(1000))), 100u);
}

TEST(FixedWindow, FractionalAllowanceIsSpreadOverWindows) {
  FixedWindow fw({0.5, 1}, seconds(1), at(Nanos{0}));
  std::uint64_t total = 0;
  for (int s = 0; s < 100; ++s) total += fw.acquireUpTo(10, at(seconds(s)));
  EXPECT_EQ(total, 50u);
}

TEST(FixedWindow, TimeUntilIsTheNextWindowStart) {
  FixedWindow fw({10, 1}, seconds(1), at(Nanos{0}));
  ASSERT_EQ(fw.acquireUpTo(100, at(milliseconds(200))), 10u);
  EXPECT_EQ(fw.timeUntil(1, at(milliseconds(200))), milliseconds(800));
  EXPECT_EQ(fw.timeUntil(11, at(milliseconds(200))), kNever);
  FixedWindow slow({0.25, 1}, seconds(1), at(Nanos{0}));
  // Allowance: windows 3, 7, 11... hold one unit each (floor((k+1)/4) - floor(k/4)).
  EXPECT_EQ(slow.timeUntil(1, at(Nanos{0})), seconds(3));
}

TEST(FixedWindow, ClockGoingBackwardsDoesNotReopenAWindow) {
  FixedWindow fw({5, 1}, seconds(1), at(seconds(7)));
  ASSERT_EQ(fw.acquireUpTo(100, at(seconds(7))), 5u);
  EXPECT_EQ(fw.acquireUpTo(100, at(seconds(3))), 0u);
}

TEST(FixedWindow, SetLimitKeepsWhatThisWindowUsed) {
  FixedWindow fw({10, 1}, seconds(1), at(Nanos{0}));
  ASSERT_EQ(fw.acquireUpTo(6, at(Nanos{0})), 6u);
  fw.setLimit({8, 1}, at(milliseconds(500)));
  EXPECT_EQ(fw.acquireUpTo(100, at(milliseconds(500))), 2u);
}

}  // namespace
}  // namespace pacer::ratelimit
