// WorkerCore's frequency caps on a simulated clock, with the in-memory cap
// store behind a switch that makes it unreachable.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>

#include <algorithm>

#include "pacer/worker.h"
#include "support/worker_fixture.h"

namespace pacer {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;

const WallTime kNoon{std::chrono::sys_days{std::chrono::year{2026} / 11 / 25} + hours(12)};

RawMessage raw(std::int64_t offset, std::string campaign, std::string recipient) {
  RawMessage r;
  r.position = Position{"t", 0, offset};
  r.key = std::move(campaign);
  r.headers.emplace_back("message-id", "m" + std::to_string(offset));
  if (!recipient.empty()) r.headers.emplace_back("recipient", recipient);
  r.value = "p";
  return r;
}

CampaignInfo capped(std::string id, double rate, std::optional<FrequencyCapRule> cap,
                    CapPolicy policy = CapPolicy::kSuppress, double burst = 1) {
  CampaignInfo c;
  c.id = std::move(id);
  c.limit = RateLimit{rate, burst};
  c.frequency_cap = cap;
  c.cap_policy = policy;
  return c;
}

FrequencyCapRule rule(std::uint32_t limit, std::chrono::milliseconds window) { return FrequencyCapRule{limit, window}; }

class WorkerCapsTest : public test_support::WorkerCoreFixture {
 protected:
  // The in-memory cap store caps_; the wall clock is set to noon once and
  // stays there (as these tests always had it).
  void make(WorkerOptions o = {}) {
    o.caps = &caps_;
    o.ledger_flush_interval = milliseconds(50);
    makeCore(o, false, kNoon);
  }
  std::size_t sentTo(const std::string& recipient) const {
    return static_cast<std::size_t>(std::count_if(sink_.submitted.begin(), sink_.submitted.end(),
                                                  [&](const Message& m) { return m.recipient == recipient; }));
  }
};

// Half the messages go to one recipient capped at 1 a day: those are
// suppressed without spending the campaign's tokens, so the rest go out in
// the time their own number takes at the rate.
TEST_F(WorkerCapsTest, SuppressedMessagesGetARowAndSpendNoToken) {
  make();
  core_->upsertCampaign(capped("a", 10, rule(1, hours(24))), clock_.now());
  for (int i = 0; i < 100; ++i) core_->offer(raw(i, "a", i % 2 ? "x" : "r" + std::to_string(i)), clock_.now());
  run(seconds(6));
  EXPECT_EQ(sentTo("x"), 1u);
  EXPECT_EQ(sink_.submitted.size(), 51u) << "51 sends at 10/s fit in 6 s only if suppressed ones cost nothing";
  EXPECT_EQ(ledger_.count(DeliveryStatus::kSuppressed), 49u);
  EXPECT_EQ(statsOf("a").suppressed, 49u);
  EXPECT_EQ(core_->stats().suppressed, 49u);
  EXPECT_EQ(ledger_.byId["m3"].reason, "suppressed: frequency cap campaign:a 1/1d, allowed at 2026-11-26T12:00:00Z");
  EXPECT_EQ(core_->committable(TopicPartition{"t", 0}), 100) << "a suppressed row is a finished outcome";
}

// The row's time is UTC whatever the process's TZ says (pacerd may run with any).
TEST_F(WorkerCapsTest, TheSuppressedRowsTimeIsUtcWhateverTheLocalZone) {
  const char* old_tz = std::getenv("TZ");
  const std::string saved = old_tz ? old_tz : "";
  setenv("TZ", "Asia/Tokyo", 1);
  tzset();
  make();
  core_->upsertCampaign(capped("a", 10, rule(1, hours(24))), clock_.now());
  core_->offer(raw(0, "a", "x"), clock_.now());
  core_->offer(raw(1, "a", "x"), clock_.now());
  run(seconds(1));
  if (old_tz) setenv("TZ", saved.c_str(), 1); else unsetenv("TZ");
  tzset();
  EXPECT_EQ(ledger_.byId["m1"].reason, "suppressed: frequency cap campaign:a 1/1d, allowed at 2026-11-26T12:00:00Z");
}

TEST_F(WorkerCapsTest, DeferredMessagesWaitUntilTheCapAllowsThem) {
  make();
  core_->upsertCampaign(capped("a", 100, rule(1, hours(1)), CapPolicy::kDefer), clock_.now());
  core_->offer(raw(0, "a", "x"), clock_.now());
  core_->offer(raw(1, "a", "x"), clock_.now());
  run(seconds(1));
  EXPECT_EQ(sentTo("x"), 1u);
  EXPECT_EQ(statsOf("a").deferred, 1u);
  EXPECT_EQ(statsOf("a").cap_waiting, 1u) << "the console's and top's 'frequency cap' reason reads this";
  EXPECT_EQ(statsOf("a").quiet_waiting, 0u);
  EXPECT_EQ(core_->committable(TopicPartition{"t", 0}), 1) << "the waiting one holds its offset";
  run(hours(1) - seconds(2), milliseconds(500));
  EXPECT_EQ(sentTo("x"), 1u) << "not before the hour is over";
  run(seconds(3));
  EXPECT_EQ(statsOf("a").cap_waiting, 0u);
  EXPECT_EQ(sentTo("x"), 2u);
  EXPECT_EQ(ledger_.count(DeliveryStatus::kSuppressed), 0u);
}

TEST_F(WorkerCapsTest, ALongDeferIsParkedUntilAllowedSoTheOffsetAdvances) {
  WorkerOptions o;
  o.caps = &caps_;
  o.ledger_flush_interval = milliseconds(50);
  core_ = std::make_unique<WorkerCore>(o, ledger_, sink_, &parking_, clock_.now());
  core_->setWallClock(kNoon, clock_.now());
  core_->upsertCampaign(capped("a", 100, rule(1, hours(1)), CapPolicy::kDefer), clock_.now());
  core_->offer(raw(0, "a", "x"), clock_.now());
  core_->offer(raw(1, "a", "x"), clock_.now());
  run(seconds(1));
  EXPECT_EQ(parking_.size(), 1u);
  // Until the first send, counted at the first step (5 ms in), leaves the hour.
  EXPECT_EQ(parking_.not_before["m1"], kNoon + milliseconds(5) + hours(1)) << "parked until the cap allows it";
  EXPECT_EQ(core_->committable(TopicPartition{"t", 0}), 2);
  run(hours(1) - seconds(2), milliseconds(500));
  EXPECT_EQ(sentTo("x"), 1u);
  run(seconds(3));
  EXPECT_EQ(sentTo("x"), 2u);
}

TEST_F(WorkerCapsTest, WhileTheStoreIsDownMessagesWaitUncheckedNeverSentNeverDropped) {
  make();
  core_->upsertCampaign(capped("a", 100, rule(3, hours(24))), clock_.now());
  caps_.available = false;
  for (int i = 0; i < 20; ++i) core_->offer(raw(i, "a", "r" + std::to_string(i)), clock_.now());
  run(seconds(5));
  EXPECT_TRUE(sink_.submitted.empty());
  EXPECT_TRUE(ledger_.byId.empty());
  EXPECT_GT(statsOf("a").deferred, 0u);
  EXPECT_GT(core_->stats().cap_faults, 0u);
  EXPECT_LT(caps_.decides, 5000u / 5 / 10) << "asked again after a backoff, not every step";
  caps_.available = true;
  run(seconds(2));
  EXPECT_EQ(sink_.submitted.size(), 20u);
  EXPECT_EQ(ledger_.count(DeliveryStatus::kSent), 20u);
}

TEST_F(WorkerCapsTest, WhileTheStoreIsDownParkedMessagesStayParked) {
  WorkerOptions o;
  o.park_keep_for = seconds(1);  // keep 100 of a 100/s campaign in memory
  o.caps = &caps_;
  o.ledger_flush_interval = milliseconds(50);
  core_ = std::make_unique<WorkerCore>(o, ledger_, sink_, &parking_, clock_.now());
  core_->setWallClock(kNoon, clock_.now());
  core_->upsertCampaign(capped("a", 100, rule(3, hours(24))), clock_.now());
  caps_.available = false;
  for (int i = 0; i < 1000; ++i) core_->offer(raw(i, "a", "r" + std::to_string(i)), clock_.now());
  run(seconds(5));
  EXPECT_LE(statsOf("a").queued, 100u) << "claims stop while the unchecked queue is full";
  EXPECT_GE(parking_.size(), 900u);
  caps_.available = true;
  run(seconds(12));
  EXPECT_EQ(ledger_.count(DeliveryStatus::kSent), 1000u);
}

TEST_F(WorkerCapsTest, APermanentFailureGivesItsCountBack) {
  make();
  sink_.answer = [](const Message& m) {
    SendResult r;
    if (m.id == "m0") {
      r.outcome = SendOutcome::kPermanent;
      r.status = 400;
      r.reason = "HTTP 400";
    }
    return r;
  };
  core_->upsertCampaign(capped("a", 100, rule(1, hours(24))), clock_.now());
  core_->offer(raw(0, "a", "x"), clock_.now());
  run(seconds(1));
  EXPECT_EQ(ledger_.byId["m0"].status, DeliveryStatus::kFailed);
  ASSERT_EQ(caps_.released.size(), 1u);
  EXPECT_EQ(caps_.released[0], std::make_pair(std::string("x"), std::string("campaign:a")));
  core_->offer(raw(1, "a", "x"), clock_.now());
  run(seconds(1));
  EXPECT_EQ(ledger_.byId["m1"].status, DeliveryStatus::kSent) << "the failed one no longer counts";
}

// The campaign's caps change while a counted message is in the sink: its
// failure gives back the counts it took, under the scopes it took them in.
TEST_F(WorkerCapsTest, ACountTakenBeforeTheCapsChangedIsGivenBackUnderItsOwnScopes) {
  WorkerOptions o;
  o.class_caps = {{"bulk", rule(5, hours(24))}};
  make(o);
  sink_.answer = [](const Message&) {
    SendResult r;
    r.outcome = SendOutcome::kPermanent;
    r.status = 400;
    r.reason = "HTTP 400";
    return r;
  };
  sink_.instant = false;  // the answer comes when the test says
  core_->upsertCampaign(capped("a", 100, rule(5, hours(24))), clock_.now());
  core_->offer(raw(0, "a", "x"), clock_.now());
  for (int i = 0; i < 50 && sink_.submitted.empty(); ++i) {
    core_->step(clock_.now());
    clock_.advance(milliseconds(1));
  }
  ASSERT_EQ(sink_.submitted.size(), 1u);
  ASSERT_TRUE(caps_.released.empty());
  core_->upsertCampaign(capped("a", 100, std::nullopt), clock_.now());  // the operator drops the campaign's cap
  sink_.finishAll();
  run(seconds(1));
  EXPECT_EQ(ledger_.byId["m0"].status, DeliveryStatus::kFailed);
  std::vector<std::pair<std::string, std::string>> released = caps_.released;
  std::sort(released.begin(), released.end());
  EXPECT_EQ(released, (std::vector<std::pair<std::string, std::string>>{{"x", "campaign:a"}, {"x", "class:bulk"}}));
}

TEST_F(WorkerCapsTest, TwoCapsAreAskedInOneBatchAndTheOtherCountIsGivenBack) {
  WorkerOptions o;
  o.class_caps = {{"bulk", rule(1, hours(24))}};
  make(o);
  core_->upsertCampaign(capped("a", 100, rule(5, hours(24))), clock_.now());
  core_->upsertCampaign(capped("b", 100, rule(5, hours(24))), clock_.now());
  core_->offer(raw(0, "a", "x"), clock_.now());
  run(seconds(1));
  core_->offer(raw(1, "b", "x"), clock_.now());
  run(seconds(1));
  EXPECT_EQ(ledger_.byId["m0"].status, DeliveryStatus::kSent);
  EXPECT_EQ(ledger_.byId["m1"].status, DeliveryStatus::kSuppressed);
  EXPECT_THAT(ledger_.byId["m1"].reason, HasSubstr("frequency cap class:bulk 1/1d"));
  ASSERT_EQ(caps_.released.size(), 1u);
  EXPECT_EQ(caps_.released[0].second, "campaign:b") << "b's own count, taken in the same batch, is given back";
  EXPECT_EQ(statsOf("b").priority_class, "") << "as configured: none, so the default class (bulk), whose cap applied";
}

TEST_F(WorkerCapsTest, MessagesQueuedBeforeACapWasAddedAreAskedBeforeTheyGo) {
  make();
  CampaignInfo paused = capped("a", 100, std::nullopt);
  paused.state = CampaignState::kPaused;
  core_->upsertCampaign(paused, clock_.now());
  for (int i = 0; i < 3; ++i) core_->offer(raw(i, "a", "x"), clock_.now());
  run(seconds(1));
  core_->upsertCampaign(capped("a", 100, rule(1, hours(24))), clock_.now());  // active, with a cap
  run(seconds(1));
  EXPECT_EQ(sentTo("x"), 1u);
  EXPECT_EQ(ledger_.count(DeliveryStatus::kSuppressed), 2u);
}

TEST_F(WorkerCapsTest, AQueryTheStoreCannotTakeIsRejectedWithTheScope) {
  make();
  core_->upsertCampaign(capped("a", 100, rule(1, hours(24))), clock_.now());
  core_->offer(raw(0, "a", "bad}recipient"), clock_.now());  // '}' would break the key's hash tag
  run(seconds(1));
  EXPECT_EQ(ledger_.byId["m0"].status, DeliveryStatus::kRejected);
  EXPECT_THAT(ledger_.byId["m0"].reason, HasSubstr("frequency cap campaign:a"));
  EXPECT_TRUE(sink_.submitted.empty());
}

TEST_F(WorkerCapsTest, ARevokeLetsWaitingMessagesGoAndGivesTheirCountsBack) {
  make();
  sink_.refuse = [](const Message&) { return true; };  // checked and queued, never handed over
  core_->upsertCampaign(capped("a", 100, rule(1, hours(1)), CapPolicy::kDefer), clock_.now());
  core_->offer(raw(0, "a", "x"), clock_.now());
  core_->offer(raw(1, "a", "x"), clock_.now());  // deferred: waits in memory for the hour
  run(seconds(1));
  EXPECT_EQ(statsOf("a").deferred, 1u);
  EXPECT_GT(core_->stats().waiting, 0u);
  core_->revoke(TopicPartition{"t", 0});
  run(milliseconds(10));
  EXPECT_EQ(core_->stats().buffered_messages, 0u) << "the new owner reads them again";
  ASSERT_EQ(caps_.released.size(), 1u) << "m0's count: the new owner asks again";
  EXPECT_TRUE(ledger_.byId.empty());
}

TEST_F(WorkerCapsTest, AMessageWithoutARecipientOnACappedCampaignIsRejected) {
  make();
  core_->upsertCampaign(capped("a", 100, rule(1, hours(24))), clock_.now());
  core_->offer(raw(0, "a", ""), clock_.now());
  run(seconds(1));
  EXPECT_EQ(ledger_.byId["m0"].status, DeliveryStatus::kRejected);
  EXPECT_THAT(ledger_.byId["m0"].reason, HasSubstr("no recipient"));
}

// The target: at most 0.1 store round trips per message at 5,000
// messages/s with 5 ms steps.
TEST_F(WorkerCapsTest, OneBatchServesManyMessages) {
  make();
  core_->upsertCampaign(capped("a", 5000, rule(1000, hours(24)), CapPolicy::kSuppress, 50), clock_.now());
  for (int i = 0; i < 20'000; ++i) core_->offer(raw(i, "a", "r" + std::to_string(i % 500)), clock_.now());
  run(seconds(4));
  const auto sent = sink_.submitted.size();
  EXPECT_GE(sent, 19'000u);
  EXPECT_LE(static_cast<double>(core_->stats().cap_round_trips), 0.1 * static_cast<double>(sent));
  EXPECT_GE(caps_.queried, sent) << "every message sent was asked";
  EXPECT_LE(caps_.queried, sent + 300) << "asked once each, a little ahead of sending";
}

}  // namespace
}  // namespace pacer
