#include "pacer/throttle_judge.h"

#include <gtest/gtest.h>

#include <deque>
#include <random>
#include <vector>

#include "pacer/error.h"

namespace pacer {
namespace {

MonoTime at(Nanos d) { return MonoTime{d}; }
using std::chrono::milliseconds;
using std::chrono::seconds;
using Kind = ThrottleVerdict::Kind;

// A provider on the simulated clock: it accepts at most `capacity` in any
// one-second sliding window (counting what it accepted) and, apart from
// that, throttles a `noise` share of requests at random. The sender sends at
// `rate`, lowered by kCapacity verdicts (rate *= keep) and restored by kNoise
// ones, as the worker core does with AdaptiveRate.
struct Loop {
  Loop(double c, double n, double r) : capacity(c), noise(n), rate(r) {}
  double capacity;
  double noise;
  double rate;
  std::mt19937_64 rng{42};
  std::deque<Nanos> window;
  double due = 0;
  double before_cut = 0;
  std::uint64_t accepted = 0, throttled = 0, cuts = 0, restores = 0;

  void run(ThrottleJudge& judge, Nanos from, Nanos to, std::uint64_t* accepted_after = nullptr, Nanos after = {}) {
    std::uniform_real_distribution<double> u(0, 1);
    for (Nanos t = from; t < to; t += milliseconds(1)) {
      due += rate / 1000;
      while (due >= 1) {
        due -= 1;
        while (!window.empty() && t - window.front() >= seconds(1)) window.pop_front();
        const bool refused = u(rng) < noise || static_cast<double>(window.size()) >= capacity;
        if (!refused) {
          window.push_back(t);
          ++accepted;
          if (accepted_after && t >= after) ++*accepted_after;
        } else {
          ++throttled;
        }
        const ThrottleVerdict v = judge.answer(at(t), refused);
        if (v.kind == Kind::kCapacity) {
          ++cuts;
          before_cut = rate;
          rate *= v.keep * 0.98;  // AdaptiveRate's hold_fraction
        } else if (v.kind == Kind::kNoise) {
          ++restores;
          rate = std::max(rate, before_cut * v.keep);
        }
      }
    }
  }
};

TEST(ThrottleJudge, RandomThrottlesAtAnyRateAreLearnedAsNoiseAndTheRateIsKept) {
  ThrottleJudge judge({}, at(Nanos{0}));
  Loop loop{1e9, 0.10, 400};
  std::uint64_t late = 0;
  loop.run(judge, Nanos{0}, seconds(600), &late, seconds(10));
  EXPECT_NEAR(judge.noise(), 0.10, 0.03);
  EXPECT_GE(loop.restores, 1u) << "the first cut was taken back";
  EXPECT_LE(loop.cuts, loop.restores + 3) << "cuts: " << loop.cuts;
  // 400/s with 10% refused: about 360 accepted a second after the first 10 s.
  EXPECT_GE(static_cast<double>(late) / 590, 0.95 * 360);
  EXPECT_LE(static_cast<double>(late) / 590, 1.01 * 400);
}

TEST(ThrottleJudge, AProviderCeilingIsFoundFromWhatItAccepts) {
  ThrottleJudge judge({}, at(Nanos{0}));
  Loop loop{300, 0, 400};
  loop.run(judge, Nanos{0}, seconds(60));
  EXPECT_EQ(loop.restores, 0u) << "throttles that stop when the rate falls are a ceiling";
  EXPECT_GE(loop.cuts, 1u);
  EXPECT_LE(loop.rate, 300.0);
  EXPECT_GE(loop.rate, 0.9 * 300);
  EXPECT_EQ(judge.noise(), 0);
  const std::uint64_t throttled_before = loop.throttled;
  loop.run(judge, seconds(60), seconds(120));
  EXPECT_EQ(loop.throttled, throttled_before) << "held under the ceiling: no more throttles";
}

TEST(ThrottleJudge, ACeilingUnderNoiseIsStillACeiling) {
  ThrottleJudge judge({}, at(Nanos{0}));
  Loop loop{300, 0.05, 500};
  std::uint64_t late = 0;
  loop.run(judge, Nanos{0}, seconds(300), &late, seconds(20));
  EXPECT_LE(loop.rate, 300 / 0.95 * 1.02);
  EXPECT_GE(static_cast<double>(late) / 280, 0.85 * 300) << "most of the ceiling used";
  EXPECT_LE(static_cast<double>(late) / 280, 300.0);
}

TEST(ThrottleJudge, NoVerdictOnFewAnswersOrWithoutExcess) {
  ThrottleJudge judge({}, at(Nanos{0}));
  for (int i = 0; i < 20; ++i) EXPECT_EQ(judge.answer(at(milliseconds(50 * i)), true).kind, Kind::kNone);
  EXPECT_EQ(judge.answer(at(seconds(1)), false).kind, Kind::kCapacity) << "20 answers, all throttled, judged";
  ThrottleJudge quiet({}, at(Nanos{0}));
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(quiet.answer(at(milliseconds(i * 10)), false).kind, Kind::kNone);
  // With no noise known, one throttle is excess: a ceiling found at its first
  // refusal costs the fewest. The cut is as small as the excess.
  ThrottleVerdict v;
  for (int i = 0; i <= 100 && v.kind == Kind::kNone; ++i)
    v = quiet.answer(at(seconds(10) + milliseconds(i * 10)), i == 5);
  ASSERT_EQ(v.kind, Kind::kCapacity);
  EXPECT_NEAR(v.keep, 0.99, 0.001);
}

// Every 10 ms an answer, throttled when `refused` says so; the verdicts.
std::vector<ThrottleVerdict> feed(ThrottleJudge& judge, int from_ms, int to_ms, bool (*refused)(int),
                                  Nanos retry_after = Nanos{0}) {
  std::vector<ThrottleVerdict> out;
  for (int ms = from_ms; ms < to_ms; ms += 10) {
    const ThrottleVerdict v = judge.answer(at(milliseconds(ms)), refused(ms), ms == 40 ? seconds(3) : retry_after);
    if (v.kind != Kind::kNone) out.push_back(v);
  }
  return out;
}

// A deep cut on one period's word could be a passing burst: the first is a
// step back (keep 1), the measured cut comes when the test period is
// excessive too. Each carries the longest Retry-After its throttles named.
TEST(ThrottleJudge, ADeepCutNeedsTwoExcessivePeriodsAndCarriesTheLongestRetryAfter) {
  ThrottleJudge judge({}, at(Nanos{0}));
  auto half = [](int ms) { return (ms / 10) % 2 == 0; };
  const std::vector<ThrottleVerdict> v = feed(judge, 0, 3050, half, seconds(1));
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].kind, Kind::kCapacity);
  EXPECT_EQ(v[0].keep, 1.0) << "one period's word: a step back";
  EXPECT_EQ(v[0].pause, seconds(3));
  EXPECT_EQ(v[1].kind, Kind::kCapacity) << "the test period refused half again";
  EXPECT_NEAR(v[1].keep, 0.5, 0.05);
  EXPECT_EQ(v[1].pause, seconds(1));
  // A passing burst: one excessive period, then none; no measured cut.
  ThrottleJudge burst({}, at(Nanos{0}));
  const std::vector<ThrottleVerdict> b = feed(burst, 0, 5050, [](int ms) { return ms < 1000 && (ms / 10) % 4 == 0; });
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].keep, 1.0);
}

