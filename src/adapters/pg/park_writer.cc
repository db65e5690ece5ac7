#include "pacer/ledger/park_writer.h"

#include <fmt/format.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

namespace pacer::ledger {

namespace {

class ThreadedParkWriter final : public ParkWriterInterface {
 public:
  ThreadedParkWriter(ParkingInterfacePtr store, ParkWriterErrorFn on_error)
      : store_(std::move(store)), on_error_(std::move(on_error)), thread_([this] { run(); }) {}

  ~ThreadedParkWriter() override {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    work_.notify_all();
    thread_.join();
  }

  void submit(std::vector<Message> messages, std::vector<WallTime> not_before) override {
    {
      std::lock_guard lock(mu_);
      queue_.push_back(Batch{std::move(messages), std::move(not_before)});
    }
    work_.notify_all();
  }

  void requestUnclaimed() override {
    {
      std::lock_guard lock(mu_);
      scan_wanted_ = true;
    }
    work_.notify_all();
  }

  void poll(ParkWriterReport& out) override {
    out.batches.clear();
    out.unclaimed.reset();
    std::lock_guard lock(mu_);
    out.batches.swap(done_);
    out.unclaimed = std::move(unclaimed_);
    unclaimed_.reset();
    out.unclaimed_failed = scan_failed_;
    scan_failed_ = false;
  }

  void wait() override {
    std::unique_lock lock(mu_);
    finished_.wait(lock, [&] { return queue_.empty() && !writing_; });
  }

 private:
  struct Batch {
    std::vector<Message> messages;
    std::vector<WallTime> not_before;
  };

  void run() {
    std::unique_lock lock(mu_);
    for (;;) {
      work_.wait(lock, [&] { return stop_ || scan_wanted_ || !queue_.empty(); });
      if (stop_) return;
      if (scan_wanted_) {  // once every few seconds: before the next batch, so it is not put off by a backlog
        scan_wanted_ = false;
        lock.unlock();
        std::optional<std::vector<std::pair<std::string, std::size_t>>> counts;
        try {
          counts = store_->unclaimed();
        } catch (const std::exception& e) {
          failed("the scan for unclaimed parked messages failed", e);
        }
        lock.lock();
        scan_failed_ = scan_failed_ || !counts;
        if (counts) unclaimed_ = std::move(counts);
        continue;
      }
      Batch batch = std::move(queue_.front());
      queue_.pop_front();
      writing_ = true;
      lock.unlock();
      bool durable = true;
      try {
        store_->park(batch.messages, batch.not_before);
      } catch (const std::exception& e) {  // reported: the core hands the batch over again
        durable = false;
        failed(fmt::format("a batch of {} could not be parked", batch.messages.size()), e);
      }
      lock.lock();
      writing_ = false;
      done_.push_back(durable);
      finished_.notify_all();
    }
  }

  // On the writer's thread, without the lock: tells on_error_ at most once per 10 s.
  void failed(const std::string& what, const std::exception& e) {
    ++failures_;
    const auto now = std::chrono::steady_clock::now();
    if (!on_error_ || (told_at_ && now - *told_at_ < std::chrono::seconds(10))) return;
    told_at_ = now;
    on_error_(fmt::format("{}: {}", what, e.what()), failures_);
    failures_ = 0;
  }

  ParkingInterfacePtr store_;
  ParkWriterErrorFn on_error_;
  std::uint64_t failures_ = 0;
  std::optional<std::chrono::steady_clock::time_point> told_at_;
  std::mutex mu_;
  std::condition_variable work_, finished_;
  std::deque<Batch> queue_;
  std::vector<bool> done_;
  std::optional<std::vector<std::pair<std::string, std::size_t>>> unclaimed_;
  bool scan_wanted_ = false, scan_failed_ = false, writing_ = false, stop_ = false;
  std::thread thread_;  // last: started once everything it uses is built
};

}  // namespace

ParkWriterInterfacePtr makeThreadedParkWriter(ParkingInterfacePtr store, ParkWriterErrorFn on_error) {
  return std::make_unique<ThreadedParkWriter>(std::move(store), std::move(on_error));
}

}  // namespace pacer::ledger
