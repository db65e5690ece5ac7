// Outcome events: each ledger change (an outcome row, a receipt) as the
// record published on the events topic, and the bookkeeping of one batch
// between produce and the broker's acknowledgement. Pure: no I/O, no clock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace pacer {

// One outbox row. `status` is the ledger's own text ("sent", "failed",
// "delivered", ...), copied as it is, so a new status needs no change here.
struct OutcomeEvent {
  std::int64_t id = 0;       // the outbox id: unique and increasing per database; consumers dedupe on it
  std::string kind;          // "outcome" (a deliveries row) or "receipt" (a delivery receipt)
  std::string message_id;    // empty: a receipt whose message no delivery row names (yet)
  std::string campaign;      // the Kafka key
  std::string status;
  std::string reason;        // why (failed, rejected, ...); a receipt's error code and text
  std::string provider;
  std::string provider_message_id;
  std::int32_t attempts = 0;
  std::int64_t recorded_at_ms = 0;  // Unix ms: when the ledger change was written
  std::int64_t done_at_ms = 0;      // Unix ms: receipts, when the provider says it finished; 0: not said
};

// The event's JSON object, one line, keys in a fixed order:
// {"event_id":..,"kind":..,"message_id":..,"campaign":..,"status":..,"reason":..,
//  "provider":..,"provider_message_id":..,"attempts":..,"recorded_at_ms":..,"done_at_ms":..}
// done_at_ms is left out when 0. Strings are escaped per RFC 8259; bytes
// that are not valid UTF-8 become U+FFFD, so the value always parses.
std::string encodeOutcomeEvent(const OutcomeEvent& e);

// One batch of events handed to the producer, until every one of them has
// its delivery report. Which ids may leave the outbox (the broker has them),
// and which stay for the next batch (failed, or never reported). Not
// thread-safe; the producer's reports are fed in from the draining thread.
class OutboxBatch {
 public:
  // A new batch of `ids` (each once); forgets the previous one.
  void start(const std::vector<std::int64_t>& ids);
  // The report for `id`: acknowledged by the broker, or failed. An id not in
  // the batch, or reported before, is ignored (returns false).
  bool report(std::int64_t id, bool acknowledged);
  // Every id of the batch has its report.
  bool complete() const noexcept { return pending_ == 0; }
  std::size_t pending() const noexcept { return pending_; }
  std::size_t failed() const noexcept { return failed_; }
  // The acknowledged ids, ascending: these may be deleted from the outbox.
  std::vector<std::int64_t> acknowledged() const;

 private:
  enum class State : std::uint8_t { kPending, kAcked, kFailed };
  std::unordered_map<std::int64_t, State> states_;
  std::size_t pending_ = 0;
  std::size_t failed_ = 0;
};

}  // namespace pacer