// The step back's pause emptied the provider's window, so the test period
// was quiet; the ceiling is still there: the next excessive period makes the
// measured cut, not another step back.
TEST(ThrottleJudge, AStepBackQuietedOnlyByItsPauseStillLeadsToTheMeasuredCut) {
  ThrottleJudge judge({}, at(Nanos{0}));
  auto refused = [](int ms) { return (ms < 1000 || ms >= 3000) && (ms / 10) % 4 == 0; };
  const std::vector<ThrottleVerdict> v = feed(judge, 0, 4050, refused);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].keep, 1.0) << "one period's word: a step back";
  EXPECT_NEAR(v[1].keep, 0.75, 0.02) << "a quarter refused again after a quiet test: the measured cut";
  // Two quiet periods after the step back: it was a passing burst after all.
  ThrottleJudge passing({}, at(Nanos{0}));
  auto late = [](int ms) { return (ms < 1000 || ms >= 4000) && (ms / 10) % 4 == 0; };
  const std::vector<ThrottleVerdict> w = feed(passing, 0, 5050, late);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[1].keep, 1.0) << "a new step back, not a measured cut";
}

// A step back that paused (Retry-After: 1): when the pause ends, the
// provider's window refills from empty while the senders come back unevenly,
// and the throttles come in a lump. That second is not judged; the steady
// period after it makes the measured cut.
TEST(ThrottleJudge, TheRefillAfterAPauseIsNotJudged) {
  ThrottleJudge judge({}, at(Nanos{0}));
  auto quarter = [](int ms) { return (ms / 10) % 4 == 0; };
  std::vector<ThrottleVerdict> v = feed(judge, 0, 1010, quarter, seconds(1));
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].keep, 1.0) << "one period's word: a step back";
  judge.pausedUntil(at(seconds(2)));
  v = feed(judge, 2000, 3000, [](int ms) { return (ms / 10) % 5 < 3; });
  EXPECT_TRUE(v.empty()) << "the lump after the pause was judged: keep " << v[0].keep;
  v = feed(judge, 3000, 4050, quarter);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_NEAR(v[0].keep, 0.75, 0.02) << "the steady period after the refill makes the measured cut";
  // A pause that ended long ago skips nothing.
  judge.pausedUntil(at(seconds(1)));
  v = feed(judge, 7000, 8050, quarter);
  EXPECT_EQ(v.size(), 1u);
}

