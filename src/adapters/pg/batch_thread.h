// One thread that writes a store's batches, one at a time and in the order
// handed over, so the loop that hands them over never waits on a commit; the
// park writer and the ledger writer are each one of these around their own
// store. Private to pacer::pg.
//
//   write(Batch&) -> Result   runs on the thread, without the lock; its
//                             results are taken by take(), in the order run:
//                             the batches submitted `first`, in order, go
//                             before those waiting in the plain order
//   chore()                   optional: run on the thread, without the lock,
//                             before the next batch, once per requestChore()
//
// Destroying it waits for the batch being written and leaves the others
// unwritten (never reported, so the core never counts them durable).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "pacer/log_limiter.h"
#include "pacer/time.h"

namespace pacer::pg_detail {

template <class Batch, class Result>
class BatchThread {
 public:
  using WriteFn = std::function<Result(Batch&)>;
  using ChoreFn = std::function<void()>;

  explicit BatchThread(WriteFn write, ChoreFn chore = {})
      : write_(std::move(write)), chore_(std::move(chore)), thread_([this] { run(); }) {}

  ~BatchThread() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    work_.notify_all();
    thread_.join();
  }

  BatchThread(const BatchThread&) = delete;
  BatchThread& operator=(const BatchThread&) = delete;

  void submit(Batch batch, bool first = false) {
    {
      std::lock_guard lock(mu_);
      (first ? urgent_ : queue_).push_back(std::move(batch));
    }
    work_.notify_all();
  }

  void requestChore() {
    {
      std::lock_guard lock(mu_);
      chore_wanted_ = true;
    }
    work_.notify_all();
  }

  // The results written since the last call, in order (out is replaced).
  void take(std::vector<Result>& out) {
    out.clear();
    std::lock_guard lock(mu_);
    out.swap(done_);
  }

  // Until every batch handed over is written, or `max` (none: no limit). True when they are.
  bool waitIdle(std::optional<Nanos> max = std::nullopt) {
    std::unique_lock lock(mu_);
    const auto idle = [&] { return queue_.empty() && urgent_.empty() && !writing_; };
    if (!max) {
      finished_.wait(lock, idle);
      return true;
    }
    return finished_.wait_for(lock, *max, idle);
  }

 private:
  void run() {
    std::unique_lock lock(mu_);
    for (;;) {
      work_.wait(lock, [&] { return stop_ || chore_wanted_ || !urgent_.empty() || !queue_.empty(); });
      if (stop_) return;
      if (chore_wanted_) {  // before the next batch, so that a backlog does not put it off
        chore_wanted_ = false;
        lock.unlock();
        if (chore_) chore_();
        lock.lock();
        continue;
      }
      std::deque<Batch>& from = urgent_.empty() ? queue_ : urgent_;
      Batch batch = std::move(from.front());
      from.pop_front();
      writing_ = true;
      lock.unlock();
      Result result = write_(batch);
      lock.lock();
      writing_ = false;
      done_.push_back(std::move(result));
      finished_.notify_all();
    }
  }

  WriteFn write_;
  ChoreFn chore_;
  std::mutex mu_;
  std::condition_variable work_, finished_;
  std::deque<Batch> queue_, urgent_;
  std::vector<Result> done_;
  bool chore_wanted_ = false, writing_ = false, stop_ = false;
  std::thread thread_;  // last: started once everything it uses is built
};

// A writer's failures told at most once per 10 s (LogLimiter), with how many
// failed since the last telling; on the writer's thread, which reads its own
// clock as the adapter it is.
class FailureTeller {
 public:
  using TellFn = std::function<void(const std::string& reason, std::uint64_t failures)>;
  explicit FailureTeller(TellFn tell) : tell_(std::move(tell)) {}

  void failed(const std::string& reason) {
    if (!tell_) return;
    if (const std::optional<std::uint64_t> held = limiter_.admit("", std::chrono::steady_clock::now()))
      tell_(reason, *held + 1);
  }

 private:
  TellFn tell_;
  LogLimiter limiter_;
};

}  // namespace pacer::pg_detail
