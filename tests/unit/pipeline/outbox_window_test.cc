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
  w.report(17, true);
  EXPECT_FALSE(w.mayRead(1));  // acknowledged, not yet deleted: a crash would publish it again
  EXPECT_EQ(w.takeAcknowledged(), (std::vector<std::int64_t>{17}));
  EXPECT_TRUE(w.mayRead(1));
  EXPECT_FALSE(w.mayRead(2));
}

TEST(OutboxWindowTest, TheFirstBatchGoesEvenWhenLargerThanTheLimit) {
  OutboxWindow w(10);
  EXPECT_TRUE(w.mayRead(500));
  w.produced(range(1, 500));
  EXPECT_FALSE(w.mayRead(1));
}

TEST(OutboxWindowTest, AcksOutOfOrderAcrossBatchesAreDeletedAscendingAndOnlyOnce) {
  OutboxWindow w(100);
  w.produced(range(1, 5));
  w.produced(range(6, 10));
  for (std::int64_t id : {9, 2, 10, 6}) EXPECT_TRUE(w.report(id, true));
  EXPECT_EQ(w.takeAcknowledged(), (std::vector<std::int64_t>{2, 6, 9, 10}));
  EXPECT_TRUE(w.takeAcknowledged().empty());  // taken once
  EXPECT_FALSE(w.report(9, true));            // a repeated report
  EXPECT_FALSE(w.report(42, true));           // never produced
  EXPECT_EQ(w.inFlight(), 6u);
  EXPECT_FALSE(w.settled());
}

TEST(OutboxWindowTest, AFailedReportIsNeverDeletedAndIsReadAgainAfterTheRewind) {
  OutboxWindow w(100);
  w.produced(range(1, 4));
  w.produced(range(5, 8));
  EXPECT_TRUE(w.report(3, false));
  EXPECT_TRUE(w.failed());
  EXPECT_FALSE(w.report(3, true));  // a late ack does not turn the failure into a delete
  EXPECT_FALSE(w.mayRead(1));       // no new rows until the failed one is read again
  for (std::int64_t id : {8, 1, 2, 4, 7, 6, 5}) w.report(id, true);
  EXPECT_FALSE(w.rewind());  // acknowledged rows still wait for their delete
  const std::vector<std::int64_t> gone = w.takeAcknowledged();
  EXPECT_EQ(gone, (std::vector<std::int64_t>{1, 2, 4, 5, 6, 7, 8}));
  EXPECT_TRUE(w.settled());
  EXPECT_TRUE(w.rewind());
  EXPECT_EQ(w.after(), 0);  // row 3 is the oldest left: the next read takes it first
  EXPECT_FALSE(w.failed());
  EXPECT_TRUE(w.mayRead(4));
}

TEST(OutboxWindowTest, AFailedDeleteGivesTheIdsBackSoNoRewindCanDuplicateThem) {
  OutboxWindow w(100);
  w.produced(range(1, 3));
  for (std::int64_t id : {1, 2, 3}) w.report(id, true);
  const std::vector<std::int64_t> ids = w.takeAcknowledged();
  EXPECT_TRUE(w.settled());
  w.giveBack(ids);  // PostgreSQL was down: the rows are still there
  EXPECT_FALSE(w.settled());
  EXPECT_FALSE(w.rewind());
  EXPECT_EQ(w.after(), 3);
  EXPECT_EQ(w.takeAcknowledged(), ids);
}

// A simulated outbox and broker: rows appear (sometimes committing out of id
// order), batches are read after the cursor, reports arrive in random order
// and some fail, deletes happen at random times and sometimes fail. Nothing
// acknowledged is left undeleted for long, no row is ever deleted without its
// ack, a row is never in flight twice, and at the end every row was
// acknowledged and deleted.
TEST(OutboxWindowTest, RandomRunsPublishEveryRowAndDeleteOnlyAcknowledgedOnes) {
  std::mt19937 rng(26);
  for (int run = 0; run < 200; ++run) {
    OutboxWindow w(1 + rng() % 40);
    const std::size_t batch = 1 + rng() % 15;
    std::set<std::int64_t> outbox;      // committed rows
    std::vector<std::int64_t> pending;  // ids taken, commit not yet visible
    std::deque<std::int64_t> flight;    // produced, no report yet
    std::set<std::int64_t> acked;       // the broker has them
    std::map<std::int64_t, int> produced_count;
    std::int64_t next_id = 1;
    for (int step = 0; step < 400; ++step) {
      if (next_id <= 300 && rng() % 2 == 0) pending.push_back(next_id++);
      if (!pending.empty() && rng() % 3 == 0) {  // commit one, not always the oldest
        const std::size_t k = rng() % pending.size();
        outbox.insert(pending[k]);
        pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(k));
      }
      if (w.mayRead(batch)) {
        std::vector<std::int64_t> read;
        for (auto it = outbox.upper_bound(w.after()); it != outbox.end() && read.size() < batch; ++it)
          read.push_back(*it);
        for (std::int64_t id : read) {
          ASSERT_EQ(std::count(flight.begin(), flight.end(), id), 0) << "row " << id << " in flight twice";
          flight.push_back(id);
          ++produced_count[id];
        }
        w.produced(read);
      }
      for (int k = static_cast<int>(rng() % 4); k > 0 && !flight.empty(); --k) {
        const std::size_t i = rng() % flight.size();
        const std::int64_t id = flight[i];
        flight.erase(flight.begin() + static_cast<std::ptrdiff_t>(i));
        const bool ok = rng() % 10 != 0;
        if (ok) acked.insert(id);
        EXPECT_TRUE(w.report(id, ok));
      }
      if (rng() % 3 == 0) {
        std::vector<std::int64_t> del = w.takeAcknowledged();
        if (rng() % 5 == 0) {
          w.giveBack(del);  // the delete failed
        } else {
          for (std::int64_t id : del) {
            ASSERT_TRUE(acked.count(id)) << "row " << id << " deleted without its ack";
            ASSERT_EQ(outbox.erase(id), 1u);
          }
        }
      }
      if (w.settled() && (w.failed() || rng() % 4 == 0)) {
        EXPECT_TRUE(w.rewind());
      }
    }
    // Drain: commit the rest, then go round until the outbox is empty.
    for (std::int64_t id : pending) outbox.insert(id);
    for (int round = 0; round < 10000 && !outbox.empty(); ++round) {
      if (w.mayRead(batch)) {
        std::vector<std::int64_t> read;
        for (auto it = outbox.upper_bound(w.after()); it != outbox.end() && read.size() < batch; ++it)
          read.push_back(*it);
        w.produced(read);
        for (std::int64_t id : read) {
          ++produced_count[id];
          EXPECT_TRUE(w.report(id, true));
        }
      }
      for (std::int64_t id : flight) w.report(id, true);
      flight.clear();
      for (std::int64_t id : w.takeAcknowledged()) outbox.erase(id);
      if (w.settled()) w.rewind();
    }
    EXPECT_TRUE(outbox.empty()) << "run " << run;
    EXPECT_EQ(produced_count.size(), static_cast<std::size_t>(next_id - 1)) << "run " << run;
  }
}

}  // namespace
}  // namespace pacer
