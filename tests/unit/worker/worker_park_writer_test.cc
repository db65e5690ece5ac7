// WorkerCore with a park writer (WorkerOptions::park_writer): parking I/O off
// the loop, the offsets of parked messages committed only once the writer
// says they are durable. The writer is the test's (FakeParkWriter): batches
// wait until the test finishes them, as a thread's would.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "pacer/worker.h"
#include "support/worker_fixture.h"

namespace pacer {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

using test_support::FakeParkWriter;

RawMessage raw(std::int64_t offset, std::string campaign, std::int32_t partition = 0) {
  RawMessage r;
  r.position = Position{"t", partition, offset};
  r.key = std::move(campaign);
  r.headers.emplace_back("message-id", "m" + std::to_string(partition) + "-" + std::to_string(offset));
  r.value = "p";
  return r;
}

CampaignInfo campaign(std::string id, double rate, double burst = 1) {
  CampaignInfo c;
  c.id = std::move(id);
  c.limit = RateLimit{rate, burst};
  return c;
}

class WorkerParkWriterTest : public test_support::WorkerCoreFixture {
 protected:
  // Campaign "a" at 10/s keeps 10 in memory (park_keep_for 1 s); offers 0..n-1.
  void start(int n, WorkerOptions o = {}) {
    o.park_min_keep = 10;
    o.park_keep_for = seconds(1);
    o.ledger_flush_interval = milliseconds(50);
    o.park_writer = &writer_;
    makeCore(o, true);
    core_->upsertCampaign(campaign("a", 10), clock_.now());
    for (int i = 0; i < n; ++i) core_->offer(raw(i, "a"), clock_.now());
  }
  std::int64_t committed() const { return core_->committable(TopicPartition{"t", 0}).value_or(0); }
  std::size_t sent() const { return sink_.submitted.size(); }
  std::size_t sentOf(const std::string& c) const {
    return static_cast<std::size_t>(
        std::count_if(sink_.submitted.begin(), sink_.submitted.end(), [&](const Message& m) { return m.campaign == c; }));
  }

