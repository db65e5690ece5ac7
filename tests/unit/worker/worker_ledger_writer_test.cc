// WorkerCore with a ledger writer (WorkerOptions::ledger_writer): ledger
// writes off the loop, one batch at a time, and nothing taken as written
// before the writer says it is durable: no offset finished, no receipt
// acknowledged. The writer is the test's (FakeLedgerWriter): batches wait
// until the test finishes them, as a thread's would.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pacer/worker.h"
#include "support/worker_fixture.h"

namespace pacer {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

using test_support::FakeLedger;
using test_support::FakeLedgerWriter;

CampaignInfo unlimited(std::string id) {
  CampaignInfo c;
  c.id = std::move(id);
  return c;
}

DeliveryReceipt receipt(std::string id, std::uint64_t ack) {
  DeliveryReceipt r;
  r.provider = "sms";
  r.provider_message_id = std::move(id);
  r.status = ReceiptStatus::kDelivered;
  r.ack = ack;
  return r;
}

std::vector<std::string> ids(int from, int to) {
  std::vector<std::string> out;
  for (int i = from; i < to; ++i) out.push_back("m" + std::to_string(i));
  return out;
}

// The fixture's ledger, whose receipts cannot be written while `receipts_down`.
class ReceiptsDownLedger final : public LedgerInterface {
 public:
  explicit ReceiptsDownLedger(FakeLedger& inner) : inner_(inner) {}
  std::size_t record(std::span<const DeliveryRecord> rows) override { return inner_.record(rows); }
  std::vector<std::int64_t> finishedOffsets(const std::string& t, std::int32_t p, std::int64_t f,
                                            std::int64_t to) override {
    return inner_.finishedOffsets(t, p, f, to);
  }
  void recordReceipts(std::span<const DeliveryReceipt> rs) override {
    if (receipts_down) throw LedgerUnavailableError("down");
    inner_.recordReceipts(rs);
  }
  bool receipts_down = false;

 private:
  FakeLedger& inner_;
};

class WorkerLedgerWriterTest : public test_support::WorkerCoreFixture {
 protected:
  // Campaign "a", unlimited; offers offsets [0, n).
  void start(int n, WorkerOptions o = {}) {
    o.ledger_flush_interval = milliseconds(50);
    o.ledger_retry_interval = milliseconds(500);
    o.ledger_writer = &writer_;
    makeCore(o);
    core_->upsertCampaign(unlimited("a"), clock_.now());
    offer(0, n);
  }
  void offer(int from, int to) {
    for (int i = from; i < to; ++i) core_->offer(rawMessage(i, "a"), clock_.now());
  }
  std::int64_t committed() const { return core_->committable(TopicPartition{"t", 0}).value_or(0); }
  std::size_t sent() const { return sink_.submitted.size(); }

