#include "pacer/ledger/park_writer.h"

#include <fmt/format.h>

#include <exception>
#include <mutex>
#include <optional>
#include <utility>
#include <variant>
#include <vector>

#include "batch_thread.h"

namespace pacer::ledger {

namespace {

struct ParkBatch {
  std::vector<Message> messages;
  std::vector<WallTime> not_before;
};
struct ClaimJob {
  std::string campaign;
  std::size_t max = 0;
  WallTime now{};
};
struct RenewJob {};
struct Renewed {
  bool ok = false;
};
using ParkJob = std::variant<ParkBatch, ClaimJob, RenewJob>;
// A batch's durability, a claim's answer, or a renewal's.
using ParkDone = std::variant<bool, ParkClaimAnswer, Renewed>;

class ThreadedParkWriter final : public ParkWriterInterface {
 public:
  ThreadedParkWriter(ParkingInterfacePtr store, ParkWriterErrorFn on_error)
      : store_(std::move(store)),
        teller_(std::move(on_error)),
        thread_([this](ParkJob& job) { return run(job); }, [this] { scan(); }) {}

  void submit(std::vector<Message> messages, std::vector<WallTime> not_before) override {
    thread_.submit(ParkBatch{std::move(messages), std::move(not_before)});
  }

  void requestClaim(std::string campaign, std::size_t max, WallTime now) override {
    thread_.submit(ClaimJob{std::move(campaign), max, now}, true);
  }

  void requestRenew() override { thread_.submit(RenewJob{}, true); }

  // Once every few seconds: the scan goes before the next batch, so a backlog does not put it off.
  void requestUnclaimed() override { thread_.requestChore(); }

  // The scan's answer first, then the rest: every batch the scan saw written is then among those
  // reported (the thread reports a batch before it runs the next scan).
  void poll(ParkWriterReport& out) override {
    {
      std::lock_guard lock(scan_mu_);
      out.unclaimed = std::move(unclaimed_);
      unclaimed_.reset();
      out.unclaimed_failed = scan_failed_;
      scan_failed_ = false;
    }
    out.batches.clear();
    out.claims.clear();
    out.renewals = out.renewals_failed = 0;
    thread_.take(done_);
    for (ParkDone& d : done_) {
      if (const bool* durable = std::get_if<bool>(&d)) {
        out.batches.push_back(*durable);
      } else if (ParkClaimAnswer* claim = std::get_if<ParkClaimAnswer>(&d)) {
        out.claims.push_back(std::move(*claim));
      } else {
        ++out.renewals;
        if (!std::get<Renewed>(d).ok) ++out.renewals_failed;
      }
    }
  }

  void wait() override { thread_.waitIdle(); }

 private:
  // On the writer's thread, without the lock.
  ParkDone run(ParkJob& job) {
    if (ParkBatch* batch = std::get_if<ParkBatch>(&job)) {
      try {
        store_->park(batch->messages, batch->not_before);
        return true;
      } catch (const std::exception& e) {  // reported: the core hands the batch over again
        teller_.failed(fmt::format("a batch of {} could not be parked: {}", batch->messages.size(), e.what()));
        return false;
      }
    }
    if (ClaimJob* claim = std::get_if<ClaimJob>(&job)) {
      ParkClaimAnswer answer;
      try {
        answer.messages = store_->claim(claim->campaign, claim->max, claim->now);
      } catch (const std::exception& e) {  // reported: the core claims again later
        answer.failed = true;
        teller_.failed(fmt::format("a claim for campaign {} failed: {}", claim->campaign, e.what()));
      }
      return answer;
    }
    try {
      store_->renew();
      return Renewed{true};
    } catch (const std::exception& e) {  // the next renewal comes long before the leases end
      teller_.failed(fmt::format("renewing the claims' leases failed: {}", e.what()));
      return Renewed{false};
    }
  }

  void scan() {
    std::optional<std::vector<std::pair<std::string, std::size_t>>> counts;
    try {
      counts = store_->unclaimed();
    } catch (const std::exception& e) {
      teller_.failed(fmt::format("the scan for unclaimed parked messages failed: {}", e.what()));
    }
    std::lock_guard lock(scan_mu_);
    scan_failed_ = scan_failed_ || !counts;
    if (counts) unclaimed_ = std::move(counts);
  }

  ParkingInterfacePtr store_;
  pg_detail::FailureTeller teller_;
  std::vector<ParkDone> done_;  // poll()'s scratch, on the core's thread
  std::mutex scan_mu_;          // the scan's answer, between the writer's thread and poll()
  std::optional<std::vector<std::pair<std::string, std::size_t>>> unclaimed_;
  bool scan_failed_ = false;
  pg_detail::BatchThread<ParkJob, ParkDone> thread_;  // last: its thread uses the others
};

}  // namespace

ParkWriterInterfacePtr makeThreadedParkWriter(ParkingInterfacePtr store, ParkWriterErrorFn on_error) {
  return std::make_unique<ThreadedParkWriter>(std::move(store), std::move(on_error));
}

}  // namespace pacer::ledger
