#include "pacer/callback_queue.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <vector>

namespace pacer {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

CallbackPolicy policy(std::size_t capacity, int max_attempts) {
  CallbackPolicy p;
  p.capacity = capacity;
  p.max_attempts = max_attempts;
  p.first_backoff = seconds(1);
  p.max_backoff = seconds(8);
  return p;
}

TEST(ClassifyCallbackStatus, TwoHundredsAreDoneFaultsAndThrottlesRetryOtherAnswersAreRefused) {
  for (long s : {200L, 201L, 202L, 204L, 299L}) EXPECT_EQ(classifyCallbackStatus(s), CallbackAnswer::kAccepted) << s;
  for (long s : {0L, 408L, 429L, 500L, 502L, 503L, 504L, 599L})
    EXPECT_EQ(classifyCallbackStatus(s), CallbackAnswer::kRetry) << s;
  for (long s : {100L, 301L, 400L, 401L, 403L, 404L, 410L, 422L, 600L})
    EXPECT_EQ(classifyCallbackStatus(s), CallbackAnswer::kRefused) << s;
}

TEST(CallbackQueueTest, AFullQueueAdmitsNothingMoreUntilFinishedEventsAreDeleted) {
  SimulatedTimeSource clock;
  CallbackQueue q(policy(3, 5));
  EXPECT_EQ(q.room(), 3u);
  EXPECT_TRUE(q.admit(1, "c", clock.now()));
  EXPECT_TRUE(q.admit(2, "c", clock.now()));
  EXPECT_TRUE(q.admit(3, "c", clock.now()));
  EXPECT_EQ(q.after(), 3);
  EXPECT_EQ(q.room(), 0u);
  EXPECT_FALSE(q.admit(4, "c", clock.now()));  // stays in the outbox for a later read
  EXPECT_EQ(q.after(), 3);
  EXPECT_EQ(q.takeDue(clock.now(), 10), (std::vector<std::int64_t>{1, 2, 3}));
  EXPECT_EQ(q.answer(2, 200, clock.now()), CallbackQueue::Verdict::kDone);
  EXPECT_EQ(q.room(), 0u);  // done, but its row is not deleted yet: a crash would POST it again
  EXPECT_EQ(q.takeFinished(), (std::vector<std::int64_t>{2}));
  EXPECT_EQ(q.room(), 1u);
  EXPECT_TRUE(q.admit(4, "c", clock.now()));
}

TEST(CallbackQueueTest, AnEventIsInFlightOnceAndAnAnswerToAnythingElseIsIgnored) {
  SimulatedTimeSource clock;
  CallbackQueue q(policy(10, 5));
  q.admit(1, "c", clock.now());
  EXPECT_FALSE(q.admit(1, "c", clock.now()));
  EXPECT_EQ(q.answer(1, 200, clock.now()), CallbackQueue::Verdict::kUnknown);  // not sent yet
  EXPECT_EQ(q.takeDue(clock.now(), 10).size(), 1u);
  EXPECT_TRUE(q.takeDue(clock.now(), 10).empty());
  EXPECT_EQ(q.inFlight(), 1u);
  EXPECT_EQ(q.answer(7, 200, clock.now()), CallbackQueue::Verdict::kUnknown);
  EXPECT_EQ(q.answer(1, 200, clock.now()), CallbackQueue::Verdict::kDone);
  EXPECT_EQ(q.answer(1, 200, clock.now()), CallbackQueue::Verdict::kUnknown);
  EXPECT_EQ(q.inFlight(), 0u);
  EXPECT_EQ(q.accepted(), 1u);
}

TEST(CallbackQueueTest, RetriesBackOffExponentiallyUpToTheCapAndGiveUpAfterMaxAttempts) {
  SimulatedTimeSource clock;
  CallbackQueue q(policy(10, 6));
  q.admit(1, "c", clock.now());
  const std::vector<Nanos> expected{seconds(1), seconds(2), seconds(4), seconds(8), seconds(8)};
  for (const Nanos wait : expected) {
    ASSERT_EQ(q.takeDue(clock.now(), 10).size(), 1u);
    ASSERT_EQ(q.answer(1, 503, clock.now()), CallbackQueue::Verdict::kRetry);
    ASSERT_EQ(q.nextDue(), clock.now() + wait);
    clock.advance(wait - milliseconds(1));
    EXPECT_TRUE(q.takeDue(clock.now(), 10).empty()) << "due before its backoff";
    clock.advance(milliseconds(1));
  }
  ASSERT_EQ(q.takeDue(clock.now(), 10).size(), 1u);
  EXPECT_EQ(q.answer(1, 0, clock.now()), CallbackQueue::Verdict::kGaveUp);  // the sixth POST
  EXPECT_EQ(q.retried(), 5u);
  EXPECT_EQ(q.gaveUp(), 1u);
  EXPECT_EQ(q.takeFinished(), (std::vector<std::int64_t>{1}));  // its row goes: counted, not lost silently
  const auto g = q.takeGiveUps();
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].campaign, "c");
  EXPECT_EQ(g[0].count, 1u);
  EXPECT_EQ(g[0].last_status, 0);
}

