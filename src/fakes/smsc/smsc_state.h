// pacer-fake-smsc's bookkeeping, apart from its sockets: accounts, the
// strict sliding quota, error injection, receipts, the record and the report.
// Called from the server's thread only, except report() (under the mutex
// the server holds while it changes anything).
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "pacer/fakes/fake_smsc.h"
#include "pacer/smpp/pdu.h"

namespace pacer::fake {

using Clock = std::chrono::steady_clock;

struct AccountState {
  FakeSmscAccount config;
  std::deque<Clock::time_point> accepted_log;  // accepted segments in the last second
  std::uint64_t binds = 0, bind_failures = 0, submits = 0, accepted = 0, throttled = 0, window_exceeded = 0;
  std::uint64_t errors_permanent = 0, errors_transient = 0, max_segments_1s = 0;
  std::uint64_t throttled_random = 0;  // of `throttled`: by --throttle-rate, whatever the rate
  std::uint64_t binds_refused = 0;     // during an outage
  std::uint64_t receipts_sent[4] = {0, 0, 0, 0};  // delivered, undelivered, expired, rejected
  std::uint64_t receipts_acked = 0;
  std::uint64_t receipts_resent = 0;  // sent again after the bind they went on ended unanswered
  std::size_t next_receiver = 0;  // round robin among the account's receiving binds
  // Multi-part messages, by concatenation reference (ConcatMessage).
  std::uint64_t concat_messages = 0, concat_complete = 0, duplicate_parts = 0, parts_out_of_turn = 0;
  std::uint64_t segment_faults = 0;
};

// One multi-part message as this SMSC saw it: the parts that arrived under
// one (destination, reference, total) of one account. Complete once every
// part was accepted; a reference that comes again after that is a new one.
struct ConcatMessage {
  std::size_t account = 0;
  std::string destination;
  int reference = 0, total = 0;
  std::vector<std::string> ids;        // per part: the id it was accepted under; empty: not accepted
  std::vector<std::uint8_t> answered;  // per part: its ESME_ROK answer went out
  std::size_t accepted = 0;            // parts accepted (once each)
  int fault_part = 0;                  // answered segment_fault_status when it arrives; 0: none
  int faults = 0;                      // times it was
  bool complete() const { return accepted == static_cast<std::size_t>(total); }
};

struct PendingReceipt {
  Clock::time_point due;
  std::size_t account;
  std::string message_id;
  std::string source;  // the submit's destination: the receipt comes from it
  std::string destination;
  int outcome;  // 0..3 as in receipts_sent
  std::string submit_date;
  bool counted = false;  // in receipts_sent already (a receipt sent again is not counted twice)
};

class SmscState {
 public:
  explicit SmscState(const FakeSmscOptions& options);
  ~SmscState();

  // Index of the account, or -1 with `status` set (ESME_RBINDFAIL unknown,
  // ESME_RINVPASWD wrong password).
  // During an outage every bind is refused (ESME_RBINDFAIL).
  int authenticate(const smpp::Pdu& bind, std::uint32_t& status, Clock::time_point now = Clock::now());
  // True once, when the outage (FakeSmscOptions::outage_at_ms) is due: the
  // caller drops every connection; binds are refused from now for outage_ms.
  bool outageDue(Clock::time_point now);
  // Decides the answer to one submit_sm of `account` at `now`; fills
  // `message_id` when accepted, queues its receipt, writes the record line.
  // `part` (when given) gets a handle for answered(), -1 for a single-part
  // message.
  std::uint32_t submit(std::size_t account, const smpp::Pdu& pdu, bool window_full, Clock::time_point now,
                       std::string& message_id, std::int64_t* part = nullptr);
  // The answer to the part `handle` (from submit()) went out, with `status`.
  void answered(std::int64_t handle, std::uint32_t status);
  const std::vector<ConcatMessage>& concatenated() const { return concat_; }
  // The receipt as a deliver_sm (sequence number left to the caller).
  smpp::Pdu receiptPdu(const PendingReceipt& r) const;

  std::deque<PendingReceipt>& receipts() { return receipts_; }
  std::vector<AccountState>& accounts() { return accounts_; }
  std::mutex& mutex() { return mu_; }
  nlohmann::json report() const;
  void flushRecord();

 private:
  int pickOutcome();
  ConcatMessage* arrive(std::size_t account, const smpp::Pdu& pdu, int n, int m, int reference);
  void accept(ConcatMessage& cm, int n, const std::string& id);
  nlohmann::json concatReport(std::size_t account) const;
  void record(Clock::time_point now, const std::string& account, const std::string& id, const smpp::Pdu& pdu,
              std::uint32_t status);

  FakeSmscOptions options_;
  std::vector<AccountState> accounts_;
  std::deque<PendingReceipt> receipts_;
  std::vector<ConcatMessage> concat_;
  std::map<std::string, std::size_t> open_concat_;  // incomplete ones, by account/destination/reference/total
  std::mt19937_64 rng_;
  std::uint64_t next_id_ = 0;
  std::FILE* record_ = nullptr;
  Clock::time_point start_ = Clock::now();
  // The same instant on the system clock: the record's times (ms from
  // start_) of two SMSCs are compared through it (failover runs).
  std::int64_t start_unix_ms_ =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  std::optional<Clock::time_point> first_submit_;
  std::optional<Clock::time_point> outage_started_;
  Clock::time_point refuse_until_{};
  mutable std::mutex mu_;
};

// "n/m" of a segment, from its UDH (IEI 0x00 or 0x08) or sar_* TLVs; 1/1 if neither.
void segmentOf(const smpp::Pdu& pdu, int& n, int& m);
// The same and its concatenation reference (-1 if neither).
void segmentOf(const smpp::Pdu& pdu, int& n, int& m, int& reference);

}  // namespace pacer::fake
