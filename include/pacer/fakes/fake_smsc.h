// pacer-fake-smsc: an SMSC stand-in speaking SMPP 3.4 on loopback, for tests,
// the demo and benchmarks. It checks passwords, enforces a window per bind
// and a strict one-second quota in segments per account, injects errors at
// configurable rates, sends delivery receipts after a delay with a
// configurable outcome mix, and records what it received. See docs/smpp.md.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace pacer::fake {

struct FakeSmscAccount {
  std::string system_id;
  std::string password;
  int quota_per_s = 0;  // accepted segments in any 1 s sliding window; 0: none
};

struct FakeSmscOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0: the kernel picks one
  std::vector<FakeSmscAccount> accounts;
  std::size_t window = 10;                // unanswered submit_sm per bind; one more is answered ESME_RTHROTTLED
  int response_delay_ms = 0;              // submit_sm_resp this long after the submit_sm
  double permanent_rate = 0;              // fraction of submits answered `permanent_status`
  std::uint32_t permanent_status = 0x0B;  // ESME_RINVDSTADR
  double transient_rate = 0;              // fraction answered `transient_status`
  std::uint32_t transient_status = 0x08;  // ESME_RSYSERR
  double throttle_rate = 0;               // fraction answered ESME_RTHROTTLED at random, whatever the rate
  // An outage: outage_at_ms after the first submit_sm, every connection is
  // dropped without a word and binds are refused (ESME_RBINDFAIL) for
  // outage_ms. outage_at_ms < 0: none.
  int outage_at_ms = -1;
  int outage_ms = 0;
  // Segment faults in the middle of multi-part messages: of each
  // concatenated message (new reference) with probability
  // `segment_fault_rate`, segment `segment_fault_part` (0: a random one of
  // 2..m, so at least one part came before it; beyond m: none) is answered
  // `segment_fault_status` the first `segment_fault_times` times it arrives
  // (0: every time); after that it is treated like any submit.
  double segment_fault_rate = 0;
  int segment_fault_part = 0;
  int segment_fault_times = 1;
  std::uint32_t segment_fault_status = 0x08;  // ESME_RSYSERR
  int receipt_delay_ms = 0;                   // receipt this long after the accepted submit
  // Receipt outcome mix (weights; normalised): DELIVRD, UNDELIV, EXPIRED, REJECTD.
  double mix_delivered = 1, mix_undelivered = 0, mix_expired = 0, mix_rejected = 0;
  bool receipt_tlvs = true;  // also send receipted_message_id and message_state
  // Receipts name the message id in decimal, while submit_sm_resp gives it
  // in hex (as some SMSCs do: docs/smpp.md "Carrier settings").
  bool receipt_ids_decimal = false;
  std::string record_path;   // one line per segment received (written as it goes); empty: none
  std::uint64_t seed = 1;
};

class FakeSmsc {
 public:
  explicit FakeSmsc(FakeSmscOptions options);
  ~FakeSmsc();
  FakeSmsc(const FakeSmsc&) = delete;
  FakeSmsc& operator=(const FakeSmsc&) = delete;

  // Listens and serves on a thread of its own; returns the port. Throws
  // std::runtime_error when it cannot listen or open the record file.
  int start();
  // Stops serving, closes every connection, flushes the record. Idempotent.
  void stop();

  // Per account: binds, bind_failures, submits, accepted, throttled,
  // window_exceeded, errors_permanent, errors_transient, max_segments_1s,
  // receipts_sent {delivered, undelivered, expired, rejected},
  // receipts_acked, receipts_resent (sent again after their bind ended
  // unanswered), receipts_pending (not sent yet), receipts_unacked (sent on
  // a bind still open, not answered yet), and "concatenated": what arrived
  // of multi-part messages per concatenation reference (docs/smpp.md).
  // Safe from any thread.
  nlohmann::json report() const;

  // Test hooks, safe from any thread, carried out by the server's thread
  // soon after: an SMSC-initiated unbind on every bound session, or every
  // connection dropped without a word.
  void unbindAll();
  void dropAll();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pacer::fake