  FakeParkWriter writer_{parking_};
};

TEST_F(WorkerParkWriterTest, ParkedOffsetsAreCommittedOnlyOnceTheWriterSaysTheyAreDurable) {
  start(500);
  run(seconds(2));  // the 10 kept are sent; the other 490 wait in the writer
  EXPECT_EQ(writer_.submits, 1);
  EXPECT_EQ(writer_.pending(), 1u);
  EXPECT_EQ(parking_.size(), 0u);
  EXPECT_EQ(sent(), 10u);
  EXPECT_EQ(committed(), 10) << "nothing committed past a message whose parked row is not durable";
  EXPECT_EQ(core_->stats().buffered_messages, 490u) << "a batch in the writer counts against the memory bound";
  EXPECT_FALSE(core_->idle());
  writer_.finish();
  run(milliseconds(5));
  EXPECT_EQ(core_->stats().parked, 490u);
  EXPECT_EQ(committed(), 500);
}

TEST_F(WorkerParkWriterTest, ParkedMessagesComeBackInOrderThroughTheWriter) {
  start(100);
  run(milliseconds(100));
  writer_.finish();
  run(seconds(12));
  EXPECT_EQ(ledger_.count(DeliveryStatus::kSent), 100u);
  EXPECT_EQ(parking_.size(), 0u);
  for (std::size_t i = 0; i < sink_.submitted.size(); ++i)
    EXPECT_EQ(sink_.submitted[i].position.offset, static_cast<std::int64_t>(i)) << "FIFO through parking";
  EXPECT_EQ(ledger_.unparked.size(), 90u);
  EXPECT_TRUE(core_->idle());
}

TEST_F(WorkerParkWriterTest, AFailedBatchIsHandedOverAgainAfterTheRetryIntervalAndNothingIsLost) {
  WorkerOptions o;
  o.ledger_retry_interval = milliseconds(500);
  start(200, o);
  parking_.available = false;
  run(milliseconds(1100));  // the 10 kept are sent meanwhile
  ASSERT_EQ(writer_.submits, 1);
  ASSERT_EQ(sent(), 10u);
  writer_.finish();  // fails
  run(milliseconds(400));
  EXPECT_EQ(writer_.submits, 1) << "not again before the retry interval";
  EXPECT_TRUE(core_->stats().store_failing);
  EXPECT_GE(core_->stats().ledger_errors, 1u);
  EXPECT_EQ(committed(), static_cast<std::int64_t>(sent()));
  EXPECT_EQ(core_->stats().buffered_messages, 200u - sent()) << "nothing dropped";
  run(milliseconds(200));
  EXPECT_EQ(writer_.submits, 2);
  parking_.available = true;
  writer_.finish();
  run(milliseconds(5));
  EXPECT_FALSE(core_->stats().store_failing);
  EXPECT_EQ(committed(), 200);
  EXPECT_EQ(core_->stats().parked, 190u);
}

// A batch of the campaign's own in the writer holds its claims back until it
// is reported: were its commit in doubt, it would be written again, and that
// would hand back a row claimed meanwhile.
TEST_F(WorkerParkWriterTest, ABatchInTheWriterHoldsItsOwnCampaignsClaimsUntilItIsReported) {
  start(500);
  run(milliseconds(100));
  writer_.finish();
  run(milliseconds(100));
  for (int i = 500; i < 520; ++i) core_->offer(raw(i, "a"), clock_.now());
  run(milliseconds(100));
  ASSERT_EQ(writer_.pending(), 1u) << "the new messages park behind the parked ones";
  const std::size_t before = sent();
  run(seconds(3));
  EXPECT_LE(sent() - before, 10u) << "only what it kept in memory; no claim while its batch is in the writer";
  writer_.finish();
  const std::size_t reported = sent();
  run(seconds(3));
  EXPECT_GE(sent() - reported, 25u) << "10/s from parking once the batch is reported";
  EXPECT_EQ(committed(), 520);
}

TEST_F(WorkerParkWriterTest, AnotherCampaignsBatchInTheWriterDoesNotHoldAClaim) {
  start(500);
  run(milliseconds(100));
  writer_.finish();
  run(milliseconds(100));
  core_->upsertCampaign(campaign("b", 10), clock_.now());
  for (int i = 0; i < 500; ++i) core_->offer(raw(i, "b", 1), clock_.now());
  run(milliseconds(100));
  ASSERT_EQ(writer_.pending(), 1u) << "b's excess in the writer";
  const std::size_t before = sentOf("a");
  run(seconds(3));
  EXPECT_GE(sentOf("a") - before, 25u) << "a claims at 10/s while b's batch waits";
  EXPECT_EQ(writer_.pending(), 1u);
}

// A campaign whose new messages park without pause (a batch of its own is
// always in the writer) still claims: while its claim waits for its batch,
// new batches leave its messages out.
TEST_F(WorkerParkWriterTest, ACampaignThatParksWithoutPauseStillClaimsBack) {
  start(100);  // keeps 10, parks 90
  for (int tick = 0; tick < 40; ++tick) {  // 8 s: 10/s more, the writer reporting one batch every 200 ms
    for (int i = 0; i < 2; ++i) core_->offer(raw(100 + 2 * tick + i, "a"), clock_.now());
    run(milliseconds(200));
    writer_.finish(1);
  }
  EXPECT_GE(sent(), 65u) << "about 10/s for 8 s";
}

// The commit in doubt: a batch whose commit succeeded but whose answer was
// lost is handed over again. Were its rows claimed in between, the second
// write would hand them back unowned and they would be claimed, and sent, twice.
TEST_F(WorkerParkWriterTest, ABatchWhoseAnswerWasLostSendsNothingTwice) {
  WorkerOptions o;
  o.ledger_retry_interval = milliseconds(500);
  start(20, o);  // keeps 10, parks 10: the campaign has rows to claim
  run(milliseconds(100));
  writer_.finish();
  run(milliseconds(100));
  for (int i = 20; i < 200; ++i) core_->offer(raw(i, "a"), clock_.now());
  run(milliseconds(100));
  ASSERT_EQ(writer_.pending(), 1u);
  writer_.lose_answers = 1;
  writer_.finish();  // the 180 are in parking, the core is told they are not
  run(milliseconds(1000));
  ASSERT_EQ(writer_.submits, 3) << "handed over again after the retry interval";
  run(seconds(3));   // the second write waits in the writer
  writer_.finish();  // and hands back what was claimed meanwhile
  run(seconds(30));
  std::map<std::string, int> times;
  for (const Message& m : sink_.submitted) ++times[m.id];
  for (const auto& [id, n] : times) EXPECT_EQ(n, 1) << id << " sent " << n << " times";
  EXPECT_EQ(times.size(), 200u);
  EXPECT_EQ(parking_.size(), 0u);
}

// The slow-neighbour case: a campaign that keeps up parks only its own small
// excess, and keeps its rate while another campaign's backlog of 40,000 parks
// at the writer's pace (a batch of 1,000 every 250 ms: 10 s). Its excess goes
// in the next batch, not behind that backlog.
TEST_F(WorkerParkWriterTest, ACampaignOnTimeKeepsItsRateWhileAnothersBacklogParks) {
  WorkerOptions o;
  o.park_min_keep = 10;
  o.park_keep_for = seconds(5);
  o.ledger_flush_interval = milliseconds(50);
  o.ledger_batch = 1000;
  o.park_writer = &writer_;
  makeCore(o, true);
  core_->upsertCampaign(campaign("slow", 1), clock_.now());
  core_->upsertCampaign(campaign("fast", 100, 10), clock_.now());
  for (int i = 0; i < 40'000; ++i) core_->offer(raw(i, "slow", 1), clock_.now());
  int next = 0;
  for (; next < 1000; ++next) core_->offer(raw(next, "fast"), clock_.now());  // 500 kept (5 s), 500 parked
  for (int tick = 0; tick < 60; ++tick) {  // 15 s, 100/s more
    for (int i = 0; i < 25; ++i, ++next) core_->offer(raw(next, "fast"), clock_.now());
    run(milliseconds(250));
    writer_.finish(1);
  }
  EXPECT_GE(sentOf("fast"), 1425u) << "at least 95% of 100/s for 15 s";
  EXPECT_GE(parking_.size(), 39'000u) << "the backlog parked meanwhile";
}

TEST_F(WorkerParkWriterTest, TheUnclaimedScanGoesThroughTheWriterAndItsAnswerBringsClaims) {
  start(0);
  parking_.report_unclaimed = true;
  // Parked by a worker that died: this one learns of them only from the scan.
  std::vector<Message> orphans(30);
  for (int i = 0; i < 30; ++i) {
    orphans[i].id = "o" + std::to_string(i);
    orphans[i].campaign = "a";
    orphans[i].position = Position{"t", 7, i};
  }
  parking_.park(orphans, {});
  run(seconds(6));
  EXPECT_EQ(writer_.scans_asked, 1) << "one scan at a time: the next waits for the answer";
  EXPECT_EQ(sent(), 0u) << "the answer has not come";
  writer_.answerScan();
  run(seconds(4));
  EXPECT_EQ(sent(), 30u);
  EXPECT_EQ(parking_.size(), 0u);
}

TEST_F(WorkerParkWriterTest, FlushWaitsForTheWriter) {
  start(300);
  run(milliseconds(1100));  // the 10 kept are sent
  ASSERT_EQ(writer_.pending(), 1u);
  EXPECT_TRUE(core_->flush(clock_.now()));
  EXPECT_EQ(writer_.waits, 1);
  EXPECT_EQ(committed(), 300);
  EXPECT_EQ(parking_.size(), 290u);
}

TEST_F(WorkerParkWriterTest, FlushSaysSoWhenTheWriterFailed) {
  start(300);
  run(milliseconds(100));
  parking_.available = false;
  EXPECT_FALSE(core_->flush(clock_.now()));
  EXPECT_EQ(committed(), static_cast<std::int64_t>(sent()));
  EXPECT_EQ(core_->stats().buffered_messages, 300u - sent());
}

TEST_F(WorkerParkWriterTest, AtMostTheConfiguredBatchesAreInTheWriter) {
  WorkerOptions o;
  o.park_batches_in_flight = 2;
  start(100, o);
  for (int round = 1; round <= 4; ++round) {
    for (int i = 0; i < 50; ++i) core_->offer(raw(100 * round + i, "a"), clock_.now());
    run(milliseconds(100));
  }
  EXPECT_EQ(writer_.pending(), 2u);
  EXPECT_EQ(writer_.submits, 2);
  writer_.finish();
  run(milliseconds(5));
  EXPECT_EQ(writer_.submits, 3) << "the rest in one batch as soon as there is room";
  writer_.finish();
  run(milliseconds(5));
  EXPECT_EQ(writer_.pending(), 0u);
  EXPECT_EQ(core_->stats().parked, 290u) << "all but the 10 kept";
}

// A backlog at the memory bound goes over in batches of at most ledger_batch
// (the writer holds a copy of each message until it is durable), as many as
// the writer may hold at once; flush() hands over and waits for the rest.
TEST_F(WorkerParkWriterTest, ABacklogGoesOverInBatchesOfAtMostTheLedgerBatch) {
  WorkerOptions o;
  o.ledger_batch = 1000;
  start(3510, o);
  run(milliseconds(100));
  EXPECT_EQ(writer_.sizes, (std::vector<std::size_t>{1000, 1000}));
  writer_.finish(1);
  run(milliseconds(5));
  EXPECT_EQ(writer_.sizes, (std::vector<std::size_t>{1000, 1000, 1000}));
  EXPECT_TRUE(core_->flush(clock_.now()));
  EXPECT_EQ(writer_.sizes, (std::vector<std::size_t>{1000, 1000, 1000, 500}));
  EXPECT_EQ(parking_.size(), 3500u);
  EXPECT_EQ(core_->stats().parked, 3500u);
}

// Claims go through the writer too (a claim of a thousand rows takes 100-250
// ms of PostgreSQL that the loop would not spend sending): while one is with
// it, the loop goes on and asks no second claim for the campaign; the answer
// is sent when it comes.
TEST_F(WorkerParkWriterTest, AClaimWithTheWriterLeavesTheLoopSendingAndIsAskedOnce) {
  start(200);
  run(milliseconds(100));
  writer_.finish();  // 190 parked
  writer_.hold_claims = true;
  core_->upsertCampaign(campaign("b", 10), clock_.now());
  run(seconds(1));
  const int asked = writer_.claims_asked;
  ASSERT_GE(asked, 1);
  for (int i = 0; i < 10; ++i) core_->offer(raw(i, "b", 1), clock_.now());  // all kept in memory
  run(seconds(2));
  EXPECT_EQ(writer_.claims_asked, asked) << "no second claim while the first is with the writer";
  EXPECT_EQ(sentOf("b"), 10u) << "the loop sends another campaign meanwhile";
  const std::size_t a_before = sentOf("a");
  EXPECT_LE(a_before, 11u) << "a's parked messages wait for the claim's answer";
  writer_.finish();
  writer_.hold_claims = false;
  run(seconds(3));
  EXPECT_GE(sentOf("a") - a_before, 25u) << "the answer is sent at a's rate";
  run(seconds(20));
  EXPECT_EQ(ledger_.count(DeliveryStatus::kSent), 210u);
  EXPECT_EQ(parking_.size(), 0u);
}

// A campaign cancelled while its claim is with the writer: what the claim
// brings back gets failed rows with the reason; nothing is sent, nothing lost.
TEST_F(WorkerParkWriterTest, ACampaignCancelledWhileItsClaimIsWithTheWriterGetsItsRows) {
  start(200);
  run(milliseconds(100));
  writer_.finish();
  run(seconds(1));  // the 10 kept are sent; a claim asked when the queue is low
  writer_.hold_claims = true;
  run(seconds(1));
  ASSERT_GE(writer_.claimsHeld(), 1u);
  const std::size_t sent_before = sent();
  CampaignInfo c = campaign("a", 10);
  c.state = CampaignState::kCancelled;
  core_->upsertCampaign(c, clock_.now());
  writer_.hold_claims = false;
  writer_.finish();
  run(seconds(2));
  EXPECT_LE(sent(), sent_before + 1) << "nothing claimed after the cancel is sent";
  EXPECT_EQ(parking_.size(), 0u) << "the rest claimed as well, to be given their rows";
  EXPECT_EQ(ledger_.count(DeliveryStatus::kSent) + ledger_.count(DeliveryStatus::kFailed), 200u);
  EXPECT_GE(ledger_.count(DeliveryStatus::kFailed), 150u);
}

// A claim that fails is asked again after the retry interval, and counted.
TEST_F(WorkerParkWriterTest, AFailedClaimIsAskedAgainAfterTheRetryInterval) {
  WorkerOptions o;
  o.ledger_retry_interval = milliseconds(500);
  start(100, o);
  run(milliseconds(100));
  writer_.finish();
  run(milliseconds(900));  // the 10 kept are sent
  parking_.available = false;
  const int asked = writer_.claims_asked;
  run(milliseconds(300));
  ASSERT_GT(writer_.claims_asked, asked);
  EXPECT_GE(core_->stats().ledger_errors, 1u);
  const int failed_at = writer_.claims_asked;
  run(milliseconds(300));
  EXPECT_EQ(writer_.claims_asked, failed_at) << "not again before the retry interval";
  parking_.available = true;
  run(seconds(12));
  EXPECT_EQ(ledger_.count(DeliveryStatus::kSent), 100u);
  EXPECT_EQ(parking_.size(), 0u);
}

// Renewals of the claims' leases go through the writer; one that fails is counted.
TEST_F(WorkerParkWriterTest, RenewalsGoThroughTheWriterAndAFailureIsCounted) {
  WorkerOptions o;
  o.renew_interval = seconds(1);
  start(20, o);
  run(milliseconds(2500));
  EXPECT_EQ(writer_.renewals_asked, 2);
  EXPECT_EQ(parking_.renewals, 2) << "run by the writer";
  const std::uint64_t errors = core_->stats().ledger_errors;
  parking_.available = false;
  run(seconds(1));
  EXPECT_EQ(core_->stats().ledger_errors, errors + 1);
}

// A clean stop gives the claims back only once the writer has answered the one it has: a claim
// answered after the release would hold rows that no worker sends until the lease runs out.
TEST_F(WorkerParkWriterTest, ReleaseWaitsForAClaimWithTheWriter) {
  start(200);
  run(milliseconds(100));
  writer_.finish();
  writer_.hold_claims = true;
  run(seconds(2));
  ASSERT_GE(writer_.claimsHeld(), 1u);
  const int waits = writer_.waits;
  core_->drain();
  core_->releaseParked();
  EXPECT_EQ(writer_.waits, waits + 1);
  EXPECT_EQ(writer_.claimsHeld(), 0u);
  EXPECT_EQ(parking_.releases, 1);
}

}  // namespace
}  // namespace pacer
