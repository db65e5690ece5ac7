// The fakes unit tests share: a ledger, a sink and a parking store in
// memory, each as strict as the interface it stands for (a full sink
// refuses, a down ledger throws what a lost PostgreSQL throws). The clock
// is SimulatedTimeSource (pacer/time.h); the quota backend in memory is
// LocalQuotaBackend (pacer/quota.h).
#pragma once

#include <algorithm>
#include <deque>
#include <functional>
#include <exception>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "pacer/frequency_cap.h"
#include "pacer/ledger.h"
#include "pacer/worker.h"  // ParkingInterface
#include "pacer/sink.h"

namespace pacer::test_support {

// A ledger in memory; `available` false makes every call throw as a lost
// PostgreSQL would.
class FakeLedger final : public LedgerInterface {
 public:
  std::size_t record(std::span<const DeliveryRecord> rows) override {
    ++calls;
    if (!available) throw LedgerUnavailableError("down");
    std::size_t fresh = 0;
    for (const DeliveryRecord& r : rows) {
      if (byId.emplace(r.message_id, r).second) ++fresh;
      if (r.unpark) unparked.insert(r.message_id);
    }
    return fresh;
  }
  std::vector<std::int64_t> finishedOffsets(const std::string&, std::int32_t, std::int64_t, std::int64_t) override {
    return {};
  }
  void recordReceipts(std::span<const DeliveryReceipt> rs) override {
    ++calls;
    if (!available) throw LedgerUnavailableError("down");
    receipts.insert(receipts.end(), rs.begin(), rs.end());
  }
  std::vector<DeliveryReceipt> receipts;
  std::size_t count(DeliveryStatus s) const {
    return static_cast<std::size_t>(
        std::count_if(byId.begin(), byId.end(), [&](const auto& e) { return e.second.status == s; }));
  }
  bool available = true;
  int calls = 0;
  std::map<std::string, DeliveryRecord> byId;
  std::set<std::string> unparked;
};

// A sink whose sends finish when the test says, with the outcome `answer` gives.
class FakeSink final : public SinkInterface {
 public:
  explicit FakeSink(std::size_t max) : max_(max) {}
  bool submit(const Message& m, std::uint64_t ticket) override {
    if (inFlight() >= max_) return false;  // answered but not yet polled still counts
    if (refuse && refuse(m)) return false;
    submitted.push_back(m);
    pending_.push_back({m, ticket});
    if (instant) finishAll();
    return true;
  }
  void poll(std::vector<SendResult>& out) override {
    for (SendResult& r : done_) out.push_back(std::move(r));
    done_.clear();
  }
  std::size_t inFlight() const override { return pending_.size() + done_.size(); }
  std::size_t maxInFlight() const override { return max_; }
  void wait(Nanos max) override { waits.push_back(max); }
  void pollReceipts(std::vector<DeliveryReceipt>& out) override {
    for (DeliveryReceipt& r : receipts) out.push_back(std::move(r));
    receipts.clear();
  }
  std::vector<DeliveryReceipt> receipts;  // handed out at the next pollReceipts
  void receiptsRecorded(std::span<const DeliveryReceipt> rs) override {
    ++recorded_calls;
    if (on_recorded) on_recorded(rs);
    recorded.insert(recorded.end(), rs.begin(), rs.end());
  }
  std::vector<DeliveryReceipt> recorded;  // every receipt receiptsRecorded() was told of, in order
  int recorded_calls = 0;
  std::function<void(std::span<const DeliveryReceipt>)> on_recorded;  // called first, e.g. to look at the ledger
  // Answers the `n` oldest messages not answered yet (when instant is false).
  void finishFirst(std::size_t n) {
    n = std::min(n, pending_.size());
    for (std::size_t i = 0; i < n; ++i) {
      SendResult r = answer ? answer(pending_[i].first) : SendResult{};
      r.ticket = pending_[i].second;
      done_.push_back(std::move(r));
    }
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(n));
  }
  void finishAll() { finishFirst(pending_.size()); }
  std::function<SendResult(const Message&)> answer;  // default: delivered
  std::function<bool(const Message&)> refuse;        // true: full for this message (a provider's own sink)
  bool instant = true;
  std::vector<Message> submitted;    // every message taken, in order
  std::vector<Nanos> waits;          // every wait() asked for
  std::vector<std::string> campaigns() const {  // of every message taken, in order
    std::vector<std::string> out;
    for (const Message& m : submitted) out.push_back(m.campaign);
    return out;
  }

 private:
  std::size_t max_;
  std::vector<std::pair<Message, std::uint64_t>> pending_;
  std::vector<SendResult> done_;
};