  ReceiptsDownLedger store_{ledger_};
  FakeLedgerWriter writer_{store_};
};

TEST_F(WorkerLedgerWriterTest, OffsetsAreFinishedOnlyOnceTheWriterReportsTheirBatchDurable) {
  start(10);
  run(milliseconds(100));
  ASSERT_EQ(sent(), 10u);
  ASSERT_EQ(writer_.submits, 1);
  EXPECT_EQ(writer_.batches[0], ids(0, 10));
  run(seconds(1));  // however long the commit takes
  EXPECT_EQ(committed(), 0) << "nothing committed past a row whose batch is not reported durable";
  EXPECT_EQ(core_->stats().unrecorded, 10u);
  EXPECT_EQ(core_->stats().pending_rows, 10u);
  EXPECT_EQ(core_->stats().ledger_writes, 0u);
  EXPECT_FALSE(core_->idle());
  writer_.finish();
  run(milliseconds(5));
  EXPECT_EQ(committed(), 10);
  EXPECT_EQ(core_->stats().unrecorded, 0u);
  EXPECT_EQ(core_->stats().pending_rows, 0u);
  EXPECT_EQ(core_->stats().ledger_rows, 10u);
  EXPECT_EQ(core_->stats().ledger_writes, 1u);
  EXPECT_TRUE(core_->idle());
  EXPECT_EQ(ledger_.calls, 1) << "the core itself wrote nothing";
}

TEST_F(WorkerLedgerWriterTest, AReceiptIsAcknowledgedOnlyOnceItsBatchIsDurable) {
  start(0);
  sink_.receipts.push_back(receipt("smsc-1", 7));
  run(milliseconds(100));
  ASSERT_EQ(writer_.submits, 1);
  run(seconds(1));
  EXPECT_TRUE(sink_.recorded.empty()) << "the SMSC is not answered before the ledger holds the receipt";
  EXPECT_EQ(core_->stats().pending_receipts, 1u);
  writer_.finish();
  run(milliseconds(5));
  ASSERT_EQ(sink_.recorded.size(), 1u);
  EXPECT_EQ(sink_.recorded[0].ack, 7u);
  EXPECT_EQ(ledger_.receipts.size(), 1u);
  EXPECT_EQ(core_->stats().pending_receipts, 0u);
  EXPECT_EQ(core_->stats().receipts, 1u);
}

TEST_F(WorkerLedgerWriterTest, RowsMadeWhileABatchIsInFlightGoInTheNextBatch) {
  start(5);
  run(milliseconds(100));
  offer(5, 10);
  run(milliseconds(200));
  EXPECT_EQ(writer_.submits, 1) << "one batch in flight at a time";
  EXPECT_EQ(core_->stats().unrecorded, 10u);
  writer_.finish();
  run(milliseconds(5));
  EXPECT_EQ(committed(), 5);
  ASSERT_EQ(writer_.submits, 2) << "handed over as soon as the first is reported (older than the flush interval)";
  EXPECT_EQ(writer_.batches[1], ids(5, 10));
  writer_.finish();
  run(milliseconds(5));
  EXPECT_EQ(committed(), 10);
  EXPECT_EQ(ledger_.byId.size(), 10u);
}

TEST_F(WorkerLedgerWriterTest, AFailedBatchComesBackInFrontInOrderAndIsRetriedAfterTheRetryInterval) {
  start(5);
  ledger_.available = false;
  sink_.receipts.push_back(receipt("smsc-1", 1));
  run(milliseconds(100));
  ASSERT_EQ(writer_.submits, 1);
  offer(5, 10);
  sink_.receipts.push_back(receipt("smsc-2", 2));
  run(milliseconds(100));
  writer_.finish();  // fails
  run(milliseconds(400));
  EXPECT_EQ(writer_.submits, 1) << "not again before the retry interval";
  EXPECT_TRUE(core_->stats().store_failing);
  EXPECT_EQ(core_->stats().ledger_errors, 1u);
  EXPECT_EQ(core_->stats().unrecorded, 10u) << "nothing dropped";
  EXPECT_EQ(core_->stats().pending_receipts, 2u);
  EXPECT_EQ(committed(), 0);
  run(milliseconds(200));
  ASSERT_EQ(writer_.submits, 2);
  EXPECT_EQ(writer_.batches[1], ids(0, 10)) << "the failed rows first, then those made meanwhile";
  ledger_.available = true;
  writer_.finish();
  run(milliseconds(5));
  EXPECT_FALSE(core_->stats().store_failing);
  EXPECT_EQ(committed(), 10);
  EXPECT_EQ(ledger_.byId.size(), 10u);
  ASSERT_EQ(sink_.recorded.size(), 2u);
  EXPECT_EQ(sink_.recorded[0].ack, 1u);
  EXPECT_EQ(sink_.recorded[1].ack, 2u);
}

TEST_F(WorkerLedgerWriterTest, ABatchWhoseRowsAreDurableButNotItsReceiptsFinishesItsRowsOnly) {
  start(3);
  store_.receipts_down = true;
  sink_.receipts.push_back(receipt("smsc-1", 1));
  run(milliseconds(100));
  ASSERT_EQ(writer_.submits, 1);
  writer_.finish();
  run(milliseconds(5));
  EXPECT_EQ(committed(), 3) << "the rows are durable";
  EXPECT_EQ(core_->stats().ledger_rows, 3u);
  EXPECT_TRUE(sink_.recorded.empty());
  EXPECT_EQ(core_->stats().pending_receipts, 1u);
  store_.receipts_down = false;
  run(milliseconds(600));
  ASSERT_EQ(writer_.submits, 2);
  EXPECT_TRUE(writer_.batches[1].empty()) << "the receipt again, not the rows";
  writer_.finish();
  run(milliseconds(5));
  ASSERT_EQ(sink_.recorded.size(), 1u);
  EXPECT_EQ(core_->stats().ledger_rows, 3u);
  EXPECT_EQ(core_->stats().receipts, 1u);
}

TEST_F(WorkerLedgerWriterTest, TheUnrecordedBoundCountsTheBatchInFlight) {
  WorkerOptions o;
  o.max_unrecorded = 10;
  start(30, o);
  run(seconds(1));
  EXPECT_EQ(sent(), 10u) << "the 10 in the writer are not recorded yet";
  ASSERT_EQ(writer_.submits, 1);
  writer_.finish();
  run(milliseconds(5));
  EXPECT_EQ(sent(), 20u) << "room again once they are reported";
  run(seconds(1));
  EXPECT_EQ(sent(), 20u);
}

TEST_F(WorkerLedgerWriterTest, WhileABatchIsInFlightTheLoopLooksForItsReportSoonWithoutSpinning) {
  start(5);
  run(milliseconds(100));
  offer(5, 10);  // pending past its flush interval while the batch is in flight
  run(milliseconds(100));
  ASSERT_EQ(writer_.submits, 1);
  const MonoTime now = clock_.now();
  EXPECT_EQ(core_->nextWake(now, seconds(1)), now + milliseconds(2));
}

TEST_F(WorkerLedgerWriterTest, FlushHandsOverWhatIsPendingAndWaitsForTheReport) {
  start(5);
  run(milliseconds(100));
  ASSERT_EQ(writer_.submits, 1);
  offer(5, 10);
  run(milliseconds(10));
  EXPECT_TRUE(core_->flush(clock_.now()));
  ASSERT_EQ(writer_.submits, 2);
  EXPECT_EQ(writer_.batches[1], ids(5, 10));
  EXPECT_EQ(committed(), 10);
  EXPECT_EQ(core_->stats().unrecorded, 0u);
  EXPECT_TRUE(core_->flush(clock_.now())) << "nothing left";
  EXPECT_EQ(writer_.submits, 2);
}

TEST_F(WorkerLedgerWriterTest, FlushSaysSoWhenTheBatchFailedAndNothingIsLost) {
  start(10);
  run(milliseconds(10));
  ledger_.available = false;
  EXPECT_FALSE(core_->flush(clock_.now()));
  EXPECT_EQ(committed(), 0);
  EXPECT_EQ(core_->stats().unrecorded, 10u);
  ledger_.available = true;
  EXPECT_TRUE(core_->flush(clock_.now())) << "an explicit flush does not wait out the retry interval";
  EXPECT_EQ(committed(), 10);
}

TEST_F(WorkerLedgerWriterTest, FlushSaysSoWhenTheBatchIsStillBeingWritten) {
  start(10);
  run(milliseconds(100));
  writer_.stalled = true;
  EXPECT_FALSE(core_->flush(clock_.now()));
  EXPECT_EQ(committed(), 0) << "a revoke commits nothing past the batch in the writer";
  EXPECT_EQ(writer_.submits, 1) << "not handed over twice";
  writer_.stalled = false;
  EXPECT_TRUE(core_->flush(clock_.now()));
  EXPECT_EQ(committed(), 10);
  EXPECT_EQ(ledger_.byId.size(), 10u);
}

// The stop: after drain(), step() still hands batches over and takes the
// reports, so `unrecorded` falls to 0 as the shutdown loop waits for.
TEST_F(WorkerLedgerWriterTest, AfterDrainStepsStillWriteThroughTheWriter) {
  start(10);
  run(milliseconds(10));
  core_->drain();
  run(milliseconds(100));
  ASSERT_EQ(writer_.submits, 1);
  EXPECT_EQ(core_->stats().unrecorded, 10u);
  writer_.finish();
  run(milliseconds(5));
  EXPECT_EQ(core_->stats().unrecorded, 0u);
  EXPECT_EQ(committed(), 10);
}

}  // namespace
}  // namespace pacer
