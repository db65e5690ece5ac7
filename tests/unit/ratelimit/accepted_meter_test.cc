#include "pacer/accepted_meter.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <deque>
#include <optional>

#include "pacer/throttle_judge.h"

namespace pacer {
namespace {

MonoTime at(Nanos d) { return MonoTime{d}; }
using std::chrono::milliseconds;
using std::chrono::seconds;
using Kind = ThrottleVerdict::Kind;

TEST(AcceptedMeter, CountsTheLastFullSecondOnlyOnceWatchedWhole) {
  AcceptedMeter m;
  // 300 accepted and 100 throttled a second, one answer every 2.5 ms.
  for (int us = 50; us < 2'500'000; us += 2500) m.add(at(std::chrono::microseconds(us)), (us / 2500) % 4 == 3);
  AcceptedRates r = m.last(at(milliseconds(2500)));
  ASSERT_TRUE(r.known());
  EXPECT_NEAR(r.accepted, 300, 1);
  EXPECT_NEAR(r.throttled, 100, 1);
  AcceptedMeter fresh;
  fresh.add(at(milliseconds(50)), false);
  EXPECT_FALSE(fresh.last(at(milliseconds(1050))).known()) << "the first slot was watched in part";
  EXPECT_TRUE(fresh.last(at(milliseconds(1150))).known());
  // Silence empties the slots it passes.
  r = m.last(at(milliseconds(4000)));
  ASSERT_TRUE(r.known());
  EXPECT_EQ(r.accepted, 0);
  EXPECT_EQ(r.throttled, 0);
}

TEST(AcceptedMeter, ASecondTouchingAPauseOrItsRefillIsNotMeasured) {
  AcceptedMeter m;
  for (int ms = 0; ms < 6000; ++ms) m.add(at(milliseconds(ms)), false);
  m.pausedUntil(at(milliseconds(4500)));
  EXPECT_FALSE(m.last(at(milliseconds(5999))).known()) << "the refill lasts until 5.5 s";
  EXPECT_FALSE(m.last(at(milliseconds(6400))).known());
  EXPECT_TRUE(m.last(at(milliseconds(6500))).known());
  // Time going back counts as the last time.
  EXPECT_TRUE(m.last(at(milliseconds(100))).known());
}

// Throttles of one recipient count over the last 5 s, the current slot
// among them, and a pause does not hide them (the crowd rule reads them).
TEST(AcceptedMeter, CountsRecipientThrottlesOverFiveSecondsThroughAPause) {
  AcceptedMeter m;
  m.addRecipientThrottle(at(milliseconds(150)));
  m.addRecipientThrottle(at(milliseconds(2100)));
  m.pausedUntil(at(milliseconds(3000)));
  m.addRecipientThrottle(at(milliseconds(4000)));
  AcceptedRates r = m.last(at(milliseconds(4050)));
  EXPECT_FALSE(r.known()) << "the second held the pause";
  EXPECT_EQ(r.recipient, 3);
  EXPECT_EQ(m.last(at(milliseconds(5099))).recipient, 3) << "the slot of 100-200 ms is 4.9 s back";
  EXPECT_EQ(m.last(at(milliseconds(5100))).recipient, 2) << "and then 5 s";
  EXPECT_EQ(m.last(at(seconds(30))).recipient, 0);
}

// Four workers behind one provider that accepts 400 in any one-second
// window, configured at 490/s. Each worker spends its quarter of the rate in
// a burst of its own quarter-second (leases are spent in bursts). After a
// pause the provider's window refills from empty, so it accepts the first
// 400 of each second and refuses the rest: every refusal lands in the last
// worker's burst, and that worker judges. Its own throttle share says the
// provider takes a third of the rate (the cut is clipped to min_keep); what
// the four workers' meters accepted says 400 / 490.
struct FourWorkers {
  double rate = 490;
  double first_keep = 0;                // the first measured cut (keep < 1), 0: none
  std::optional<double> limit_before;   // the rate the cut applies to
  std::array<AcceptedMeter, 4> meters;  // one per worker
  std::deque<Nanos> window;             // the provider's accepted, last second
  MonoTime paused_until{};

