// The ledger rows and delivery receipts a WorkerCore made and has not
// written yet. They are written together, rows first, when a batch is full
// (WorkerOptions::ledger_batch), when the worker is blocked on them, or
// ledger_flush_interval after the oldest; after a failed write they wait
// ledger_retry_interval and are tried again, never dropped. Once written, a
// tracked row's offset is finished and the receipts are acknowledged to the
// sink. With a LedgerWriterInterface the write leaves the loop's thread: at
// most one batch is in flight, handed over whole, and its rows and receipts
// count as unwritten until the writer reports it durable; a failed one comes
// back in front of what accumulated meanwhile. Private to src/core/delivery;
// not thread-safe (the worker's thread).
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "pacer/ledger.h"
#include "pacer/offset_tracker.h"
#include "pacer/sink.h"
#include "pacer/worker.h"

namespace pacer::delivery_detail {

class LedgerBatch {
 public:
  // Appends a row (`tracked`: its offset is in the tracker, finished once
  // the row is written). The reference lives until the next push, write or submit.
  DeliveryRecord& push(DeliveryRecord r, bool tracked);
  // The last row pushed (rows must not be empty).
  DeliveryRecord& last() { return rows_.back(); }
  // Where SinkInterface::pollReceipts appends.
  std::vector<DeliveryReceipt>& receipts() noexcept { return receipts_; }

  // Notes `now` as when the oldest pending entry was made, unless one is
  // noted: for rows only (markRows), or rows and receipts (mark).
  void markRows(MonoTime now) noexcept {
    if (!since_ && !rows_.empty()) since_ = now;
  }
  void mark(MonoTime now) noexcept {
    if (!since_ && (!rows_.empty() || !receipts_.empty())) since_ = now;
  }
  // Whether to write now: something is pending, no batch is in flight, no
  // failure's retry time is ahead, and the batch is full, the worker is
  // `blocked`, or the oldest is `flush_interval` old.
  bool due(MonoTime now, bool blocked, std::size_t batch, Nanos flush_interval) const noexcept;
  // When a write falls due (nullopt: nothing pending, or a batch in flight:
  // its report comes first).
  std::optional<MonoTime> wake(MonoTime now, Nanos flush_interval) const noexcept;
  // Writes the rows, then the receipts. False when the store failed: the
  // rest is kept and tried again from now + retry_interval.
  bool write(LedgerInterface& ledger, SinkInterface& sink, OffsetTracker& tracker, WorkerStats& totals, MonoTime now,
             Nanos retry_interval);

  // Hands everything pending to `writer` as one batch (nothing may be in
  // flight); it stays counted in rows() and pendingReceipts() until
  // finished() hears of it.
  void submit(LedgerWriterInterface& writer);
  // The writer's report on the batch in flight. Durable: what write() does
  // after its writes. Failed: what was not durable goes back in front of
  // what is pending, in its order, tried again from now + retry_interval.
  // False when it failed.
  bool finished(const LedgerWriteReport& report, SinkInterface& sink, OffsetTracker& tracker, WorkerStats& totals,
                MonoTime now, Nanos retry_interval);
  bool inFlight() const noexcept { return in_flight_; }

  // Not yet durable: pending and in flight.
  std::size_t rows() const noexcept { return rows_.size() + sent_rows_.size(); }
  std::size_t pendingReceipts() const noexcept { return receipts_.size() + sent_receipts_.size(); }
  std::optional<MonoTime> since() const noexcept;     // when the oldest of rows() was made
  bool failing() const noexcept { return failing_; }  // the last write failed

 private:
  bool writeReceipts(LedgerInterface& ledger, SinkInterface& sink, WorkerStats& totals, MonoTime now,
                     Nanos retry_interval);
  bool failed(WorkerStats& totals, MonoTime now, Nanos retry_interval) noexcept;

  std::vector<DeliveryRecord> rows_;       // pending, in the order made
  std::vector<char> tracked_;              // per row: its offset is in the tracker
  std::vector<DeliveryReceipt> receipts_;  // from the sink, not yet in the ledger (written with the rows)
  std::optional<MonoTime> since_;          // when the oldest pending row was made (set at the step that made it)
  MonoTime retry_at_{};
  bool failing_ = false;
  // The batch handed to a writer and not yet reported, with what it was
  // when handed over (since_ then, per row whether it is tracked).
  std::vector<DeliveryRecord> sent_rows_;
  std::vector<char> sent_tracked_;
  std::vector<DeliveryReceipt> sent_receipts_;
  std::optional<MonoTime> sent_since_;
  bool in_flight_ = false;
};

}  // namespace pacer::delivery_detail
