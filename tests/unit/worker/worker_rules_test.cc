// WorkerCore's recipient rules (quiet hours, frequency caps) on a simulated
// clock, with the system's tz database and an in-memory cap store.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "pacer/worker.h"
#include "support/worker_fixture.h"
#include "support/wall_time.h"

namespace pacer {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;
using ::testing::HasSubstr;

using test::utc;

RawMessage raw(std::int64_t offset, std::string campaign, std::string recipient = "", std::string tz = "") {
  RawMessage r;
  r.position = Position{"t", 0, offset};
  r.key = std::move(campaign);
  r.headers.emplace_back("message-id", "m" + std::to_string(offset));
  if (!recipient.empty()) r.headers.emplace_back("recipient", recipient);
  if (!tz.empty()) r.headers.emplace_back("tz", tz);
  r.value = "p";
  return r;
}

CampaignInfo campaign(std::string id, double rate, double burst, std::string quiet = "", std::string zone = "") {
  CampaignInfo c;
  c.id = std::move(id);
  c.limit = RateLimit{rate, burst};
  c.quiet_hours = std::move(quiet);
  c.time_zone = std::move(zone);
  return c;
}

class WorkerRulesTest : public test_support::WorkerCoreFixture {
 protected:
  static TimeZoneTablePtr zones() {
    static const TimeZoneTablePtr table = TimeZoneTable::loadSystem();
    return table;
  }
  // The core's wall clock starts at `wall` and moves with the simulated one.
  void make(WallTime wall, WorkerOptions o = {}, bool with_parking = false) {
    o.zones = zones();
    o.caps = &caps_;
    o.ledger_flush_interval = milliseconds(50);
    makeCore(o, with_parking, wall, Wall::kFollow);
  }
  void runUntil(WallTime w, Nanos tick) { run(std::chrono::duration_cast<Nanos>(w - wall()), tick); }
  std::size_t sentBy(WallTime w) const {
    return static_cast<std::size_t>(std::count_if(sent_at_.begin(), sent_at_.end(), [&](WallTime t) { return t < w; }));
  }
  std::optional<std::int64_t> committed() const { return core_->committable(TopicPartition{"t", 0}); }
};

// 22:00 EST on 9 March 2024; the clocks spring forward that night, so 08:00
// EDT is 12:00 UTC (nine hours later, not ten).
TEST_F(WorkerRulesTest, QuietHoursParkAcrossTheDstChangeAndReleaseAtTheCampaignRate) {
  make(utc(2024, 3, 10, 3), {}, true);
  core_->upsertCampaign(campaign("q", 10, 1, "21:00-08:00", "America/New_York"), clock_.now());
  for (int i = 0; i < 200; ++i) core_->offer(raw(i, "q", "+1555" + std::to_string(i)), clock_.now());
  run(seconds(1));
  EXPECT_EQ(parking_.size(), 200u) << "a wait of hours is parked";
  EXPECT_EQ(committed(), 200) << "so the offsets advance";
  EXPECT_EQ(parking_.not_before["m0"], utc(2024, 3, 10, 12)) << "08:00 EDT";
  runUntil(utc(2024, 3, 10, 11, 59, 59), seconds(1));
  EXPECT_TRUE(sink_.submitted.empty()) << "nothing inside the window";
  run(seconds(21));
  ASSERT_FALSE(sent_at_.empty());
  EXPECT_GE(sent_at_.front(), utc(2024, 3, 10, 12));
  EXPECT_LT(sent_at_.front(), utc(2024, 3, 10, 12, 0, 1)) << "released when the window ends";
  // Released through the campaign's limiter: r*t + b at most, r*(t-1) at least.
  for (int s = 1; s <= 20; ++s) {
    const std::size_t n = sentBy(utc(2024, 3, 10, 12, 0, s));
    EXPECT_LE(n, static_cast<std::size_t>(10 * s + 1)) << s << " s after the window";
    EXPECT_GE(n, static_cast<std::size_t>(10 * (s - 1))) << s << " s after the window";
  }
  EXPECT_EQ(ledger_.count(DeliveryStatus::kSent), sink_.submitted.size());
}

// 23:00 GMT on 30 March 2024 in London; 08:00 BST the next morning is 07:00
// UTC. Without parking the messages wait in memory, and their offsets wait.
TEST_F(WorkerRulesTest, WaitingInMemoryHoldsTheOffsetAndReleasesPacedWithABurstAtMost) {
  make(utc(2024, 3, 30, 23));
  core_->upsertCampaign(campaign("q", 50, 5, "21:00-08:00", "Europe/London"), clock_.now());
  core_->upsertCampaign(campaign("n", 50, 5), clock_.now());
  for (int i = 0; i < 1000; ++i) core_->offer(raw(i, "q", "r" + std::to_string(i)), clock_.now());
  for (int i = 1000; i < 1005; ++i) core_->offer(raw(i, "n"), clock_.now());
  run(seconds(2));
  EXPECT_EQ(sink_.submitted.size(), 5u) << "the campaign without quiet hours goes";
  EXPECT_EQ(committed(), 0) << "never past a message waiting only in memory";
  EXPECT_EQ(statsOf("q").quiet_waiting, 1000u);
  EXPECT_EQ(statsOf("q").cap_waiting, 0u) << "waiting for quiet hours is not waiting for a cap";
  runUntil(utc(2024, 3, 31, 6, 59, 59), seconds(1));
  EXPECT_EQ(sink_.submitted.size(), 5u);
  EXPECT_EQ(committed(), 0);
  run(seconds(11));
  for (int s = 1; s <= 10; ++s) {
    const std::size_t n = sentBy(utc(2024, 3, 31, 7, 0, s)) - 5;
    EXPECT_LE(n, static_cast<std::size_t>(50 * s + 5)) << s << " s after 08:00 BST";
    EXPECT_GE(n, static_cast<std::size_t>(50 * s - 5)) << s << " s after 08:00 BST";
  }
  EXPECT_EQ(sentBy(utc(2024, 3, 31, 7)), 5u) << "nothing before 08:00 BST";
  run(seconds(20));
  EXPECT_EQ(committed(), 1005);
}

TEST_F(WorkerRulesTest, CancellingACampaignGivesItsWaitingMessagesTheirRowsAtOnce) {
  make(utc(2024, 6, 1, 22), {}, true);
  core_->upsertCampaign(campaign("q", 10, 1, "21:00-08:00", "Etc/UTC"), clock_.now());
  for (int i = 0; i < 30; ++i) core_->offer(raw(i, "q", "r" + std::to_string(i)), clock_.now());
  run(seconds(1));
  ASSERT_EQ(parking_.size(), 30u);
  CampaignInfo cancelled = campaign("q", 10, 1, "21:00-08:00", "Etc/UTC");
  cancelled.state = CampaignState::kCancelled;
  core_->upsertCampaign(cancelled, clock_.now());
  run(seconds(1));
  EXPECT_EQ(ledger_.count(DeliveryStatus::kFailed), 30u) << "not ten hours later, when they would have been due";
  EXPECT_EQ(ledger_.byId["m0"].reason, "cancelled");
  EXPECT_TRUE(sink_.submitted.empty());
}

TEST_F(WorkerRulesTest, UnknownOrMissingZonesAreRejectedNeverGuessed) {
  make(utc(2024, 6, 1, 12));
  core_->upsertCampaign(campaign("q", 100, 10, "21:00-08:00", "Europe/Paris"), clock_.now());
  core_->upsertCampaign(campaign("nozone", 100, 10, "21:00-08:00"), clock_.now());
  core_->offer(raw(0, "q", "a", "Mars/Olympus"), clock_.now());
  core_->offer(raw(1, "nozone", "b"), clock_.now());
  core_->offer(raw(2, "q", "c", "Asia/Tokyo"), clock_.now());  // 21:00 in Tokyo: quiet, though Paris is not
  core_->offer(raw(3, "q", "d"), clock_.now());                // the default, 14:00 in Paris: goes
  run(seconds(1));
  ASSERT_EQ(ledger_.byId.count("m0"), 1u);
  EXPECT_EQ(ledger_.byId["m0"].status, DeliveryStatus::kRejected);
  EXPECT_EQ(ledger_.byId["m0"].reason, "unknown time zone 'Mars/Olympus'");
  EXPECT_THAT(ledger_.byId["m1"].reason, HasSubstr("no time zone"));
  EXPECT_EQ(ledger_.byId.count("m2"), 0u) << "waits for Tokyo's morning";
  EXPECT_EQ(ledger_.byId["m3"].status, DeliveryStatus::kSent);
}

TEST_F(WorkerRulesTest, AQueuedMessageThatBecameQuietWaitsAgain) {
  make(utc(2024, 6, 1, 20, 59, 55));
  core_->upsertCampaign(campaign("q", 1, 1, "21:00-08:00", "Etc/UTC"), clock_.now());
  for (int i = 0; i < 20; ++i) core_->offer(raw(i, "q", "r" + std::to_string(i)), clock_.now());
  run(seconds(10));
  EXPECT_GE(sink_.submitted.size(), 4u);
  EXPECT_EQ(sentBy(utc(2024, 6, 1, 21)), sink_.submitted.size()) << "nothing at or after 21:00";
  EXPECT_EQ(statsOf("q").quiet_waiting + statsOf("q").queued, 20u - sink_.submitted.size());
}

TEST_F(WorkerRulesTest, MemoryIsBoundedWhileMessagesWait) {
  WorkerOptions o;
  o.max_waiting = 10;
  o.park_wait_after = hours(1);
  make(utc(2024, 6, 1, 7, 30), o, true);  // a short wait: 30 minutes
  core_->upsertCampaign(campaign("q", 100, 1, "21:00-08:00", "Etc/UTC"), clock_.now());
  for (int i = 0; i < 100; ++i) core_->offer(raw(i, "q", "r" + std::to_string(i)), clock_.now());
  run(seconds(1));
  EXPECT_EQ(core_->stats().waiting, 10u) << "at most max_waiting in memory";
  EXPECT_EQ(parking_.size(), 90u) << "the rest parked with their time";
  EXPECT_EQ(committed(), 0) << "the ten in memory hold the offset";
}

TEST_F(WorkerRulesTest, WithoutParkingWaitingMessagesCountAgainstTheMemoryBound) {
  WorkerOptions o;
  o.max_buffered_messages = 50;
  make(utc(2024, 6, 1, 22), o);
  core_->upsertCampaign(campaign("q", 100, 1, "21:00-08:00", "Etc/UTC"), clock_.now());
  for (int i = 0; i < 49; ++i) core_->offer(raw(i, "q", "r" + std::to_string(i)), clock_.now());
  EXPECT_TRUE(core_->wantsMore());
  core_->offer(raw(49, "q", "r49"), clock_.now());
  EXPECT_FALSE(core_->wantsMore()) << "the consumer pauses";
}

}  // namespace
}  // namespace pacer
