// The outcome events' outbox (migrations 11 and 15) as its drainer sees it:
// the rows one worker id wrote, oldest first, and its published-up-to cursor
// (table outbox_cursor): every row at or below the cursor has been published
// and goes later, in bulk (prune()). One connection, opened lazily and again
// after it breaks. Not thread-safe: one owner thread (the drainer's). Errors
// are LedgerUnavailableError / LedgerRejectedError, as the ledger's.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "pacer/ledger/pg_ledger.h"
#include "pacer/outcome_event.h"

namespace pacer::ledger {

struct OutboxDepth {
  std::int64_t rows = 0;           // this worker's rows above its cursor (not yet published)
  double oldest_age_seconds = 0;   // how long the oldest of them has waited (0: none)
};

// Another running process drains the same worker id's outbox rows (it holds the id's
// PostgreSQL advisory lock). The cursor relies on one writer per id: two would lose events.
class OutboxWorkerBusyError : public LedgerRejectedError {
 public:
  using LedgerRejectedError::LedgerRejectedError;
};

class PgOutbox {
 public:
  // `options.outbox_worker` names the rows this reader owns (not empty).
  explicit PgOutbox(PgLedgerOptions options);
  ~PgOutbox();
  PgOutbox(const PgOutbox&) = delete;
  PgOutbox& operator=(const PgOutbox&) = delete;

  // Every call first holds the worker id's session advisory lock on this reader's connection
  // (taken again after a reconnect), and throws OutboxWorkerBusyError while another session
  // holds it.
  // This worker's stored cursor (0: none yet).
  std::int64_t storedCursor();
  // Waits until every transaction that had written in this database when it
  // was called has ended, at most `limit` (a row committed by a worker that
  // died a moment ago lands before the first read). Returns whether they all
  // ended.
  bool awaitEarlierWriters(std::chrono::milliseconds limit);
  // At most `limit` of this worker's rows above its stored cursor, in id
  // order: those left from before a crash come first.
  std::vector<OutcomeEvent> next(std::size_t limit);
  // One round trip of the pipelined drainer: stores `cursor` (if given) and
  // reads at most `limit` of this worker's rows with an id above `after`, in
  // id order, in one transaction.
  std::vector<OutcomeEvent> next(std::int64_t after, std::size_t limit, std::optional<std::int64_t> cursor);
  // Stores `cursor` (the stored one never goes back) and deletes the rows
  // `remove` (published, above the cursor), in one transaction.
  void store(std::int64_t cursor, std::span<const std::int64_t> remove = {});
  // Deletes this worker's rows at or below its stored cursor. Returns how
  // many went.
  std::size_t prune();
  // One count(*) over this worker's rows above its cursor, with the age of
  // the oldest.
  OutboxDepth depth();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// An event of the callbacks' outbox (migration 14) with where it goes.
struct CallbackEvent {
  OutcomeEvent event;
  std::string url;  // the campaign's callback URL now; empty: it has none any more (or the campaign is gone)
};

// The callbacks' outbox as the callback worker sees it: the rows one worker
// id wrote, oldest first, each with its campaign's URL as it is now (a URL
// changed by pacerctl applies to what waits), and their removal once POSTed
// or given up on. Same connection handling, threading and errors as PgOutbox.
class PgCallbackOutbox {
 public:
  // `options.callback_worker` names the rows this reader owns (not empty).
  explicit PgCallbackOutbox(PgLedgerOptions options);
  ~PgCallbackOutbox();
  PgCallbackOutbox(const PgCallbackOutbox&) = delete;
  PgCallbackOutbox& operator=(const PgCallbackOutbox&) = delete;

  // One round trip: deletes the rows `remove` and reads at most `limit` of
  // this worker's rows with an id above `after`, in id order.
  std::vector<CallbackEvent> next(std::int64_t after, std::size_t limit, std::span<const std::int64_t> remove);
  // Deletes the rows `ids`. Returns how many went.
  std::size_t remove(std::span<const std::int64_t> ids);
  // One count(*) over this worker's rows, with the age of the oldest.
  OutboxDepth depth();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pacer::ledger
