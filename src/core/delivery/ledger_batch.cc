// A WorkerCore's pending ledger rows and receipts (ledger_batch.h).
#include "ledger_batch.h"

#include <algorithm>
#include <iterator>
#include <utility>

namespace pacer::delivery_detail {

DeliveryRecord& LedgerBatch::push(DeliveryRecord r, bool tracked) {
  rows_.push_back(std::move(r));
  tracked_.push_back(tracked ? 1 : 0);
  return rows_.back();
}

bool LedgerBatch::due(MonoTime now, bool blocked, std::size_t batch, Nanos flush_interval) const noexcept {
  if ((rows_.empty() && receipts_.empty()) || in_flight_ || now < retry_at_) return false;
  return rows_.size() + receipts_.size() >= batch || blocked || now - since_.value_or(now) >= flush_interval;
}

std::optional<MonoTime> LedgerBatch::wake(MonoTime now, Nanos flush_interval) const noexcept {
  if ((rows_.empty() && receipts_.empty()) || in_flight_) return std::nullopt;
  return std::max(retry_at_, since_.value_or(now) + flush_interval);
}

bool LedgerBatch::failed(WorkerStats& totals, MonoTime now, Nanos retry_interval) noexcept {
  ++totals.ledger_errors;
  failing_ = true;
  retry_at_ = now + retry_interval;
  return false;
}

namespace {

// Rows the ledger now holds, written on the loop or by a writer: their
// offsets are finished and they are counted.
void rowsDurable(std::vector<DeliveryRecord>& rows, std::vector<char>& tracked, std::size_t new_rows,
                 OffsetTracker& tracker, WorkerStats& totals) {
  totals.ledger_rows += new_rows;
  ++totals.ledger_writes;
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (tracked[i]) tracker.finish(rows[i].topic, rows[i].partition, rows[i].offset);
  rows.clear();
  tracked.clear();
}

// Receipts the ledger now holds: only now may the provider stop sending them
// again (SMPP deliver_sm_resp), so the sink acknowledges them here.
void receiptsDurable(std::vector<DeliveryReceipt>& receipts, SinkInterface& sink, WorkerStats& totals) {
  if (!receipts.empty()) sink.receiptsRecorded(receipts);
  totals.receipts += receipts.size();
  receipts.clear();
}

}  // namespace

bool LedgerBatch::write(LedgerInterface& ledger, SinkInterface& sink, OffsetTracker& tracker, WorkerStats& totals,
                        MonoTime now, Nanos retry_interval) {
  if (rows_.empty()) return writeReceipts(ledger, sink, totals, now, retry_interval);
  std::size_t new_rows = 0;
  try {
    new_rows = ledger.record(rows_);
  } catch (const LedgerUnavailableError&) {
    return failed(totals, now, retry_interval);
  } catch (const LedgerRejectedError&) {
    return failed(totals, now, retry_interval);  // never dropped: the rows stay and are tried again
  }
  failing_ = false;
  rowsDurable(rows_, tracked_, new_rows, tracker, totals);
  since_.reset();
  return writeReceipts(ledger, sink, totals, now, retry_interval);
}

// After the rows (a receipt may name a row of this batch): the same retry,
// nothing dropped. Only once the ledger holds them does the sink acknowledge
// them to the provider (SMPP deliver_sm_resp); until then the provider keeps
// them and sends them again if the connection, or this process, goes away.
bool LedgerBatch::writeReceipts(LedgerInterface& ledger, SinkInterface& sink, WorkerStats& totals, MonoTime now,
                                Nanos retry_interval) {
  if (receipts_.empty()) return true;
  try {
    ledger.recordReceipts(receipts_);
  } catch (const LedgerUnavailableError&) {
    if (!since_) since_ = now;
    return failed(totals, now, retry_interval);
  } catch (const LedgerRejectedError&) {
    if (!since_) since_ = now;
    return failed(totals, now, retry_interval);
  }
  receiptsDurable(receipts_, sink, totals);
  since_.reset();  // nothing pends now (the rows went first): the next entry starts a new interval
  return true;
}

std::optional<MonoTime> LedgerBatch::since() const noexcept {
  if (sent_since_ && (!since_ || *sent_since_ < *since_)) return sent_since_;
  return since_;
}

void LedgerBatch::submit(LedgerWriterInterface& writer) {
  // Swapped, not moved: the emptied vectors keep their room for the next batch.
  rows_.swap(sent_rows_);
  tracked_.swap(sent_tracked_);
  receipts_.swap(sent_receipts_);
  sent_since_ = std::exchange(since_, std::nullopt);
  in_flight_ = true;
  // Copies: the batch stays here to finish its offsets and acknowledge its
  // receipts once it is durable, or to be put back if it is not.
  writer.submit(sent_rows_, sent_receipts_);
}

bool LedgerBatch::finished(const LedgerWriteReport& report, SinkInterface& sink, OffsetTracker& tracker,
                           WorkerStats& totals, MonoTime now, Nanos retry_interval) {
  in_flight_ = false;
  if (report.rows_durable && !sent_rows_.empty()) rowsDurable(sent_rows_, sent_tracked_, report.new_rows, tracker, totals);
  if (report.durable()) {
    failing_ = false;
    receiptsDurable(sent_receipts_, sink, totals);
    sent_since_.reset();
    return true;
  }
  // In front of what came meanwhile, in their order: nothing is dropped, and
  // the oldest still go first.
  rows_.insert(rows_.begin(), std::make_move_iterator(sent_rows_.begin()), std::make_move_iterator(sent_rows_.end()));
  tracked_.insert(tracked_.begin(), sent_tracked_.begin(), sent_tracked_.end());
  receipts_.insert(receipts_.begin(), std::make_move_iterator(sent_receipts_.begin()),
                   std::make_move_iterator(sent_receipts_.end()));
  sent_rows_.clear();
  sent_tracked_.clear();
  sent_receipts_.clear();
  since_ = since().value_or(now);
  sent_since_.reset();
  return failed(totals, now, retry_interval);
}

}  // namespace pacer::delivery_detail
