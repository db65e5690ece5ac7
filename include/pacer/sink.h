// Where messages go: a provider (HTTP, SMPP, APNs, FCM), a Kafka topic, stdout, nowhere.
// A sink is asynchronous: submit() hands a message over without blocking and
// poll() collects what has finished. Every submitted message comes back from
// poll() exactly once, with an outcome; nothing is dropped silently.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "pacer/message.h"
#include "pacer/time.h"

namespace pacer {

// How a provider answered one attempt. Every sink maps its protocol's answers
// onto these classes (docs/provider-contract.md has each sink's table); the
// worker decides what follows from the class alone.
enum class SendOutcome {
  kDelivered,     // accepted by the provider
  kThrottled,     // the provider asks everyone to slow down (HTTP 429, 503 with Retry-After,
                  // SMPP ESME_RTHROTTLED / ESME_RMSGQFUL): the provider pauses for every
                  // worker (retry_after, or the policy's default) and the message retries;
                  // with scope kRecipient (APNs TooManyRequests) only the message waits
  kFault,         // this attempt failed but the message may go later (5xx without Retry-After,
                  // 408, timeouts, lost connections, SMPP generic_nack): the message retries
                  // with jittered backoff and the provider's circuit breaker counts it
  kPermanent,     // refused for good (bad request): a dead-letter row with the reason
  kInvalidToken,  // the recipient's address is dead (APNs 410 / BadDeviceToken, FCM
                  // UNREGISTERED): a dead-letter row, and the token is recorded for the operator
};

// "delivered", "throttled", "fault", "permanent", "invalid_token".
const char* outcomeName(SendOutcome outcome) noexcept;

// Whom a throttle concerns. Most throttles are the provider's (it is over its
// own rate for everyone); APNs 429 TooManyRequests is about one device token
// only (too many notifications to that device), and pausing the provider for
// it would stall every other recipient. (WorkerCore takes a crowd of them,
// three or more recipients of one provider within 5 s, counting every
// worker's, as the provider's: a window in front of the tokens refusing
// whoever comes.)
enum class AnswerScope {
  kProvider,   // the whole provider: it pauses for every worker and the adaptive rate falls
  kRecipient,  // only this message's recipient: the message alone backs off (jittered, growing
               // per throttled attempt); the provider goes on and its rate does not move
};

struct SendResult {
  std::uint64_t ticket = 0;  // the caller's handle from submit()
  SendOutcome outcome = SendOutcome::kDelivered;
  Nanos retry_after{0};  // kThrottled: the pause the provider asked for; 0 if it named none
  AnswerScope scope = AnswerScope::kProvider;  // kThrottled: whom the throttle concerns
  int status = 0;        // the protocol's status where there is one (HTTP status, SMPP command_status)
  std::string reason;    // why, when not delivered
  Nanos latency{0};      // request to answer, where the sink measures it; 0 otherwise
  // kDelivered: the provider's own id for the message (SMPP message_id from
  // submit_sm_resp, APNs apns-id, FCM message name), by which later delivery
  // receipts name it; empty when the protocol has none. A failure may carry
  // one too (the first part of an SMS the SMSC holds): a failed row keeps it.
  std::string provider_message_id;
  // kInvalidToken: when the provider says the token stopped being valid
  // (APNs "timestamp", milliseconds since the Unix epoch); 0 if it did not say.
  std::int64_t invalid_since_ms = 0;
};

// The final state a provider reports for a message it accepted earlier
// (SMPP deliver_sm receipts).
enum class ReceiptStatus { kDelivered, kUndelivered, kExpired, kRejected, kUnknown };

// "delivered", "undelivered", "expired", "rejected", "unknown".
const char* receiptStatusName(ReceiptStatus status) noexcept;

// A delivery receipt, matched to its ledger row by (provider,
// provider_message_id) whichever worker receives it.
struct DeliveryReceipt {
  std::string provider;             // the provider id (filled by the daemon when the sink does not know it)
  std::string provider_message_id;  // as in SendResult::provider_message_id
  ReceiptStatus status = ReceiptStatus::kUnknown;
  std::string error_code;           // the provider's error code ("err:" in SMPP), empty if none
  std::int64_t done_at_ms = 0;      // when the provider says it finished (Unix ms), 0 if unknown
  std::int64_t received_at_ms = 0;  // when it reached Pacer (Unix ms, the adapter's wall clock)
  std::string text;                 // the receipt as received (bounded), for the ledger
  // The sink's own handle for answering the receipt once the ledger holds it
  // (SinkInterface::receiptsRecorded); 0: nothing to answer. Opaque to
  // everyone but the sink that made it, never written to the ledger, and
  // unique in the process, so a handle reaching another sink is ignored.
  std::uint64_t ack = 0;
};

// Thread-safety: one owner thread.
class SinkInterface {
 public:
  virtual ~SinkInterface() = default;
  // Hands `message` over. False, without taking it, when maxInFlight()
  // messages are already in flight: try again after the next poll().
  virtual bool submit(const Message& message, std::uint64_t ticket) = 0;
  // Appends finished sends to `out`; never blocks.
  virtual void poll(std::vector<SendResult>& out) = 0;
  virtual std::size_t inFlight() const = 0;
  virtual std::size_t maxInFlight() const = 0;
  // Blocks up to `max` until an in-flight send may have progressed (the
  // worker's idle wait). Sinks that finish at once return immediately.
  virtual void wait(Nanos max) { (void)max; }
  // Appends delivery receipts that arrived since the last call (sinks whose
  // protocol has them); never blocks. Each receipt is handed out once.
  virtual void pollReceipts(std::vector<DeliveryReceipt>& out) { (void)out; }
  // The ledger now durably holds `receipts` (from pollReceipts(), this sink's
  // or, through a routing sink, another's). A protocol that acknowledges
  // receipts (SMPP deliver_sm_resp) acknowledges these now and never before,
  // so a receipt lost before the ledger has it stays unacknowledged and the
  // provider sends it again. Handles the sink does not know, or whose
  // connection is gone, are skipped (the provider redelivers those). Never
  // blocks; an acknowledgement the socket cannot take at once goes with the
  // next poll().
  virtual void receiptsRecorded(std::span<const DeliveryReceipt> receipts) { (void)receipts; }
};
using SinkInterfacePtr = std::unique_ptr<SinkInterface>;

// Counts and forgets: for benchmarks.
SinkInterfacePtr makeNullSink(std::size_t max_in_flight);

// One line per message on `out` (stdout in demos):
//   <campaign> <message id> <recipient or -> <payload>
// with the payload's newlines, tabs, backslashes, control bytes and invalid
// UTF-8 escaped (\n, \t, \\, \xNN), so one message is always one line.
// A failed write is reported as kFault with the error.
SinkInterfacePtr makeStdoutSink(std::FILE* out, std::size_t max_in_flight);

// The escaping the stdout sink applies to payloads.
std::string escapeForLine(const std::string& bytes);

}  // namespace pacer
