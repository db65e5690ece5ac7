// The outcome events' outbox (migration 011) as its drainer sees it: the
// rows one worker id wrote, oldest first, and their removal once published.
// One connection, opened lazily and again after it breaks. Not thread-safe:
// one owner thread (the drainer's). Errors are LedgerUnavailableError /
// LedgerRejectedError, as the ledger's.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "pacer/ledger/pg_ledger.h"
#include "pacer/outcome_event.h"

namespace pacer::ledger {

struct OutboxDepth {
  std::int64_t rows = 0;           // this worker's rows not yet published
  double oldest_age_seconds = 0;   // how long the oldest of them has waited (0: none)
};

class PgOutbox {
 public:
  // `options.outbox_worker` names the rows this reader owns (not empty).
  explicit PgOutbox(PgLedgerOptions options);
  ~PgOutbox();
  PgOutbox(const PgOutbox&) = delete;
  PgOutbox& operator=(const PgOutbox&) = delete;

  // At most `limit` of this worker's rows, in id order: those left from
  // before a crash come first.
  std::vector<OutcomeEvent> next(std::size_t limit);
  // One round trip of the pipelined drainer: deletes the rows `remove` (the
  // broker has them; each at most `after`) and reads at most `limit` of this
  // worker's rows with an id above `after`, in id order, in one transaction.
  std::vector<OutcomeEvent> next(std::int64_t after, std::size_t limit, std::span<const std::int64_t> remove);
  // Deletes the rows `ids` (the broker has them). Returns how many went.
  std::size_t remove(std::span<const std::int64_t> ids);
  // One count(*) over this worker's rows, with the age of the oldest.
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
