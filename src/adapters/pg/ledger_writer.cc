#include "pacer/ledger/ledger_writer.h"

#include <fmt/format.h>

#include <exception>
#include <vector>

#include "batch_thread.h"
#include "pacer/sink.h"

namespace pacer::ledger {

namespace {

struct LedgerBatch {
  std::vector<DeliveryRecord> rows;
  std::vector<DeliveryReceipt> receipts;
};

class ThreadedLedgerWriter final : public LedgerWriterInterface {
 public:
  ThreadedLedgerWriter(LedgerInterfacePtr store, LedgerWriterErrorFn on_error)
      : store_(std::move(store)), teller_(std::move(on_error)), thread_([this](LedgerBatch& b) { return write(b); }) {}

  void submit(std::vector<DeliveryRecord> rows, std::vector<DeliveryReceipt> receipts) override {
    thread_.submit(LedgerBatch{std::move(rows), std::move(receipts)});
  }

  void poll(std::vector<LedgerWriteReport>& out) override { thread_.take(out); }

  bool wait(Nanos max) override { return thread_.waitIdle(max); }

 private:
  // Rows first, then receipts (a receipt may name a row of the batch), as
  // the loop's own write does; on the writer's thread, without the lock.
  LedgerWriteReport write(const LedgerBatch& batch) {
    LedgerWriteReport report;
    try {
      if (!batch.rows.empty()) report.new_rows = store_->record(batch.rows);
      report.rows_durable = true;
      if (!batch.receipts.empty()) store_->recordReceipts(batch.receipts);
      report.receipts_durable = true;
    } catch (const Error& e) {  // reported: the core hands the batch over again
      report.error = e.kind();
      report.reason = e.what();
    } catch (const std::exception& e) {  // not the ledger's own: taken as unavailable, tried again
      report.reason = e.what();
    }
    if (!report.durable())
      teller_.failed(fmt::format("{}: {}",
                                 report.rows_durable
                                     ? fmt::format("{} receipts could not be written", batch.receipts.size())
                                     : fmt::format("a batch of {} rows and {} receipts could not be written",
                                                   batch.rows.size(), batch.receipts.size()),
                                 report.reason));
    return report;
  }

  LedgerInterfacePtr store_;
  pg_detail::FailureTeller teller_;
  pg_detail::BatchThread<LedgerBatch, LedgerWriteReport> thread_;  // last: its thread uses the others
};

}  // namespace

LedgerWriterInterfacePtr makeThreadedLedgerWriter(LedgerInterfacePtr store, LedgerWriterErrorFn on_error) {
  return std::make_unique<ThreadedLedgerWriter>(std::move(store), std::move(on_error));
}

}  // namespace pacer::ledger