class FakeParking final : public ParkingInterface {
 public:
  std::size_t park(std::span<const Message> messages, std::span<const WallTime> nb) override {
    if (!available) throw LedgerUnavailableError("down");
    ++park_calls;
    std::size_t fresh = 0;
    for (std::size_t i = 0; i < messages.size(); ++i) {
      const Message& m = messages[i];
      if (ids.insert(m.id).second || claimed.erase(m.id) > 0) {
        parked[m.campaign].push_back(m);
        not_before[m.id] = nb.empty() ? WallTime{} : nb[i];
        ++fresh;
      }
    }
    return fresh;
  }
  // Oldest first among those due at `now` (as PostgreSQL's ORDER BY seq).
  std::vector<Message> claim(const std::string& campaign, std::size_t max, WallTime now) override {
    if (!available) throw LedgerUnavailableError("down");
    auto& q = parked[campaign];
    std::vector<Message> out;
    for (auto it = q.begin(); it != q.end() && out.size() < max;) {
      if (not_before[it->id] > now) {
        ++it;
        continue;
      }
      claimed.insert(it->id);
      out.push_back(std::move(*it));
      it = q.erase(it);
    }
    return out;
  }
  // Every campaign with parked messages (claimed ones leave the map at once).
  std::vector<std::pair<std::string, std::size_t>> unclaimed() override {
    std::vector<std::pair<std::string, std::size_t>> out;
    if (!report_unclaimed) return out;
    for (const auto& [c, q] : parked)
      if (!q.empty()) out.emplace_back(c, q.size());
    return out;
  }
  bool report_unclaimed = false;  // off: as before, a worker learns only of what it parked itself
  int park_calls = 0;
  std::set<std::string> claimed;  // claimed and not yet parked again
  std::map<std::string, WallTime> not_before;
  void renew() override {
    if (!available) throw LedgerUnavailableError("down");
    ++renewals;
  }
  int renewals = 0;
  std::size_t release() override {
    ++releases;
    return 0;
  }
  int releases = 0;
  std::size_t size() const {
    std::size_t n = 0;
    for (const auto& [c, q] : parked) n += q.size();
    return n;
  }
  bool available = true;
  std::set<std::string> ids;
  std::map<std::string, std::deque<Message>> parked;
};

// A park writer the test drives, as a thread would run it: batches wait
// until finish() writes them to `store` in order (failed while the store is
// unavailable), and an asked scan is answered by answerScan() or finish().
// Claims and renewals go before the batches waiting, as the thread takes
// them: at once when asked, or, with `hold_claims`, at the next finish().
class FakeParkWriter final : public ParkWriterInterface {
 public:
  explicit FakeParkWriter(ParkingInterface& store) : store_(store) {}
  void submit(std::vector<Message> messages, std::vector<WallTime> not_before) override {
    ++submits;
    sizes.push_back(messages.size());
    pending_.push_back({std::move(messages), std::move(not_before)});
  }
  void requestClaim(std::string campaign, std::size_t max, WallTime now) override {
    ++claims_asked;
    held_.push_back(Held{false, std::move(campaign), max, now});
    if (!hold_claims) answerClaims();
  }
  void requestRenew() override {
    ++renewals_asked;
    held_.push_back(Held{true, {}, 0, {}});
    if (!hold_claims) answerClaims();
  }
  void requestUnclaimed() override {
    ++scans_asked;
    scan_asked_ = true;
  }
  void poll(ParkWriterReport& out) override {
    out.batches = std::exchange(done_, {});
    out.claims = std::exchange(claims_, {});
    out.renewals = std::exchange(renewals_, 0);
    out.renewals_failed = std::exchange(renewals_failed_, 0);
    out.unclaimed = std::exchange(unclaimed_, std::nullopt);
    out.unclaimed_failed = false;
  }
  void wait() override {
    ++waits;
    finish();
  }
  // Answers the claims and renewals asked, writes the oldest `n` batches
  // waiting and answers a scan asked for.
  void finish(std::size_t n = SIZE_MAX) {
    answerScan();
    answerClaims();
    for (; n > 0 && !pending_.empty(); --n) {
      bool durable = true;
      try {
        store_.park(pending_.front().first, pending_.front().second);
      } catch (const std::exception&) {
        durable = false;
      }
      if (durable && lose_answers > 0) {  // committed, and told as failed
        --lose_answers;
        durable = false;
      }
      done_.push_back(durable);
      pending_.pop_front();
    }
  }
  void answerScan() {
    if (scan_asked_) unclaimed_ = store_.unclaimed();
    scan_asked_ = false;
  }
  void answerClaims() {
    for (Held& h : held_) {
      if (h.renew) {
        ++renewals_;
        try {
          store_.renew();
        } catch (const std::exception&) {
          ++renewals_failed_;
        }
        continue;
      }
      ParkClaimAnswer answer;
      try {
        answer.messages = store_.claim(h.campaign, h.max, h.now);
      } catch (const std::exception&) {
        answer.failed = true;
      }
      claims_.push_back(std::move(answer));
    }
    held_.clear();
  }
  std::size_t pending() const { return pending_.size(); }
  std::size_t claimsHeld() const { return held_.size(); }
  int submits = 0, scans_asked = 0, waits = 0, claims_asked = 0, renewals_asked = 0;
  std::vector<std::size_t> sizes;  // of every batch submitted, in order
  // The next this many batches written are reported failed all the same: a
  // commit that succeeded while its answer was lost (a commit in doubt).
  std::size_t lose_answers = 0;
  bool hold_claims = false;  // claims and renewals wait for finish() (a writer busy with a batch)