  void run(ThrottleJudge& judge, bool tell_rates) {
    const Nanos retry_after = seconds(1);
    std::array<double, 4> due{};
    for (Nanos t{0}; t < seconds(12) && first_keep == 0; t += std::chrono::microseconds(250)) {
      const MonoTime now = at(t);
      if (now < paused_until) continue;
      const auto in_second = (t % seconds(1)).count();
      const auto w = static_cast<std::size_t>(in_second / (Nanos(seconds(1)).count() / 4));
      due[w] += rate * 250e-6;  // the worker whose quarter it is sends at the whole rate
      while (due[w] >= 1) {
        due[w] -= 1;
        while (!window.empty() && t - window.front() >= seconds(1)) window.pop_front();
        const bool refused = window.size() >= 400;
        if (!refused) window.push_back(t);
        meters[w].add(now, refused);
        if (w != 3) continue;
        judge.heldTo(rate);
        if (tell_rates) {
          AcceptedRates sum{0, 0};
          for (AcceptedMeter& m : meters) {
            const AcceptedRates r = m.last(now);
            if (!r.known()) {
              sum = AcceptedRates{};
              break;
            }
            sum.accepted += r.accepted;
            sum.throttled += r.throttled;
          }
          judge.providerRates(sum);
        }
        const ThrottleVerdict v = judge.answer(now, refused, refused ? retry_after : Nanos{0});
        if (v.kind != Kind::kCapacity) continue;
        if (v.keep < 1) {
          first_keep = v.keep;
          break;
        }
        limit_before = rate;
        rate *= 0.98;  // the step back
        paused_until = now + v.pause;
        judge.pausedUntil(paused_until);
        for (AcceptedMeter& m : meters) m.pausedUntil(paused_until);
        window.clear();  // the pause outlasts the provider's window
      }
    }
  }
};

TEST(ThrottleJudgeWithProviderRates, FourWorkersLumpAfterAPauseDoesNotSkewTheCut) {
  const double truth = 400.0 / 490.0;
  ThrottleJudge judge({}, at(Nanos{0}));
  FourWorkers run;
  run.run(judge, true);
  ASSERT_TRUE(run.limit_before.has_value()) << "no step back";
  ASSERT_GT(run.first_keep, 0) << "no measured cut";
  EXPECT_NEAR(run.first_keep, truth, 0.05 * truth) << "the cut from what the provider accepted";
  // The same run judged from the judge's own share lands far off (the
  // estimate this replaces; shown, not a bound on anything new).
  ThrottleJudge old({}, at(Nanos{0}));
  FourWorkers before;
  before.run(old, false);
  ASSERT_GT(before.first_keep, 0);
  EXPECT_GT(std::abs(before.first_keep - truth), 0.05 * truth) << "the scenario no longer skews the share";
}

// Feeds `judge` one answer a millisecond from `from_ms` to `to_ms`, telling
// it the provider's rates first.
std::vector<ThrottleVerdict> feed(ThrottleJudge& judge, int from_ms, int to_ms, bool (*refused)(int),
                                  AcceptedRates wide, double held = 490) {
  std::vector<ThrottleVerdict> out;
  for (int ms = from_ms; ms < to_ms; ++ms) {
    judge.heldTo(held);
    judge.providerRates(wide);
    const ThrottleVerdict v = judge.answer(at(milliseconds(ms)), refused(ms));
    if (v.kind != Kind::kNone) out.push_back(v);
  }
  return out;
}

bool quarter(int ms) { return (ms / 10) % 4 == 0; }
bool none(int) { return false; }

ThrottleJudgeOptions raisingThrice() {
  ThrottleJudgeOptions o;
  o.max_raises = 3;
  return o;
}

// A deep cut whose tests find no throttle anywhere climbs back a step per
// test (allowed three); the first throttle anywhere ends the climb.
TEST(ThrottleJudgeWithProviderRates, AQuietTestRaisesADeepCutInStepsUntilAThrottle) {
  ThrottleJudge judge(raisingThrice(), at(Nanos{0}));
  // The judge's own answers are a quarter refused; the provider's, a tenth.
  const AcceptedRates wide{360, 40};
  // A step back at 1 s, a period of settling, the measured cut at 3 s.
  std::vector<ThrottleVerdict> v = feed(judge, 0, 3010, quarter, wide);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].keep, 1.0) << "a step back";
  EXPECT_NEAR(v[1].keep, 0.9, 0.001) << "the measured cut from the provider's share, not the judge's";
  // Settling, then a test with no throttle here nor anywhere: a raise.
  v = feed(judge, 3010, 5020, none, AcceptedRates{300, 0});
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].kind, Kind::kRaise);
  EXPECT_NEAR(v[0].keep, 0.92, 1e-9);
  // Another quiet test: another step.
  v = feed(judge, 5020, 7030, none, AcceptedRates{300, 0});
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].kind, Kind::kRaise);
  EXPECT_NEAR(v[0].keep, 0.94, 1e-9);
  // Quiet here, but another worker was throttled: the climb ends, with a
  // cut of the provider's small excess (ThrottleJudgeWideExcess below).
  v = feed(judge, 7030, 9040, none, AcceptedRates{300, 2});
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].kind, Kind::kCapacity);
  EXPECT_NEAR(v[0].keep, 300.0 / 302, 1e-9);
  v = feed(judge, 9040, 14000, none, AcceptedRates{300, 0});
  EXPECT_TRUE(v.empty()) << "no raise without a deep cut before it";
}

// Raises are bounded: max_raises steps after one cut, however quiet.
TEST(ThrottleJudgeWithProviderRates, ADeepCutIsRaisedAtMostMaxRaisesSteps) {
  ThrottleJudge judge(raisingThrice(), at(Nanos{0}));
  std::vector<ThrottleVerdict> v = feed(judge, 0, 3010, quarter, AcceptedRates{300, 100});
  ASSERT_EQ(v.size(), 2u);
  EXPECT_NEAR(v[1].keep, 0.75, 0.001);
  v = feed(judge, 3010, 20000, none, AcceptedRates{300, 0});
  ASSERT_EQ(v.size(), 3u);
  EXPECT_NEAR(v[2].keep, 0.81, 1e-9);
}

