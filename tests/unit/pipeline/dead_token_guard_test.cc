#include "pacer/dead_token_guard.h"

#include <gtest/gtest.h>

#include <random>

namespace pacer {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class DeadTokenGuardTest : public ::testing::Test {
 protected:
  // `n` answers, `every`-th of them dead (0: none), `gap` apart; returns how many were held.
  int feed(int n, int every, Nanos gap = milliseconds(10)) {
    int held = 0;
    for (int i = 1; i <= n; ++i) {
      clock_.advance(gap);
      if (guard_.record(every > 0 && i % every == 0, clock_.now())) ++held;
    }
    return held;
  }
  SimulatedTimeSource clock_{monoAt(seconds(1000))};
  DeadTokenGuard guard_{DeadTokenGuardOptions{}};
};

TEST_F(DeadTokenGuardTest, ANormalShareOfDeadTokensIsNeverHeld) {
  // One dead token in ten (10%), 100 answers/s for 10 minutes.
  EXPECT_EQ(feed(60'000, 10), 0);
  EXPECT_FALSE(guard_.holding());
  EXPECT_EQ(guard_.trips(), 0u);
  EXPECT_NEAR(guard_.ratio(clock_.now()), 0.1, 0.001);
  EXPECT_NEAR(static_cast<double>(guard_.answers(clock_.now())), 6000, 100) << "60 s of answers at 100/s";
}

TEST_F(DeadTokenGuardTest, AnAudienceThatIsAllDeadIsHeldFromTheSeventeenthAnswer) {
  // threshold 1/3 of min_answers 50 is 16.7: the 17th dead answer is enough evidence.
  for (int i = 1; i <= 16; ++i) {
    clock_.advance(milliseconds(1));
    EXPECT_FALSE(guard_.record(true, clock_.now())) << i;
  }
  clock_.advance(milliseconds(1));
  EXPECT_TRUE(guard_.record(true, clock_.now()));
  EXPECT_TRUE(guard_.holding());
  EXPECT_EQ(feed(1000, 1), 1000) << "every later dead verdict is held";
  EXPECT_EQ(guard_.trips(), 1u) << "one trip, not one per answer";
  EXPECT_EQ(guard_.held(), 1001u);
}

TEST_F(DeadTokenGuardTest, BelowTheMinimumItDoesNotJudge) {
  // 30 answers, 15 dead (50%): too few answers, and too few dead, to judge.
  EXPECT_EQ(feed(30, 2), 0);
  EXPECT_FALSE(guard_.holding());
  // 20 good ones: 50 answers, 15 dead (30%): judged, under a third.
  EXPECT_EQ(feed(20, 0), 0);
  EXPECT_FALSE(guard_.holding());
  // Then dead ones: the third makes 18 of 53 (34%).
  EXPECT_EQ(feed(2, 1), 0);
  EXPECT_FALSE(guard_.holding());
  EXPECT_EQ(feed(1, 1), 1);
  EXPECT_TRUE(guard_.holding());
}

TEST_F(DeadTokenGuardTest, ItLetsGoOnlyWhenAJudgedWindowIsBackUnderTheThreshold) {
  feed(100, 1);
  ASSERT_TRUE(guard_.holding());
  // The provider is paused: no answers for two minutes; the window empties,
  // and an empty window is no evidence that it is over.
  clock_.advance(seconds(120));
  EXPECT_EQ(guard_.answers(clock_.now()), 0u);
  EXPECT_EQ(guard_.ratio(clock_.now()), 0.0);
  EXPECT_TRUE(guard_.holding());
  // A mistake still in place: held at once.
  EXPECT_TRUE(guard_.record(true, clock_.now()));
  // Fixed: good answers until a judged window is at or under a third.
  EXPECT_EQ(feed(48, 0), 0);
  EXPECT_TRUE(guard_.holding()) << "49 answers: not judged yet";
  EXPECT_EQ(feed(1, 0), 0);
  EXPECT_FALSE(guard_.holding()) << "50 answers, 1 dead";
  EXPECT_EQ(feed(1000, 20), 0) << "5% dead: recorded again";
}

TEST_F(DeadTokenGuardTest, OldAnswersLeaveTheWindow) {
  feed(300, 0, milliseconds(100));  // 30 s of good answers
  EXPECT_EQ(guard_.answers(clock_.now()), 300u);
  clock_.advance(seconds(30));
  EXPECT_GE(guard_.answers(clock_.now()), 1u) << "the last answers are still in the 60 s window";
  clock_.advance(seconds(31));
  EXPECT_EQ(guard_.answers(clock_.now()), 0u) << "all older than the window";
  // A burst of dead answers now is judged on its own, not diluted by the old ones.
  EXPECT_GT(feed(50, 1, milliseconds(1)), 0);
  EXPECT_TRUE(guard_.holding());
}

TEST_F(DeadTokenGuardTest, SettingsChangeTheDecision) {
  DeadTokenGuardOptions o;
  o.threshold = 0.5;
  o.min_answers = 100;
  o.window = seconds(10);
  DeadTokenGuard g(o);
  int held = 0;
  for (int i = 1; i <= 1000; ++i) {
    clock_.advance(milliseconds(10));
    held += g.record(i % 5 < 2, clock_.now()) ? 1 : 0;  // 40% dead: under 0.5
  }
  EXPECT_EQ(held, 0);
  o.enabled = false;
  DeadTokenGuard off(o);
  for (int i = 0; i < 1000; ++i) {
    clock_.advance(milliseconds(10));
    held += off.record(true, clock_.now()) ? 1 : 0;
  }
  EXPECT_EQ(held, 0) << "disabled: never holds";
  EXPECT_FALSE(off.holding());
}

TEST_F(DeadTokenGuardTest, TimeGoingBackwardsCountsInTheLatestBucket) {
  feed(10, 0);
  const MonoTime later = clock_.now();
  EXPECT_FALSE(guard_.record(false, later - seconds(30)));
  EXPECT_EQ(guard_.answers(later), 11u);
  EXPECT_EQ(guard_.answers(later - seconds(100)), 11u);
}

// Random traffic for an hour at a varying rate: with a normal dead share
// (up to 15%) the guard never holds; with a broken one (60%) it holds within
// the first 50 answers and holds every dead verdict after that.
TEST_F(DeadTokenGuardTest, RandomTrafficHoldsOnlyAnAbnormalShare) {
  std::mt19937_64 rng(7);
  for (const double share : {0.0, 0.05, 0.15, 0.6}) {
    DeadTokenGuard g{DeadTokenGuardOptions{}};
    std::bernoulli_distribution dead(share);
    std::uniform_int_distribution<int> gap_ms(1, 400);
    int answers = 0, passed_dead = 0;
    for (MonoTime end = clock_.now() + seconds(3600); clock_.now() < end; ++answers) {
      clock_.advance(milliseconds(gap_ms(rng)));
      const bool d = dead(rng);
      const bool held = g.record(d, clock_.now());
      if (d && !held) ++passed_dead;
      if (share < 0.2) {
        ASSERT_FALSE(held) << share << " at answer " << answers;
      }
    }
    if (share > 0.5) {
      EXPECT_EQ(g.trips(), 1u);
      EXPECT_LE(passed_dead, 17) << "only the verdicts before it could judge are recorded";
      EXPECT_GE(g.held(), static_cast<std::uint64_t>(answers * 0.55));
    }
  }
}

}  // namespace
}  // namespace pacer
