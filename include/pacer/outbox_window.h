// The pipelined outbox drainer's bookkeeping: batches read from the outbox in
// id order and handed to the producer while earlier ones still wait for their
// delivery reports. A row leaves the outbox only once the broker has
// acknowledged it; a failed one stays and is read again. Pure: no I/O, no
// clock; the drainer feeds it what it read, what it produced and each report.
//
// Reads move a cursor (after()) past what is in flight, so a row is never
// produced twice while it waits. The cursor goes back to the oldest row
// (rewind()) only when nothing is in flight and nothing acknowledged waits
// for its delete: a failed row is then read again, and so is a row that
// committed after a higher id was read, without duplicating anything else.
//
// Thread-safety: none; one owner thread (the drainer's, where the producer's
// delivery reports arrive).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <unordered_set>
#include <vector>

namespace pacer {

class OutboxWindow {
 public:
  // `limit`: the most events produced and not yet deleted, that is, what a
  // crash may publish twice (0 counts as 1).
  explicit OutboxWindow(std::size_t limit);

  // The next read takes rows with an id above this (0: from the oldest row).
  std::int64_t after() const noexcept { return after_; }
  // A read of up to `n` more rows keeps what is in flight or acknowledged
  // and not yet taken within the limit, and no failure waits for a rewind.
  // A read of more than the limit is allowed when nothing is held (the
  // first batch always goes).
  bool mayRead(std::size_t n) const noexcept;
  // Rows just read (ids ascending, each above after()) and about to be handed
  // to the producer: each now waits for its report; the cursor moves past them.
  void produced(std::span<const std::int64_t> ids);
  // The report for `id`: acknowledged (the row may be deleted) or failed (it
  // stays; reads stop until the window settles and is rewound). An id not in
  // flight, or reported before, is ignored (returns false).
  bool report(std::int64_t id, bool acknowledged);

  // The acknowledged ids not yet deleted, ascending; the window forgets them.
  // Hand them back with giveBack() if the delete did not happen.
  std::vector<std::int64_t> takeAcknowledged();
  void giveBack(std::span<const std::int64_t> ids);
  std::size_t acknowledgedWaiting() const noexcept { return acked_.size(); }

  std::size_t inFlight() const noexcept { return in_flight_.size(); }
  // A failure since the last rewind: its row must be read again.
  bool failed() const noexcept { return failed_; }
  // Nothing in flight and no acknowledged id waiting for its delete: reading
  // from the oldest row again would duplicate nothing.
  bool settled() const noexcept { return in_flight_.empty() && acked_.empty(); }
  // Back to the oldest row, forgetting the failure. Only when settled();
  // otherwise does nothing and returns false.
  bool rewind() noexcept;

 private:
  std::size_t limit_;
  std::int64_t after_ = 0;
  bool failed_ = false;
  std::unordered_set<std::int64_t> in_flight_;
  std::vector<std::int64_t> acked_;
};

}  // namespace pacer
