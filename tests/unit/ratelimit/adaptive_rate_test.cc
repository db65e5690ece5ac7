#include "pacer/adaptive_rate.h"

#include <gtest/gtest.h>

#include <vector>

#include "pacer/rate_limiter.h"

namespace pacer {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

MonoTime at(Nanos t) { return monoAt(t); }

AdaptiveRateOptions options400() {
  AdaptiveRateOptions o;
  o.ceiling = 400;
  o.floor = 5;
  return o;
}

TEST(AdaptiveRate, StartsAtTheCeilingAndNeverExceedsIt) {
  AdaptiveRate r(options400(), at(Nanos{0}));
  EXPECT_EQ(r.rate(at(Nanos{0})), 400);
  EXPECT_EQ(r.rate(at(seconds(1000))), 400);
}

TEST(AdaptiveRate, NewTuningKeepsTheRateAndAppliesFromTheNextThrottle) {
  AdaptiveRate r(options400(), at(Nanos{0}));
  r.onThrottled(at(seconds(1)), seconds(10));
  ASSERT_EQ(r.rate(at(seconds(1))), 200);
  AdaptiveRateOptions tuning = options400();
  tuning.decrease = 0.25;
  r.setTuning(tuning, at(seconds(2)));
  EXPECT_EQ(r.rate(at(seconds(2))), 200);  // kept, not reset to the ceiling
  r.onThrottled(at(seconds(3)), seconds(10));
  EXPECT_EQ(r.rate(at(seconds(3))), 50);  // 200 x 0.25
  // A floor above the rate lifts it; a floor above the ceiling is clipped to it.
  tuning.floor = 120;
  r.setTuning(tuning, at(seconds(4)));
  EXPECT_EQ(r.rate(at(seconds(4))), 120);
  tuning.floor = 1000;
  r.setTuning(tuning, at(seconds(5)));
  EXPECT_EQ(r.rate(at(seconds(5))), 400);
}

TEST(AdaptiveRate, ThrottlingDecreasesOncePerHoldAndPausesTheClimb) {
  AdaptiveRate r(options400(), at(Nanos{0}));
  r.onThrottled(at(seconds(1)), seconds(2));
  EXPECT_EQ(r.rate(at(seconds(1))), 200);
  r.onThrottled(at(seconds(1) + milliseconds(100)), seconds(2));  // same burst of 429s
  EXPECT_EQ(r.rate(at(seconds(1) + milliseconds(100))), 200);
  EXPECT_EQ(r.rate(at(seconds(3))), 200);  // paused until 3.1 s
  EXPECT_GT(r.rate(at(seconds(4))), 200);
  r.onThrottled(at(seconds(5)), Nanos{0});
  EXPECT_LT(r.rate(at(seconds(5))), 200);
}

TEST(AdaptiveRate, NeverBelowTheFloor) {
  AdaptiveRate r(options400(), at(Nanos{0}));
  // Each throttle asks for an hour's pause, so nothing climbs in between.
  for (int i = 0; i < 100; ++i) r.onThrottled(at(seconds(i)), std::chrono::hours(1));
  EXPECT_EQ(r.rate(at(seconds(100))), 5);
}

TEST(AdaptiveRate, SlowResponsesCountOnlyAboveTheThreshold) {
  AdaptiveRateOptions o = options400();
  o.latency_threshold = milliseconds(500);
  AdaptiveRate r(o, at(Nanos{0}));
  r.onLatency(at(seconds(1)), milliseconds(499));
  EXPECT_EQ(r.rate(at(seconds(1))), 400);
  r.onLatency(at(seconds(1)), milliseconds(800));
  EXPECT_EQ(r.rate(at(seconds(1))), 200);
}

TEST(AdaptiveRate, NewCeilingClipsTheRate) {
  AdaptiveRate r(options400(), at(Nanos{0}));
  r.setCeiling(100, at(seconds(1)));
  EXPECT_EQ(r.rate(at(seconds(1))), 100);
  EXPECT_EQ(r.rate(at(seconds(100))), 100);
  r.setCeiling(300, at(seconds(100)));
  EXPECT_GT(r.rate(at(seconds(200))), 299);
}

// The 429 storm on simulated time: a provider that accepts 400/s drops to
// 100/s for 20 s, then returns to 400/s. A sender pacing at the adaptive rate
// (every 10 ms) must fall below 100/s within 2 s and climb back to >= 95% of
// 400/s within 10 s of the recovery; it never goes above the ceiling.
TEST(AdaptiveRateProperty, FollowsAQuotaStormDownAndBackUp) {
  const Nanos tick = milliseconds(10);
  AdaptiveRate rate(options400(), at(Nanos{0}));
  auto quota = makeLimiter(LimiterOptions{}, {400, 40}, at(Nanos{0}));
  double carry = 0;
  std::vector<double> offered_per_s(60, 0), accepted_per_s(60, 0);
  for (int k = 0; k < 6000; ++k) {
    const MonoTime now = at(tick * k);
    const int second = k / 100;
    if (k == 2000) quota->setLimit({100, 10}, now);  // storm from 20 s
    if (k == 4000) quota->setLimit({400, 40}, now);  // over at 40 s
    const double r = rate.rate(now);
    ASSERT_LE(r, 400.0);
    carry += r * 0.01;
    const int sends = static_cast<int>(carry);
    carry -= sends;
    for (int i = 0; i < sends; ++i) {
      offered_per_s[second] += 1;
      if (quota->canDoWork(now)) {
        accepted_per_s[second] += 1;
      } else {
        rate.onThrottled(now, seconds(1));  // 429 with Retry-After: 1
      }
    }
  }
  // Before the storm: near the ceiling.
  for (int s = 2; s < 20; ++s) EXPECT_GE(offered_per_s[s], 380) << s;
  // Within 2 s of the storm, the sender offers less than 100/s on average,
  // and no second more than 10% above it: it probes, and what the provider
  // refuses is retried, never dropped.
  double storm = 0;
  for (int s = 22; s < 40; ++s) {
    storm += offered_per_s[s];
    EXPECT_LT(offered_per_s[s], 110) << s;
  }
  EXPECT_LT(storm / 18, 100);
  // What the provider accepted never exceeds what was offered, and during the
  // storm most of what was offered was accepted (few 429s).
  double storm_accepted = 0;
  for (int s = 22; s < 40; ++s) storm_accepted += accepted_per_s[s];
  EXPECT_GE(storm_accepted, 0.95 * storm);
  // Within 10 s of the recovery, >= 95% of 400/s again.
  for (int s = 50; s < 60; ++s) EXPECT_GE(offered_per_s[s], 380) << s;
}

}  // namespace
}  // namespace pacer
