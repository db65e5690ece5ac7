// A WorkerCore's pending ledger rows and receipts (ledger_batch.h).
#include "ledger_batch.h"

#include <algorithm>

namespace pacer::delivery_detail {

DeliveryRecord& LedgerBatch::push(DeliveryRecord r, bool tracked) {
  rows_.push_back(std::move(r));
  tracked_.push_back(tracked ? 1 : 0);
  return rows_.back();
}

bool LedgerBatch::due(MonoTime now, bool blocked, std::size_t batch, Nanos flush_interval) const noexcept {
  if ((rows_.empty() && receipts_.empty()) || now < retry_at_) return false;
  return rows_.size() + receipts_.size() >= batch || blocked || now - since_.value_or(now) >= flush_interval;
}

std::optional<MonoTime> LedgerBatch::wake(MonoTime now, Nanos flush_interval) const noexcept {
  if (rows_.empty() && receipts_.empty()) return std::nullopt;
  return std::max(retry_at_, since_.value_or(now) + flush_interval);
}

bool LedgerBatch::failed(WorkerStats& totals, MonoTime now, Nanos retry_interval) noexcept {
  ++totals.ledger_errors;
  failing_ = true;
  retry_at_ = now + retry_interval;
  return false;
}

bool LedgerBatch::write(LedgerInterface& ledger, SinkInterface& sink, OffsetTracker& tracker, WorkerStats& totals,
                        MonoTime now, Nanos retry_interval) {
  if (rows_.empty()) return writeReceipts(ledger, sink, totals, now, retry_interval);
  try {
    totals.ledger_rows += ledger.record(rows_);
  } catch (const LedgerUnavailableError&) {
    return failed(totals, now, retry_interval);
  } catch (const LedgerRejectedError&) {
    return failed(totals, now, retry_interval);  // never dropped: the rows stay and are tried again
  }
  failing_ = false;
  ++totals.ledger_writes;
  for (std::size_t i = 0; i < rows_.size(); ++i)
    if (tracked_[i]) tracker.finish(rows_[i].topic, rows_[i].partition, rows_[i].offset);
  rows_.clear();
  tracked_.clear();
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
  sink.receiptsRecorded(receipts_);
  totals.receipts += receipts_.size();
  receipts_.clear();
  since_.reset();  // nothing pends now (the rows went first): the next entry starts a new interval
  return true;
}

}  // namespace pacer::delivery_detail