// The probe touching the limit (one throttle in a hundred, Retry-After a
// second) is a small cut without a pause; a longer Retry-After is a
// provider's penalty and pauses whatever the excess.
TEST(ThrottleJudge, ASmallExcessPausesOnlyForARetryAfterLongerThanAPeriod) {
  auto one_in_100 = [](int ms) { return ms == 500; };
  ThrottleJudge judge({}, at(Nanos{0}));
  std::vector<ThrottleVerdict> v = feed(judge, 0, 1010, one_in_100, seconds(1));
  ASSERT_EQ(v.size(), 1u);
  EXPECT_NEAR(v[0].keep, 0.99, 0.001);
  EXPECT_EQ(v[0].pause, Nanos{0});
  ThrottleJudge penalty({}, at(Nanos{0}));
  v = feed(penalty, 0, 1010, one_in_100, seconds(5));
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].pause, seconds(5));
}

TEST(ThrottleJudge, OneCutKeepsAtLeastMinKeep) {
  ThrottleJudge judge({}, at(Nanos{0}));
  const std::vector<ThrottleVerdict> v = feed(judge, 0, 3050, [](int) { return true; });
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[1].keep, 0.5) << "all refused: a pause, not a capacity of 0";
}

TEST(ThrottleJudge, ATestWhoseRateDidNotFallIsNoProofOfNoise) {
  // The sender did not slow down after the cut (it had less to send than its
  // rate): the throttles going on prove nothing, so another cut, not a restore.
  ThrottleJudge judge({}, at(Nanos{0}));
  Nanos t{0};
  ThrottleVerdict v;
  while (v.kind == Kind::kNone) v = judge.answer(at(t += milliseconds(5)), true);
  ASSERT_EQ(v.kind, Kind::kCapacity);
  int capacity = 0, noise = 0;
  for (int i = 0; i < 400; ++i) {
    v = judge.answer(at(t += milliseconds(5)), i % 2 == 0);
    capacity += v.kind == Kind::kCapacity;
    noise += v.kind == Kind::kNoise;
  }
  EXPECT_EQ(noise, 0);
  EXPECT_GE(capacity, 1);
}

TEST(ThrottleJudge, NoiseThatGoesAwayIsForgotten) {
  ThrottleJudge judge({}, at(Nanos{0}));
  Loop loop{1e9, 0.2, 400};
  loop.run(judge, Nanos{0}, seconds(60));
  EXPECT_GT(judge.noise(), 0.1);
  loop.noise = 0;
  loop.run(judge, seconds(60), seconds(120));
  EXPECT_LT(judge.noise(), 0.01);
  loop.capacity = 200;  // and a ceiling now is found as on the first day
  loop.run(judge, seconds(120), seconds(180));
  EXPECT_LE(loop.rate, 200.0) << "cuts " << loop.cuts << " restores " << loop.restores << " noise " << judge.noise();
}

