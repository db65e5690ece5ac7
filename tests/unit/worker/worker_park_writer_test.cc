// WorkerCore with a park writer (WorkerOptions::park_writer): parking I/O off
// the loop, the offsets of parked messages committed only once the writer
// says they are durable. The writer is the test's (FakeParkWriter): batches
// wait until the test finishes them, as a thread's would.
#include <gtest/gtest.h>

#include <algorithm>

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

// A batch of the campaign's own in the writer does not hold its claims back:
// what a claim returns is older than anything in the batch.
TEST_F(WorkerParkWriterTest, ABatchInTheWriterDoesNotHoldTheCampaignsClaimsBack) {
  start(500);
  run(milliseconds(100));
  writer_.finish();
  run(milliseconds(100));
  for (int i = 500; i < 520; ++i) core_->offer(raw(i, "a"), clock_.now());
  run(milliseconds(100));
  ASSERT_EQ(writer_.pending(), 1u) << "the new messages park behind the parked ones";
  const std::size_t before = sent();
  run(seconds(3));
  EXPECT_GE(sent() - before, 25u) << "10/s from parking while the batch waits";
  EXPECT_EQ(writer_.pending(), 1u);
  EXPECT_EQ(committed(), 500);
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

}  // namespace
}  // namespace pacer
