// The pipelined outbox drainer's bookkeeping: batches read from the outbox in
// id order and handed to the producer while earlier ones still wait for their
// delivery reports, and the published-up-to cursor that says which rows are
// done. Pure: no I/O, no clock; the drainer feeds it what it read, what it
// produced, each report, and what it stored.
//
// The outbox is not deleted row by row: the drainer stores one cursor per
// worker id (every row at or below it has been acknowledged by the broker),
// and old rows go in bulk. cursor() is the highest id below which every row
// produced is acknowledged; a row still in flight, or failed, holds it back.
// A crash repeats what lies above the stored cursor: what was produced and
// not yet covered by a stored cursor (at most `limit` rows).
//
// Reads move a read position (after()) past what is in flight, so a row is
// never produced twice while it waits. A failed row stays above the cursor;
// once nothing is in flight, the acknowledged rows above it are deleted by
// id (stranded(), removed()), the cursor is stored, and the read position
// goes back to the cursor (rewind()): the failed row is read again, and
// nothing else is produced twice.
//
// The cursor assumes that one writer adds a worker id's rows, one
// transaction at a time (pacerd's ledger writer), so a row never commits
// below one that is already visible.
//
// Thread-safety: none; one owner thread (the drainer's, where the producer's
// delivery reports arrive).
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <span>
#include <vector>

namespace pacer {

class OutboxWindow {
 public:
  // `limit`: the most events produced and not yet covered by a stored cursor
  // (or deleted), that is, what a crash may publish twice (0 counts as 1).
  explicit OutboxWindow(std::size_t limit);

  // Starts over from a stored cursor (read at the drainer's start): nothing
  // in flight, reads from the row after it.
  void restart(std::int64_t stored_cursor);

  // The next read takes rows with an id above this.
  std::int64_t after() const noexcept { return after_; }
  // A read of up to `n` more rows keeps what is held (in flight, or
  // acknowledged above the stored cursor) within the limit, and no failure
  // waits for a rewind. A read of more than the limit is allowed when
  // nothing is held (the first batch always goes).
  bool mayRead(std::size_t n) const noexcept;
  // Rows just read (ids ascending, each above after()) and about to be handed
  // to the producer: each now waits for its report; the read position moves
  // past them.
  void produced(std::span<const std::int64_t> ids);
  // The report for `id`: acknowledged or failed (the row stays; reads stop
  // until the window settles and is rewound). An id not in flight, or
  // reported before, is ignored (returns false).
  bool report(std::int64_t id, bool acknowledged);

  // The highest id such that every row produced at or below it is
  // acknowledged (never below the stored cursor).
  std::int64_t cursor() const noexcept;
  std::int64_t storedCursor() const noexcept { return stored_; }
  // cursor() is now stored: forgets the acknowledged ids at or below it.
  // Returns how many that were (newly published events).
  std::size_t stored(std::int64_t cursor);
  // After a failure, with nothing in flight: the acknowledged ids above
  // cursor(), ascending, to delete one by one before the rewind.
  std::vector<std::int64_t> stranded() const;
  // Those ids are deleted: forgets them. Returns how many it held.
  std::size_t removed(std::span<const std::int64_t> ids);
  // Acknowledged rows that a stored cursor() would cover now.
  std::size_t storable() const noexcept;

  std::size_t inFlight() const noexcept { return in_flight_.size(); }
  // A failure since the last rewind: its row must be read again.
  bool failed() const noexcept { return !failed_ids_.empty(); }
  // Nothing in flight and every acknowledged row covered by the stored
  // cursor or deleted: reading from the cursor again duplicates nothing.
  bool settled() const noexcept { return in_flight_.empty() && acked_.empty(); }
  // Back to the stored cursor, forgetting the failures. Only when settled();
  // otherwise does nothing and returns false.
  bool rewind() noexcept;

 private:
  std::size_t limit_;
  std::int64_t after_ = 0;
  std::int64_t stored_ = 0;
  std::set<std::int64_t> in_flight_;
  std::set<std::int64_t> failed_ids_;
  std::set<std::int64_t> acked_;  // acknowledged, above the stored cursor
};

}  // namespace pacer
