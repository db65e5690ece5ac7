#include "pacer/ledger/ledger_writer.h"

#include <fmt/format.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "pacer/sink.h"

namespace pacer::ledger {

namespace {

class ThreadedLedgerWriter final : public LedgerWriterInterface {
 public:
  ThreadedLedgerWriter(LedgerInterfacePtr store, LedgerWriterErrorFn on_error)
      : store_(std::move(store)), on_error_(std::move(on_error)), thread_([this] { run(); }) {}

  ~ThreadedLedgerWriter() override {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    work_.notify_all();
    thread_.join();
  }

  void submit(std::vector<DeliveryRecord> rows, std::vector<DeliveryReceipt> receipts) override {
    {
      std::lock_guard lock(mu_);
      queue_.push_back(Batch{std::move(rows), std::move(receipts)});
    }
    work_.notify_all();
  }

  void poll(std::vector<LedgerWriteReport>& out) override {
    out.clear();
    std::lock_guard lock(mu_);
    out.swap(done_);
  }

  bool wait(Nanos max) override {
    std::unique_lock lock(mu_);
    return finished_.wait_for(lock, max, [&] { return queue_.empty() && !writing_; });
  }

 private:
  struct Batch {
    std::vector<DeliveryRecord> rows;
    std::vector<DeliveryReceipt> receipts;
  };

  void run() {
    std::unique_lock lock(mu_);
    for (;;) {
      work_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      Batch batch = std::move(queue_.front());
      queue_.pop_front();
      writing_ = true;
      lock.unlock();
      LedgerWriteReport report = write(batch);
      lock.lock();
      writing_ = false;
      done_.push_back(std::move(report));
      finished_.notify_all();
    }
  }

  // Rows first, then receipts (a receipt may name a row of the batch), as
  // the loop's own write does; on the writer's thread, without the lock.
  LedgerWriteReport write(const Batch& batch) {
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
      failed(report.rows_durable ? fmt::format("{} receipts could not be written", batch.receipts.size())
                                 : fmt::format("a batch of {} rows and {} receipts could not be written",
                                               batch.rows.size(), batch.receipts.size()),
             report.reason);
    return report;
  }

  // On the writer's thread, without the lock: tells on_error_ at most once per 10 s.
  void failed(const std::string& what, const std::string& why) {
    ++failures_;
    const auto now = std::chrono::steady_clock::now();
    if (!on_error_ || (told_at_ && now - *told_at_ < std::chrono::seconds(10))) return;
    told_at_ = now;
    on_error_(fmt::format("{}: {}", what, why), failures_);
    failures_ = 0;
  }

  LedgerInterfacePtr store_;
  LedgerWriterErrorFn on_error_;
  std::uint64_t failures_ = 0;
  std::optional<std::chrono::steady_clock::time_point> told_at_;
  std::mutex mu_;
  std::condition_variable work_, finished_;
  std::deque<Batch> queue_;
  std::vector<LedgerWriteReport> done_;
  bool writing_ = false, stop_ = false;
  std::thread thread_;  // last: started once everything it uses is built
};

}  // namespace

LedgerWriterInterfacePtr makeThreadedLedgerWriter(LedgerInterfacePtr store, LedgerWriterErrorFn on_error) {
  return std::make_unique<ThreadedLedgerWriter>(std::move(store), std::move(on_error));
}

}  // namespace pacer::ledger
