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

// Every worker's judge sees the same overshoot and names the same
// Retry-After: a round of cuts pauses once, and again only for longer.
TEST(AdaptiveRate, ARoundOfCutsPausesOnceUnlessAskedForLonger) {
  AdaptiveRate r(options400(), at(Nanos{0}));
  r.onCapacity(at(seconds(10)), seconds(1), 1.0);
  EXPECT_EQ(r.pausedUntil(), at(seconds(11)));
  r.onCapacity(at(milliseconds(10500)), seconds(1), 0.8);
  EXPECT_EQ(r.pausedUntil(), at(seconds(11))) << "the round's second word does not pause again";
  EXPECT_NEAR(r.rate(at(milliseconds(10500))), 400 * 0.8 * 0.98, 0.01);
  r.onCapacity(at(seconds(12)), seconds(3), 0.8);
  EXPECT_EQ(r.pausedUntil(), at(seconds(15))) << "a longer Retry-After pauses again";
  r.onCapacity(at(seconds(14)), seconds(1), 0.9);
  EXPECT_EQ(r.pausedUntil(), at(seconds(15))) << "not longer than the round's longest";
  r.onCapacity(at(seconds(20)), seconds(1), 0.9);
  EXPECT_EQ(r.pausedUntil(), at(seconds(21))) << "a new round pauses";
}

TEST(AdaptiveRate, NewTuningKeepsTheRateAndAppliesFromTheNextThrottle) {
  AdaptiveRate r(options400(), at(Nanos{0}));
  r.onThrottled(at(seconds(1)), seconds(10));
  ASSERT_EQ(r.rate(at(seconds(1))), 320);
  AdaptiveRateOptions tuning = options400();
  tuning.decrease = 0.25;
  r.setTuning(tuning, at(seconds(2)));
  EXPECT_EQ(r.rate(at(seconds(2))), 320);  // kept, not reset to the ceiling
  r.onThrottled(at(seconds(3)), seconds(10));
  EXPECT_EQ(r.rate(at(seconds(3))), 20);  // 320 x 0.25 x 0.25: below the hold point, a harder drop
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
  EXPECT_EQ(r.rate(at(seconds(1))), 320);
  EXPECT_EQ(r.limit(), 400) << "where the provider said no";
  r.onThrottled(at(seconds(1) + milliseconds(100)), seconds(2));  // same burst of 429s
  EXPECT_EQ(r.rate(at(seconds(1) + milliseconds(100))), 320);
  EXPECT_EQ(r.rate(at(seconds(3))), 320);  // paused until 3.1 s
  EXPECT_GT(r.rate(at(seconds(4))), 320);
  r.onThrottled(at(seconds(5)), Nanos{0});
  EXPECT_LT(r.rate(at(seconds(5))), 320);
}

// After a 429 at the limit: fast back to just under it, then a slow probe
// over probe_time to it and twice as far again above it (4%, two more probe
// times); past that without a 429 the limit is at least the band's top, and
// each new probe from there is four times as quick as the last.
TEST(AdaptiveRate, ClimbsFastToTheHoldPointProbesSlowlyThenQuickerAndQuicker) {
  AdaptiveRate r(options400(), at(Nanos{0}));
  r.setCeiling(600, at(Nanos{0}));
  r.onThrottled(at(Nanos{0}), Nanos{0});  // at 400: the limit
  EXPECT_EQ(r.limit(), 400);
  EXPECT_DOUBLE_EQ(r.rate(at(Nanos{0})), 320);
  // 0.25 x 600 = 150/s up to 392 (0.98 x 400): 0.48 s.
  EXPECT_NEAR(r.rate(at(milliseconds(480))), 392, 1e-6);
  // Then 8 over 30 s.
  EXPECT_NEAR(r.rate(at(milliseconds(480) + seconds(15))), 396, 1e-6);
  EXPECT_NEAR(r.rate(at(milliseconds(480) + seconds(30))), 400, 1e-6);
  // Past the limit without a 429: on slowly to 416 (60 s).
  EXPECT_NEAR(r.rate(at(milliseconds(480) + seconds(45))), 404, 1e-6);
  EXPECT_NEAR(r.rate(at(milliseconds(480) + seconds(90))), 416, 1e-6);
  EXPECT_EQ(r.probeScale(), 1);
  // The limit is now 416, and the next probe (2% of it, then 4% above it)
  // takes a quarter of the time: 16.64 in 15 s.
  EXPECT_NEAR(r.rate(at(milliseconds(480) + seconds(90) + milliseconds(7500))), 416 + 16.64 / 2, 1e-6);
  EXPECT_EQ(r.limit(), 416);
  EXPECT_EQ(r.probeScale(), 0.25);
  EXPECT_NEAR(r.rate(at(milliseconds(480) + seconds(105))), 432.64, 1e-6);
  // Then 3.75 s, 0.94 s, and a quarter of a second for each 4% after: the
  // ceiling within a few seconds more, never a jump.
  EXPECT_LT(r.rate(at(milliseconds(480) + seconds(108))), 450);
  EXPECT_EQ(r.rate(at(seconds(120))), 600);
}

