// The delivery ledger: every message outcome (sent, failed, rejected,
// invalid_token) is recorded durably before its Kafka offset may be committed.
#pragma once

#include "pacer/error.h"
#include "pacer/time.h"

#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace pacer {

struct DeliveryReceipt;  // pacer/sink.h

// kInvalidToken: the provider said the recipient's push token is dead (a
// dead-letter row like kFailed, kept apart so the operator can export and
// prune the tokens).
// kSuppressed: a frequency cap refused the message under the suppress policy
// (a finished outcome: nothing was sent, by rule, and the row says which cap).
// kExpired: the message's deadline passed before it could be sent (nothing
// was sent and no quota was spent; the reason names the deadline).
enum class DeliveryStatus { kSent, kFailed, kRejected, kInvalidToken, kSuppressed, kExpired };
// "sent", "failed", "rejected", "invalid_token", "suppressed", "expired".
std::string_view deliveryStatusName(DeliveryStatus s) noexcept;

struct DeliveryRecord {
  std::string message_id;  // idempotency key; unique in the ledger
  std::string campaign;
  std::string topic;
  std::int32_t partition = 0;
  std::int64_t offset = 0;
  DeliveryStatus status = DeliveryStatus::kSent;
  std::int32_t attempts = 1;
  std::string reason;             // why it was not delivered; empty for sent
  bool unpark = false;            // the message came from parking: leave parking in the same transaction
  std::uint64_t fingerprint = 0;  // Message::fingerprint; 0: unknown
  std::string provider;             // the campaign's provider id; empty: none
  std::string provider_message_id;  // the provider's id for it (SMPP's message_id; a failed SMS whose first part went: that part's), empty if none
  // kInvalidToken: the dead token (the message's recipient) and when the
  // provider says it stopped being valid (APNs "timestamp", Unix ms; 0: it
  // did not say). The ledger keeps one invalid_tokens row per (provider,
  // token), counted once per new delivery row. Empty/0 for other statuses.
  std::string token;
  std::int64_t invalid_since_ms = 0;
};

// The ledger key of a message whose id another message already holds:
// "<id>@<topic>/<partition>/<offset>" (unique per Kafka record).
std::string reusedIdKey(const DeliveryRecord& r);

// The ledger store could not be reached (connection refused, lost, timed
// out). Nothing in the failed call is durable; the caller keeps its rows and
// retries later, and commits no offset past them.
class LedgerUnavailableError : public Error {
 public:
  explicit LedgerUnavailableError(const std::string& what) : Error(ErrorKind::kUnavailable, what) {}
};

// The store refused the call itself (bad schema, a constraint). Retrying the
// same rows will not help.
class LedgerRejectedError : public Error {
 public:
  explicit LedgerRejectedError(const std::string& what) : Error(ErrorKind::kRejected, what) {}
};

// Thread-safety: implementations are used from one thread at a time.
class LedgerInterface {
 public:
  virtual ~LedgerInterface() = default;

  // Records `rows` durably in one batch. A row whose message_id is already in
  // the ledger is left as it is (first outcome wins: a message replayed after
  // a crash is not recorded twice), unless the row there is another message
  // (another fingerprint, another Kafka record): then this one gets a row of
  // its own under reusedIdKey(), `rejected`, saying so and what became of it,
  // never a silent skip. A new kInvalidToken row with a token also counts one
  // hit on its (provider, token) invalid_tokens row in the same batch (a
  // replayed one counts nothing). Returns how many rows were new. Throws
  // LedgerUnavailableError or LedgerRejectedError; on a throw nothing of the
  // batch is durable.
  virtual std::size_t record(std::span<const DeliveryRecord> rows) = 0;

  // Offsets in [from, to) of topic/partition that already have an outcome,
  // or are parked (they will be sent from parking: reading them again would
  // send them twice), ascending. One query per call: replay asks once per
  // assigned range.
  virtual std::vector<std::int64_t> finishedOffsets(const std::string& topic, std::int32_t partition, std::int64_t from,
                                                    std::int64_t to) = 0;

  // Records delivery receipts durably in one batch, each under (provider,
  // provider_message_id): a later receipt for the same id replaces an
  // earlier one, and the same receipt again (status, error code, text and
  // done time equal) changes nothing, so recording it twice is harmless. A
  // receipt whose id no delivery row has yet is kept all the
  // same (its row may be written later, or by another worker; or the id is
  // unknown, which the operator sees). Throws as record() does.
  virtual void recordReceipts(std::span<const DeliveryReceipt> receipts) = 0;
};
using LedgerInterfacePtr = std::unique_ptr<LedgerInterface>;

// Ledger writes off the loop's thread (pacerd: a thread with its own
// PostgreSQL connection, see pacer/ledger/ledger_writer.h), so the loop never
// waits on a commit while lease tokens fall due. The core hands it one batch
// at a time and learns through poll() whether it is durable; a row's offset
// is finished, and a receipt acknowledged, only after that. Thread-safety:
// every call comes from the core's one thread; the work is done elsewhere.
struct LedgerWriteReport {
  // record() returned (also when the batch had no rows): the rows are durable.
  bool rows_durable = false;
  std::size_t new_rows = 0;  // what record() returned
  // recordReceipts() returned (also when there were none). Tried only once
  // the rows are durable (a receipt may name a row of its batch).
  bool receipts_durable = false;
  // When either failed: why (LedgerUnavailableError, LedgerRejectedError, or
  // kUnavailable for anything else thrown). The core retries either way.
  ErrorKind error = ErrorKind::kUnavailable;
  std::string reason;
  bool durable() const noexcept { return rows_durable && receipts_durable; }
};

class LedgerWriterInterface {
 public:
  virtual ~LedgerWriterInterface() = default;
  // Hands a batch over: record(rows), then recordReceipts(receipts); returns
  // at once. Batches are written one at a time and reported in the order
  // submitted.
  virtual void submit(std::vector<DeliveryRecord> rows, std::vector<DeliveryReceipt> receipts) = 0;
  // Moves the reports of the batches finished since the last call into `out`
  // (cleared first), oldest first.
  virtual void poll(std::vector<LedgerWriteReport>& out) = 0;
  // Blocks until every batch submitted so far has finished, or for `max` at
  // most (nanoseconds); true when they all finished.
  virtual bool wait(Nanos max) = 0;
};
using LedgerWriterInterfacePtr = std::unique_ptr<LedgerWriterInterface>;

}  // namespace pacer