 private:
  struct Held {
    bool renew = false;
    std::string campaign;
    std::size_t max = 0;
    WallTime now{};
  };
  ParkingInterface& store_;
  std::deque<std::pair<std::vector<Message>, std::vector<WallTime>>> pending_;
  std::deque<Held> held_;
  std::vector<bool> done_;
  std::vector<ParkClaimAnswer> claims_;
  std::size_t renewals_ = 0, renewals_failed_ = 0;
  std::optional<std::vector<std::pair<std::string, std::size_t>>> unclaimed_;
  bool scan_asked_ = false;
};

// A ledger writer the test drives, as a thread would run it: batches wait
// until finish() writes them to `store` in order (rows, then receipts; failed
// while the store is unavailable). wait() finishes them too, unless `stalled`
// (a commit that takes longer than the wait).
class FakeLedgerWriter final : public LedgerWriterInterface {
 public:
  explicit FakeLedgerWriter(LedgerInterface& store) : store_(store) {}
  void submit(std::vector<DeliveryRecord> rows, std::vector<DeliveryReceipt> receipts) override {
    ++submits;
    std::vector<std::string> ids;
    for (const DeliveryRecord& r : rows) ids.push_back(r.message_id);
    batches.push_back(std::move(ids));
    pending_.push_back({std::move(rows), std::move(receipts)});
  }
  void poll(std::vector<LedgerWriteReport>& out) override { out = std::exchange(done_, {}); }
  bool wait(Nanos) override {
    ++waits;
    if (!stalled) finish();
    return pending_.empty();
  }
  // Writes the oldest `n` batches waiting.
  void finish(std::size_t n = SIZE_MAX) {
    for (; n > 0 && !pending_.empty(); --n) {
      auto& [rows, receipts] = pending_.front();
      LedgerWriteReport r;
      try {
        if (!rows.empty()) r.new_rows = store_.record(rows);
        r.rows_durable = true;
        if (!receipts.empty()) store_.recordReceipts(receipts);
        r.receipts_durable = true;
      } catch (const Error& e) {
        r.error = e.kind();
        r.reason = e.what();
      }
      done_.push_back(std::move(r));
      pending_.pop_front();
    }
  }
  std::size_t pending() const { return pending_.size(); }
  int submits = 0, waits = 0;
  bool stalled = false;
  std::vector<std::vector<std::string>> batches;  // the row ids of every batch submitted, in order

 private:
  LedgerInterface& store_;
  std::deque<std::pair<std::vector<DeliveryRecord>, std::vector<DeliveryReceipt>>> pending_;
  std::vector<LedgerWriteReport> done_;
};

// The in-memory cap store, with a switch that makes it answer as a Redis
// that cannot be reached, and counters of what it was asked.
class FakeCapStore final : public FrequencyCapStore {
 public:
  CapBatchResult decide(std::span<const CapQuery> queries, WallTime now, std::span<CapDecision> out) noexcept override {
    ++decides;
    queried += queries.size();
    if (!available) {
      for (std::size_t i = 0; i < queries.size(); ++i) out[i] = CapDecision{CapVerdict::kUnavailable, now, 0};
      return CapBatchResult{CapFault::kIo, 0};
    }
    return inner_->decide(queries, now, out);
  }
  CapBatchResult release(std::span<const CapRelease> releases, WallTime now) noexcept override {
    if (!available) return CapBatchResult{CapFault::kIo, 0};
    for (const CapRelease& r : releases) released.emplace_back(std::string(r.recipient), std::string(r.scope));
    return inner_->release(releases, now);
  }
  bool available = true;
  std::size_t decides = 0, queried = 0;
  std::vector<std::pair<std::string, std::string>> released;  // (recipient, scope)

 private:
  FrequencyCapStorePtr inner_ = makeMemoryFrequencyCapStore();
};

}  // namespace pacer::test_support