// By default a deep cut is raised once: the cut measured over the whole
// provider is within a few percent (the slow probe recovers the rest), and
// a second step from a cut that was right carried an over-configured APNs
// provider over its window (bench/RESULTS-push.md).
TEST(ThrottleJudgeWithProviderRates, ByDefaultADeepCutIsRaisedOnce) {
  ThrottleJudge judge({}, at(Nanos{0}));
  std::vector<ThrottleVerdict> v = feed(judge, 0, 3010, quarter, AcceptedRates{300, 100});
  ASSERT_EQ(v.size(), 2u);
  v = feed(judge, 3010, 20000, none, AcceptedRates{300, 0});
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].kind, Kind::kRaise);
  EXPECT_NEAR(v[0].keep, 0.77, 1e-9);
}

// max_raises 0: a quiet test after a deep cut raises nothing, and the
// period does not wait for the provider's rates to decide a raise.
TEST(ThrottleJudgeWithProviderRates, NoRaiseWhenMaxRaisesIsZero) {
  ThrottleJudgeOptions o;
  o.max_raises = 0;
  ThrottleJudge judge(o, at(Nanos{0}));
  std::vector<ThrottleVerdict> v = feed(judge, 0, 3010, quarter, AcceptedRates{300, 100});
  ASSERT_EQ(v.size(), 2u);
  v = feed(judge, 3010, 20000, none, AcceptedRates{300, 0});
  EXPECT_TRUE(v.empty());
}

// When the workers send less than the held rate, what the provider accepted
// is what they sent: its share of throttles, not its accepted count, says
// how far the rate was above its ceiling.
TEST(ThrottleJudgeWithProviderRates, ACutIsNotDeepenedByWorkersSendingBelowTheHeldRate) {
  ThrottleJudge judge({}, at(Nanos{0}));
  // Held at 490, the workers sent 300 a second and 30 of them were refused.
  const std::vector<ThrottleVerdict> v = feed(judge, 0, 3010, quarter, AcceptedRates{270, 30});
  ASSERT_EQ(v.size(), 2u);
  EXPECT_NEAR(v[1].keep, 0.9, 0.001) << "not 270 / 490";
}

// A quiet test with the provider's rates unknown (a worker's second still
// held a pause) waits a period for them, then leaves the cut as it is.
TEST(ThrottleJudgeWithProviderRates, NoRaiseWithoutTheProvidersRates) {
  ThrottleJudge judge({}, at(Nanos{0}));
  std::vector<ThrottleVerdict> v = feed(judge, 0, 3010, quarter, AcceptedRates{300, 100});
  ASSERT_EQ(v.size(), 2u);
  v = feed(judge, 3010, 8000, none, AcceptedRates{});
  EXPECT_TRUE(v.empty());
  // Never told: the throttle share decides, as before, and nothing is raised.
  ThrottleJudge plain({}, at(Nanos{0}));
  std::vector<ThrottleVerdict> p;
  for (int ms = 0; ms < 8000; ++ms) {
    const ThrottleVerdict x = plain.answer(at(milliseconds(ms)), ms < 3010 && quarter(ms));
    if (x.kind != Kind::kNone) p.push_back(x);
  }
  ASSERT_EQ(p.size(), 2u);
  EXPECT_NEAR(p[1].keep, 0.75, 0.02);
}

// The probe touching the window with four workers: one throttle in the
// provider's last second, on another worker; the judge's own answers clean.
TEST(ThrottleJudgeWideExcess, AThrottleAnyWorkerSawIsASmallCutWhileNoNoiseIsKnown) {
  ThrottleJudge judge({}, at(Nanos{0}));
  std::vector<ThrottleVerdict> v = feed(judge, 0, 5000, none, AcceptedRates{399, 0});
  EXPECT_TRUE(v.empty()) << "no throttle anywhere";
  v = feed(judge, 5000, 6010, none, AcceptedRates{399, 1});
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].kind, Kind::kCapacity);
  EXPECT_NEAR(v[0].share, 1.0 / 400, 1e-9) << "the provider's share, not the judge's 0";
  EXPECT_NEAR(v[0].keep, 399.0 / 400, 1e-9) << "measured: the probe's small cut";
  EXPECT_EQ(v[0].pause, Nanos{0}) << "a small excess does not pause";
}

// A deep excess only another worker saw stays that worker's to judge (its
// own answers beyond max_noise: one node, one bind refused), and with noise
// known the judge's own share decides: the noise was learned on it.
TEST(ThrottleJudgeWideExcess, NotForADeepExcessElsewhereNorOnceNoiseIsKnown) {
  ThrottleJudge deep({}, at(Nanos{0}));
  EXPECT_TRUE(feed(deep, 0, 5000, none, AcceptedRates{300, 100}).empty());
  ThrottleJudge noisy({}, at(Nanos{0}));
  noisy.resume(at(Nanos{0}), 0.1);
  EXPECT_TRUE(feed(noisy, 0, 5000, none, AcceptedRates{399, 1}).empty());
}

}  // namespace
}  // namespace pacer