TEST(CallbackQueueTest, ARefusalIsGivenUpAtOnceAndCountedPerCampaign) {
  SimulatedTimeSource clock;
  CallbackQueue q(policy(10, 5));
  for (std::int64_t id = 1; id <= 5; ++id) q.admit(id, id <= 3 ? "a" : "b", clock.now());
  for (std::int64_t id : q.takeDue(clock.now(), 10))
    EXPECT_EQ(q.answer(id, id == 5 ? 410 : 404, clock.now()), CallbackQueue::Verdict::kGaveUp);
  const auto g = q.takeGiveUps();
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[0].campaign, "a");
  EXPECT_EQ(g[0].count, 3u);
  EXPECT_EQ(g[0].last_status, 404);
  EXPECT_EQ(g[1].campaign, "b");
  EXPECT_EQ(g[1].count, 2u);
  EXPECT_EQ(g[1].last_status, 410);
  EXPECT_TRUE(q.takeGiveUps().empty());  // reported once
  EXPECT_EQ(q.retried(), 0u);
}

TEST(CallbackQueueTest, RewindsOnlyWhenNothingIsHeldAndAFailedDeleteIsHeldAgain) {
  SimulatedTimeSource clock;
  CallbackQueue q(policy(10, 5));
  q.admit(5, "c", clock.now());
  EXPECT_FALSE(q.rewind());
  q.takeDue(clock.now(), 1);
  q.answer(5, 204, clock.now());
  auto done = q.takeFinished();
  q.giveBack(done);  // the delete failed
  EXPECT_FALSE(q.rewind());
  EXPECT_EQ(q.takeFinished(), (std::vector<std::int64_t>{5}));
  EXPECT_TRUE(q.rewind());
  EXPECT_EQ(q.after(), 0);
}

// Thousands of simulated events against a receiver that answers at random:
// each event ends exactly once (done or given up), never takes more than
// max_attempts POSTs, never waits less than its backoff, and the queue never
// holds more than its capacity.
TEST(CallbackQueueTest, UnderRandomAnswersEveryEventEndsOnceWithinItsAttemptsAndTheBound) {
  SimulatedTimeSource clock;
  const std::size_t capacity = 50;
  const int max_attempts = 4;
  CallbackQueue q(policy(capacity, max_attempts));
  std::mt19937 rng(7);
  const long answers[] = {200, 200, 200, 500, 503, 429, 0, 404};
  std::map<std::int64_t, int> posts;
  std::map<std::int64_t, MonoTime> earliest;  // the next POST may not come before
  std::set<std::int64_t> ended;
  std::int64_t next_id = 1;
  const std::int64_t total = 5000;
  std::uint64_t done = 0, gave_up = 0;
  for (int tick = 0; tick < 200000 && static_cast<std::int64_t>(ended.size()) < total; ++tick) {
    while (next_id <= total && q.room() > 0) ASSERT_TRUE(q.admit(next_id++, "c", clock.now()));
    ASSERT_LE(q.held(), capacity);
    for (std::int64_t id : q.takeDue(clock.now(), 8)) {
      ASSERT_FALSE(ended.contains(id));
      if (earliest.contains(id)) {
        ASSERT_GE(clock.now(), earliest[id]);
      }
      ++posts[id];
      const long status = answers[rng() % std::size(answers)];
      const auto v = q.answer(id, status, clock.now());
      ASSERT_LE(posts[id], max_attempts);
      if (v == CallbackQueue::Verdict::kRetry) {
        earliest[id] = clock.now() + std::chrono::seconds(1);  // at least the first backoff
      } else {
        ASSERT_TRUE(v == CallbackQueue::Verdict::kDone || v == CallbackQueue::Verdict::kGaveUp);
        (v == CallbackQueue::Verdict::kDone ? done : gave_up) += 1;
        if (v == CallbackQueue::Verdict::kGaveUp && status != 404) {
          ASSERT_EQ(posts[id], max_attempts);
        }
      }
    }
    for (std::int64_t id : q.takeFinished()) ASSERT_TRUE(ended.insert(id).second);
    clock.advance(milliseconds(100));
  }
  EXPECT_EQ(static_cast<std::int64_t>(ended.size()), total);
  EXPECT_EQ(done + gave_up, static_cast<std::uint64_t>(total));
  EXPECT_EQ(q.accepted(), done);
  EXPECT_EQ(q.gaveUp(), gave_up);
  EXPECT_GT(q.retried(), 0u);
  EXPECT_EQ(q.held(), 0u);
}

}  // namespace
}  // namespace pacer
