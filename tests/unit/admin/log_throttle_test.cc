// The refused-request log throttle on simulated time.
#include "admin/log_throttle.h"

#include <gtest/gtest.h>

namespace pacer::admin {
namespace {

using std::chrono::milliseconds;

TEST(LogThrottleTest, OneLinePerKindPerIntervalWithTheCountLeftOut) {
  LogThrottle t(milliseconds(1000));
  MonoTime now{std::chrono::seconds(50)};
  EXPECT_EQ(t.admit("401", now), 0u) << "the first line of a kind goes out";
  for (int i = 0; i < 999; ++i) {
    now += milliseconds(1);
    EXPECT_EQ(t.admit("401", now), std::nullopt) << "within the second: left out, counted";
  }
  EXPECT_EQ(t.admit("403", now), 0u) << "another kind has its own budget";
  now += milliseconds(1);
  EXPECT_EQ(t.admit("401", now), 999u) << "exactly one interval later: the count of those left out";
  EXPECT_EQ(t.admit("401", now + milliseconds(999)), std::nullopt);
  EXPECT_EQ(t.admit("401", now + milliseconds(5000)), 1u);
  EXPECT_EQ(t.admit("401", now + milliseconds(10000)), 0u) << "the count restarts after each line";
}

TEST(LogThrottleTest, TimeGoingBackAdmitsNothingNew) {
  LogThrottle t(milliseconds(1000));
  const MonoTime now{std::chrono::seconds(50)};
  EXPECT_EQ(t.admit("401", now), 0u);
  EXPECT_EQ(t.admit("401", now - milliseconds(5000)), std::nullopt);
  EXPECT_EQ(t.admit("401", now + milliseconds(1000)), 1u);
}

}  // namespace
}  // namespace pacer::admin