// A measured cut that finds the ceiling again where the last one was, coming
// from the probe band, makes the next probe twice as slow (up to 4 x); any
// other cut and a cut taken back as noise probe at the configured pace again,
// and a climb past the band (the limit moved up) quicker.
TEST(AdaptiveRate, AFixedCeilingFoundAgainIsProbedLessOften) {
  AdaptiveRateOptions o = options400();
  o.ceiling = 500;
  AdaptiveRate r(o, at(Nanos{0}));
  r.onCapacity(at(seconds(1)), Nanos{0}, 0.8);  // from 500: the limit is 400, far from the ceiling
  EXPECT_EQ(r.probeScale(), 1);
  EXPECT_NEAR(r.rate(at(seconds(1))), 392, 1e-9);
  // The probe: 8 over 30 s from 392 towards 400.
  EXPECT_NEAR(r.rate(at(seconds(16))), 396, 1e-9);
  r.onCapacity(at(seconds(31)), Nanos{0}, 399.0 / 400);  // at 400: found again where it was
  EXPECT_EQ(r.limit(), 399);
  EXPECT_EQ(r.probeScale(), 2);
  const double hold = 399 * 0.98;
  EXPECT_NEAR(r.rate(at(seconds(31))), hold, 1e-9);
  EXPECT_NEAR(r.rate(at(seconds(61))), hold + (399 - hold) / 2, 1e-9) << "half way in a probe time";
  r.onCapacity(at(seconds(91)), Nanos{0}, 398.0 / 399);  // at 399 again
  EXPECT_EQ(r.probeScale(), 4);
  r.onCapacity(at(seconds(200)), Nanos{0}, 0.995);
  EXPECT_EQ(r.probeScale(), 4) << "at most 4 x";
  r.restoreLimit(at(seconds(201)), 1.0);  // the cut was noise
  EXPECT_EQ(r.probeScale(), 1);
  r.onCapacity(at(seconds(210)), Nanos{0}, 0.99);
  EXPECT_EQ(r.probeScale(), 2);
  r.onCapacity(at(seconds(220)), Nanos{0}, 0.8);  // far from where it was: the limit moved
  EXPECT_EQ(r.probeScale(), 1);
  r.onCapacity(at(seconds(230)), Nanos{0}, 0.99);
  ASSERT_EQ(r.probeScale(), 2);
  // No throttle until the probe passes the band above the limit: it moved
  // up, and the probes quicken.
  r.rate(at(seconds(2000)));
  EXPECT_LT(r.probeScale(), 1);
  EXPECT_EQ(r.rate(at(seconds(2000))), 500);
}

// A 429 while still climbing back says the limit is lower than remembered.
TEST(AdaptiveRate, AThrottleBelowTheRememberedLimitLowersIt) {
  AdaptiveRate r(options400(), at(Nanos{0}));
  r.onThrottled(at(Nanos{0}), Nanos{0});
  r.onThrottled(at(milliseconds(300)), Nanos{0});  // at 320 + 30 = 350
  EXPECT_NEAR(r.limit(), 350, 1e-6);
  EXPECT_NEAR(r.rate(at(milliseconds(300))), 350 * 0.64, 1e-6) << "below the hold point: a harder drop";
  // 100/s back to 343 (1.19 s), then 7 over 30 s.
  EXPECT_NEAR(r.rate(at(seconds(10))), 343 + (10 - 0.3 - 1.19) * (350 - 343) / 30, 0.05);
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
  EXPECT_EQ(r.rate(at(seconds(1))), 320);
}

TEST(AdaptiveRate, SustainedFaultsDecreaseAndPauseWithoutLearningALimit) {
  AdaptiveRate r(options400(), at(Nanos{0}));
  r.onFaults(at(seconds(1)), seconds(5));
  EXPECT_EQ(r.rate(at(seconds(1))), 320);
  EXPECT_EQ(r.limit(), 400);
  EXPECT_EQ(r.rate(at(seconds(6))), 320) << "paused";
  EXPECT_EQ(r.pausedUntil(), at(seconds(6)));
}

