#include "pacer/outbox_window.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <random>
#include <set>
#include <vector>

namespace pacer {
namespace {

std::vector<std::int64_t> range(std::int64_t first, std::int64_t last) {
  std::vector<std::int64_t> out;
  for (std::int64_t id = first; id <= last; ++id) out.push_back(id);
  return out;
}

TEST(OutboxWindowTest, ReadsGoOnWhileEarlierBatchesWaitUpToTheLimit) {
  OutboxWindow w(3000);
  EXPECT_EQ(w.after(), 0);
  EXPECT_TRUE(w.mayRead(1000));
  w.produced(range(1, 1000));
  EXPECT_EQ(w.after(), 1000);
  EXPECT_TRUE(w.mayRead(1000));
  w.produced(range(1001, 2000));
  EXPECT_TRUE(w.mayRead(1000));
  w.produced(range(2001, 3000));
  EXPECT_EQ(w.inFlight(), 3000u);
  EXPECT_FALSE(w.mayRead(1));  // the window is full
  w.report(1, true);
  EXPECT_FALSE(w.mayRead(1));  // acknowledged, the cursor not yet stored: a crash would publish it again
  EXPECT_EQ(w.cursor(), 1);
  EXPECT_EQ(w.stored(w.cursor()), 1u);
  EXPECT_TRUE(w.mayRead(1));
  EXPECT_FALSE(w.mayRead(2));
}

TEST(OutboxWindowTest, TheFirstBatchGoesEvenWhenLargerThanTheLimit) {
  OutboxWindow w(10);
  EXPECT_TRUE(w.mayRead(500));
  w.produced(range(1, 500));
  EXPECT_FALSE(w.mayRead(1));
}

TEST(OutboxWindowTest, TheCursorCoversOnlyAnUnbrokenRunOfAcknowledgedRows) {
  OutboxWindow w(100);
  w.restart(40);  // stored before a restart
  EXPECT_EQ(w.after(), 40);
  EXPECT_EQ(w.cursor(), 40);
  w.produced(range(41, 45));
  w.produced(range(46, 50));
  for (std::int64_t id : {49, 42, 50, 46}) EXPECT_TRUE(w.report(id, true));
  EXPECT_EQ(w.cursor(), 40);  // 41 still waits
  EXPECT_EQ(w.storable(), 0u);
  EXPECT_TRUE(w.report(41, true));
  EXPECT_EQ(w.cursor(), 42);
  EXPECT_EQ(w.storable(), 2u);
  EXPECT_FALSE(w.report(42, true));  // a repeated report
  EXPECT_FALSE(w.report(7, true));   // never produced
  EXPECT_EQ(w.stored(w.cursor()), 2u);
  EXPECT_EQ(w.storedCursor(), 42);
  EXPECT_EQ(w.stored(w.cursor()), 0u);  // counted once
  for (std::int64_t id : {43, 44, 45, 47, 48}) w.report(id, true);
  EXPECT_EQ(w.cursor(), 50);
  EXPECT_FALSE(w.settled());  // acknowledged, not yet covered by a stored cursor
  EXPECT_EQ(w.stored(50), 8u);
  EXPECT_TRUE(w.settled());
}

TEST(OutboxWindowTest, AFailedRowHoldsTheCursorAndIsReadAgainAfterTheRewind) {
  OutboxWindow w(100);
  w.produced(range(1, 4));
  w.produced(range(5, 8));
  EXPECT_TRUE(w.report(3, false));
  EXPECT_TRUE(w.failed());
  EXPECT_FALSE(w.report(3, true));  // a late ack does not turn the failure into an acknowledgement
  EXPECT_FALSE(w.mayRead(1));       // no new rows until the failed one is read again
  for (std::int64_t id : {8, 1, 2, 4, 7, 6, 5}) w.report(id, true);
  EXPECT_EQ(w.cursor(), 2);
  EXPECT_FALSE(w.rewind());  // acknowledged rows are neither covered nor deleted
  EXPECT_EQ(w.stranded(), (std::vector<std::int64_t>{4, 5, 6, 7, 8}));
  EXPECT_EQ(w.stored(w.cursor()), 2u);
  EXPECT_EQ(w.removed(w.stranded()), 5u);
  EXPECT_TRUE(w.settled());
  EXPECT_TRUE(w.rewind());
  EXPECT_EQ(w.after(), 2);  // row 3 is the first above the cursor: the next read takes it first
  EXPECT_FALSE(w.failed());
  EXPECT_TRUE(w.mayRead(4));
  w.produced(std::vector<std::int64_t>{3, 9});  // 4-8 are gone
  w.report(9, true);
  w.report(3, true);
  EXPECT_EQ(w.cursor(), 9);
}

TEST(OutboxWindowTest, AFailedStoreKeepsTheRowsHeldSoNoRewindCanDuplicateThem) {
  OutboxWindow w(100);
  w.produced(range(1, 3));
  for (std::int64_t id : {1, 2, 3}) w.report(id, true);
  EXPECT_FALSE(w.settled());  // PostgreSQL was down: the cursor was not stored
  EXPECT_FALSE(w.rewind());
  EXPECT_EQ(w.after(), 3);
  EXPECT_EQ(w.cursor(), 3);
  EXPECT_EQ(w.stored(3), 3u);
  EXPECT_TRUE(w.rewind());
  EXPECT_EQ(w.after(), 3);
}

// A simulated outbox and broker: one writer commits rows in id order,
// batches are read after the read position, reports arrive in random order
// and some fail, the cursor is stored at random times (and the store
// sometimes fails), and the drainer sometimes crashes and restarts from the
// stored cursor. A row is never in flight twice, the stored cursor never
// passes a row the broker does not have, a crash repeats only rows above the
// stored cursor (at most the limit), and at the end every row was
// acknowledged.
TEST(OutboxWindowTest, RandomRunsPublishEveryRowAndStoreOnlyAcknowledgedOnes) {
  std::mt19937 rng(26);
  for (int run = 0; run < 200; ++run) {
    const std::size_t limit = 1 + rng() % 40;
    OutboxWindow w(limit);
    const std::size_t batch = 1 + rng() % 15;
    std::set<std::int64_t> outbox;     // committed rows not deleted by id
    std::deque<std::int64_t> flight;   // produced, no report yet
    std::set<std::int64_t> acked;      // the broker has them
    std::int64_t stored = 0;           // the cursor in PostgreSQL
    std::int64_t next_id = 1;
    std::size_t produced_total = 0;
    auto read = [&] {
      std::vector<std::int64_t> ids;
      for (auto it = outbox.upper_bound(w.after()); it != outbox.end() && ids.size() < batch; ++it) ids.push_back(*it);
      for (std::int64_t id : ids) {
        ASSERT_EQ(std::count(flight.begin(), flight.end(), id), 0) << "row " << id << " in flight twice";
        flight.push_back(id);
      }
      produced_total += ids.size();
      w.produced(ids);
    };
    auto store = [&] {
      const std::int64_t c = w.cursor();
      for (std::int64_t id : outbox) {
        if (id > stored && id <= c) {
          ASSERT_TRUE(acked.count(id)) << "cursor " << c << " passes row " << id;
        }
      }
      stored = std::max(stored, c);
      w.stored(c);
    };
    // After a failure, with nothing in flight: the cursor is stored, the
    // acked rows above it deleted by id, and reads start again from it.
    auto settle = [&] {
      if (!w.failed() || w.inFlight() > 0) return;
      store();
      const std::vector<std::int64_t> gone = w.stranded();
      for (std::int64_t id : gone) {
        ASSERT_TRUE(acked.count(id)) << "row " << id << " deleted without its ack";
        ASSERT_EQ(outbox.erase(id), 1u);
      }
      w.removed(gone);
      EXPECT_TRUE(w.rewind());
    };
    for (int step = 0; step < 400; ++step) {
      if (next_id <= 300 && rng() % 2 == 0) outbox.insert(next_id++);
      if (w.mayRead(batch)) read();
      for (int k = static_cast<int>(rng() % 4); k > 0 && !flight.empty(); --k) {
        const std::size_t i = rng() % flight.size();
        const std::int64_t id = flight[i];
        flight.erase(flight.begin() + static_cast<std::ptrdiff_t>(i));
        const bool ok = rng() % 10 != 0;
        if (ok) acked.insert(id);
        EXPECT_TRUE(w.report(id, ok));
      }
      if (rng() % 3 == 0 && rng() % 5 != 0) store();  // one in five stores fails
      settle();
      if (rng() % 50 == 0) {  // a crash: what is in flight is lost, the rest starts from the stored cursor
        std::size_t repeated = 0;
        for (std::int64_t id : outbox)
          repeated += id > stored && (acked.count(id) || std::count(flight.begin(), flight.end(), id));
        EXPECT_LE(repeated, std::max(limit, batch)) << "a crash repeats more than the window";
        flight.clear();
        w.restart(stored);
      }
    }
    // Drain: go round until every row is acknowledged and covered.
    while (next_id <= 300) outbox.insert(next_id++);
    for (int round = 0; round < 10000 && !(w.settled() && w.after() >= *outbox.rbegin()); ++round) {
      if (w.mayRead(batch)) read();
      for (std::int64_t id : flight) {
        acked.insert(id);
        w.report(id, true);
      }
      flight.clear();
      store();
      settle();
    }
    EXPECT_EQ(stored, 300) << "run " << run;
    for (std::int64_t id : outbox) EXPECT_TRUE(acked.count(id)) << "run " << run << " row " << id;
    EXPECT_GE(produced_total, outbox.size());
  }
}

}  // namespace
}  // namespace pacer
