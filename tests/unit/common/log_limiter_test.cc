#include "pacer/log_limiter.h"

#include <gtest/gtest.h>

namespace pacer {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(LogLimiter, OneLinePerKeyPerIntervalWithTheCountHeldBack) {
  LogLimiter limiter(seconds(10));
  const MonoTime t0{};
  EXPECT_EQ(limiter.admit("auth", t0), 0u);
  int written = 1;
  for (int ms = 1; ms < 10000; ++ms)
    if (limiter.admit("auth", t0 + milliseconds(ms))) ++written;
  EXPECT_EQ(written, 1) << "a flood within the interval is one line";
  EXPECT_EQ(limiter.admit("auth", t0 + seconds(10)), 9999u) << "the next line says how many were held back";
  EXPECT_EQ(limiter.admit("other", t0 + milliseconds(5)), 0u) << "keys are apart";
  EXPECT_FALSE(limiter.admit("auth", t0 + seconds(10) + milliseconds(1)).has_value());
}

TEST(LogLimiter, ForgetsIdleKeysButNotOnesWithLinesHeldBack) {
  LogLimiter limiter(seconds(1));
  const MonoTime t0{};
  limiter.admit("a", t0);
  limiter.admit("b", t0);
  limiter.admit("b", t0 + milliseconds(500));  // held back
  limiter.forgetIdle(t0 + seconds(60), seconds(30));
  EXPECT_EQ(limiter.admit("a", t0 + seconds(60)), 0u) << "forgotten: like new";
  EXPECT_EQ(limiter.admit("b", t0 + seconds(60)), 1u) << "kept: its held-back line is still owed";
}

TEST(LogLimiter, TimeGoingBackAdmitsNothingNew) {
  LogLimiter limiter(seconds(1));
  const MonoTime now{seconds(50)};
  EXPECT_EQ(limiter.admit("401", now), 0u);
  EXPECT_EQ(limiter.admit("401", now - milliseconds(5000)), std::nullopt);
  EXPECT_EQ(limiter.admit("401", now + milliseconds(1000)), 1u);
}

}  // namespace
}  // namespace pacer