TEST(AdaptiveRate, NewCeilingClipsTheRate) {
  AdaptiveRate r(options400(), at(Nanos{0}));
  r.setCeiling(100, at(seconds(1)));
  EXPECT_EQ(r.rate(at(seconds(1))), 100);
  EXPECT_EQ(r.rate(at(seconds(100))), 100);
  r.setCeiling(300, at(seconds(100)));
  EXPECT_GT(r.rate(at(seconds(200))), 299);
}

// A sender pacing at the adaptive rate (every 5 ms) against a provider that
// accepts at most `limit` in any one-second sliding window and answers 429
// with Retry-After: 1 above it, pausing on each 429.
struct StrictRun {
  std::vector<double> sent_per_s, throttled_per_s;
};
StrictRun runStrict(AdaptiveRate& rate, int seconds_total, const std::vector<std::pair<int, int>>& limits) {
  const Nanos tick = milliseconds(5);
  StrictRun out{std::vector<double>(static_cast<std::size_t>(seconds_total), 0),
                std::vector<double>(static_cast<std::size_t>(seconds_total), 0)};
  std::vector<Nanos> window;  // accepted in the last second
  double carry = 0;
  Nanos paused_until{0};
  int limit = limits.front().second;
  std::size_t next = 1;
  for (Nanos t{0}; t < seconds(seconds_total); t += tick) {
    if (next < limits.size() && t >= seconds(limits[next].first)) limit = limits[next++].second;
    const auto second = static_cast<std::size_t>(t / seconds(1));
    const MonoTime now = at(t);
    const double r = rate.rate(now);
    if (t < paused_until) continue;
    carry = std::min(carry + r * 0.005, 2.0);
    while (carry >= 1) {
      carry -= 1;
      std::erase_if(window, [&](Nanos a) { return t - a >= seconds(1); });
      if (static_cast<int>(window.size()) >= limit) {
        out.throttled_per_s[second] += 1;
        rate.onThrottled(now, seconds(1));
        paused_until = t + seconds(1);
        carry = 0;
        break;
      }
      window.push_back(t);
      out.sent_per_s[second] += 1;
    }
  }
  return out;
}

// A provider with a fixed hard limit equal to the configured rate: after the
// first 429 the sender holds just under it, with a 429 about once per probe.
TEST(AdaptiveRateProperty, SettlesJustUnderAFixedHardLimitWithFew429s) {
  AdaptiveRate rate(options400(), at(Nanos{0}));
  const StrictRun run = runStrict(rate, 300, {{0, 400}});
  double sent = 0, throttled = 0;
  for (int s = 5; s < 300; ++s) {
    sent += run.sent_per_s[static_cast<std::size_t>(s)];
    throttled += run.throttled_per_s[static_cast<std::size_t>(s)];
  }
  EXPECT_GE(sent / (400.0 * 295), 0.95);
  EXPECT_LE(throttled / (295.0 / 60), 5.0) << "429s per minute after warm-up";
}

// The 429 storm on simulated time: the provider's limit drops from 400 to
// 100/s for 20 s, then returns. The sender follows it down within 2 s, with
// few refusals, and finds the raised limit again within 3.5 probe times.
TEST(AdaptiveRateProperty, FollowsAQuotaStormDownAndBackUp) {
  AdaptiveRate rate(options400(), at(Nanos{0}));
  const StrictRun run = runStrict(rate, 160, {{0, 400}, {20, 100}, {40, 400}});
  double storm = 0, refused = 0;
  for (int s = 20; s < 40; ++s) {
    storm += run.sent_per_s[static_cast<std::size_t>(s)];
    refused += run.throttled_per_s[static_cast<std::size_t>(s)];
  }
  EXPECT_LE(refused, 8) << "followed down in a few pauses";
  double settled = 0;
  for (int s = 30; s < 40; ++s) settled += run.sent_per_s[static_cast<std::size_t>(s)];
  EXPECT_GE(settled / 10, 90) << "then most of the lowered limit is used";
  // Back to >= 95% of 400/s within 3 probe times (90 s) of the storm's end
  // and the quickening probes after them (15 s here, from a quarter of it).
  for (int s = 145; s < 160; ++s) EXPECT_GE(run.sent_per_s[static_cast<std::size_t>(s)], 380) << s;
}

}  // namespace
}  // namespace pacer