// A worker taking over the judging (another judged until now) starts a
// fresh period with the noise the other learned: 10% throttles are noise at
// once, where a judge knowing none would cut at the first period.
TEST(ThrottleJudge, ResumingWithAnotherJudgesNoiseJudgesThatNoiseAsNoise) {
  auto tenth = [](int ms) { return ms % 100 == 0; };
  ThrottleJudge fresh({}, at(Nanos{0}));
  ASSERT_FALSE(feed(fresh, 0, 3000, tenth).empty()) << "knowing no noise, 10% is excess";
  ThrottleJudge judge({}, at(Nanos{0}));
  feed(judge, 0, 900, [](int) { return true; });  // a period it will not judge: another worker took over
  judge.resume(at(milliseconds(900)), 0.1);
  EXPECT_DOUBLE_EQ(judge.noise(), 0.1);
  const auto verdicts = feed(judge, 1000, 10000, tenth);
  EXPECT_TRUE(verdicts.empty()) << "first: share " << verdicts.front().share;
  EXPECT_NEAR(judge.noise(), 0.1, 0.01);
  // A cut pending or under test before is forgotten; the noise is capped.
  ThrottleJudge capped({}, at(Nanos{0}));
  capped.resume(at(Nanos{0}), 0.9);
  EXPECT_DOUBLE_EQ(capped.noise(), ThrottleJudgeOptions{}.max_noise);
}

// One worker of several: its own answers per second rose after the cut (its
// share of the provider's traffic moved) while the rate it is held to fell.
// Told that rate (heldTo), the test reads it and finds the 10% noise; from
// its answers alone it could not.
TEST(ThrottleJudge, TheTestReadsTheRateTheSenderIsHeldToWhenTold) {
  for (const bool told : {true, false}) {
    ThrottleJudge judge({}, at(Nanos{0}));
    double held = 400;
    int gap_us = 10'000;  // 100 answers a second
    std::vector<ThrottleVerdict> verdicts;
    int i = 0;
    for (Nanos t{0}; t < seconds(8) && verdicts.size() < 3; t += std::chrono::microseconds(gap_us), ++i) {
      if (told) judge.heldTo(held);
      const ThrottleVerdict v = judge.answer(at(t), i % 10 == 0);
      if (v.kind == Kind::kNone) continue;
      verdicts.push_back(v);
      if (v.kind == Kind::kCapacity && v.keep < 1) {
        held *= v.keep;   // the shared rate comes down...
        gap_us = 7'000;   // ...while this worker's own share of it rises
      }
    }
    ASSERT_GE(verdicts.size(), 3u) << told;
    EXPECT_EQ(verdicts[0].kind, Kind::kCapacity) << "a step back";
    EXPECT_EQ(verdicts[0].keep, 1.0);
    EXPECT_EQ(verdicts[1].kind, Kind::kCapacity) << "the measured cut";
    EXPECT_NEAR(verdicts[1].keep, 0.9, 0.01);
    if (told)
      EXPECT_EQ(verdicts[2].kind, Kind::kNoise) << "the held rate fell and the share did not";
    else
      EXPECT_EQ(verdicts[2].kind, Kind::kCapacity) << "its answers' rate rose: no proof of noise";
  }
}

TEST(ThrottleJudge, TimeGoingBackwardsCountsAsTheLastTime) {
  ThrottleJudge judge({}, at(seconds(10)));
  for (int i = 0; i < 100; ++i) judge.answer(at(seconds(5)), false);
  EXPECT_EQ(judge.capacityVerdicts(), 0u);
}

TEST(ThrottleJudge, OptionsAreChecked) {
  ThrottleJudgeOptions o;
  EXPECT_NO_THROW(validateThrottleJudge(o));
  o.period = Nanos{0};
  EXPECT_THROW(validateThrottleJudge(o), InvalidError);
  o = {};
  o.max_noise = 1;
  EXPECT_THROW(validateThrottleJudge(o), InvalidError);
  o = {};
  o.z = -1;
  EXPECT_THROW(validateThrottleJudge(o), InvalidError);
  o = {};
  o.max_raises = -1;
  EXPECT_THROW(validateThrottleJudge(o), InvalidError);
}

}  // namespace
}  // namespace pacer
