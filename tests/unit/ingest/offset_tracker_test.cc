#include "pacer/offset_tracker.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace pacer {
namespace {

TEST(PartitionOffsetTracker, NothingIsCommittableBeforeTheFirstMessage) {
  PartitionOffsetTracker t;
  EXPECT_EQ(t.committable(), std::nullopt);
  EXPECT_EQ(t.lastRegistered(), std::nullopt);
  EXPECT_FALSE(t.finish(0));
}

TEST(PartitionOffsetTracker, AnUnfinishedFirstMessageHoldsTheCommitAtItsOffset) {
  PartitionOffsetTracker t;
  ASSERT_TRUE(t.add(7));
  EXPECT_EQ(t.committable(), 7);
  EXPECT_EQ(t.unfinished(), 1u);
}

TEST(PartitionOffsetTracker, FinishingInOrderCommitsOnePastTheLast) {
  PartitionOffsetTracker t;
  for (std::int64_t o = 0; o < 5; ++o) ASSERT_TRUE(t.add(o));
  for (std::int64_t o = 0; o < 5; ++o) {
    ASSERT_TRUE(t.finish(o));
    EXPECT_EQ(t.committable(), o + 1);
  }
  EXPECT_EQ(t.outstanding(), 0u);
  EXPECT_EQ(t.unfinished(), 0u);
}

TEST(PartitionOffsetTracker, AHoleHoldsTheCommitUntilItIsFinished) {
  PartitionOffsetTracker t;
  for (std::int64_t o = 10; o < 15; ++o) ASSERT_TRUE(t.add(o));
  ASSERT_TRUE(t.finish(11));
  ASSERT_TRUE(t.finish(12));
  ASSERT_TRUE(t.finish(14));
  EXPECT_EQ(t.committable(), 10);
  EXPECT_EQ(t.outstanding(), 5u);
  ASSERT_TRUE(t.finish(10));
  EXPECT_EQ(t.committable(), 13);  // 10..12 done, 13 is the next hole
  EXPECT_EQ(t.outstanding(), 2u);
  ASSERT_TRUE(t.finish(13));
  EXPECT_EQ(t.committable(), 15);
}

TEST(PartitionOffsetTracker, GapsInOffsetsDoNotHoldTheCommit) {
  PartitionOffsetTracker t;
  ASSERT_TRUE(t.add(5));
  ASSERT_TRUE(t.add(8));  // 6 and 7: a transaction marker, a compacted record
  ASSERT_TRUE(t.add(20));
  ASSERT_TRUE(t.finish(5));
  EXPECT_EQ(t.committable(), 8);
  ASSERT_TRUE(t.finish(20));
  EXPECT_EQ(t.committable(), 8);
  ASSERT_TRUE(t.finish(8));
  EXPECT_EQ(t.committable(), 21);
}

TEST(PartitionOffsetTracker, FinishingAGapOrAnUnknownOffsetIsRefused) {
  PartitionOffsetTracker t;
  ASSERT_TRUE(t.add(5));
  ASSERT_TRUE(t.add(8));
  ASSERT_TRUE(t.add(9));
  EXPECT_FALSE(t.finish(6));
  EXPECT_FALSE(t.finish(7));
  EXPECT_FALSE(t.finish(4));
  EXPECT_FALSE(t.finish(10));
  EXPECT_FALSE(t.finish(-1));
  EXPECT_EQ(t.unfinished(), 3u);
  EXPECT_EQ(t.committable(), 5);
}

TEST(PartitionOffsetTracker, FinishingTwiceIsRefused) {
  PartitionOffsetTracker t;
  ASSERT_TRUE(t.add(0));
  ASSERT_TRUE(t.add(1));
  ASSERT_TRUE(t.finish(1));
  EXPECT_FALSE(t.finish(1));  // still held above the hole at 0
  ASSERT_TRUE(t.finish(0));
  EXPECT_FALSE(t.finish(0));  // already released
  EXPECT_EQ(t.committable(), 2);
}

TEST(PartitionOffsetTracker, OffsetsThatDoNotIncreaseAreRefused) {
  PartitionOffsetTracker t;
  ASSERT_TRUE(t.add(3));
  EXPECT_FALSE(t.add(3));
  EXPECT_FALSE(t.add(2));
  EXPECT_FALSE(PartitionOffsetTracker().add(-1));
  ASSERT_TRUE(t.finish(3));
  EXPECT_FALSE(t.add(3));  // also after it was released
  EXPECT_EQ(t.committable(), 4);
}

TEST(PartitionOffsetTracker, ResetForgetsEverything) {
  PartitionOffsetTracker t;
  ASSERT_TRUE(t.add(100));
  ASSERT_TRUE(t.add(101));
  t.reset();
  EXPECT_EQ(t.committable(), std::nullopt);
  EXPECT_FALSE(t.finish(100));
  EXPECT_EQ(t.unfinished(), 0u);
  ASSERT_TRUE(t.add(50));  // a new owner may start lower
  EXPECT_EQ(t.committable(), 50);
}

TEST(PartitionOffsetTracker, MemoryFollowsTheOutstandingSpanNotTheTotal) {
  // A million messages through a window of 64 outstanding ones: the ring
  // never holds more than the window.
  PartitionOffsetTracker t;
  std::size_t most = 0;
  for (std::int64_t o = 0; o < 1'000'000; ++o) {
    ASSERT_TRUE(t.add(o));
    most = std::max(most, t.outstanding());
    if (o >= 63) {
      ASSERT_TRUE(t.finish(o - 63));
    }
  }
  EXPECT_EQ(most, 64u);
  EXPECT_EQ(t.capacity(), 64u);
  EXPECT_EQ(t.committable(), 1'000'000 - 63);
}

TEST(PartitionOffsetTracker, TheRingKeepsOrderWhenItGrowsWhileWrapped) {
  PartitionOffsetTracker t;
  // Fill 16, release 10 so the head moves, then grow past the first capacity.
  for (std::int64_t o = 0; o < 16; ++o) ASSERT_TRUE(t.add(o));
  for (std::int64_t o = 0; o < 10; ++o) ASSERT_TRUE(t.finish(o));
  for (std::int64_t o = 16; o < 40; ++o) ASSERT_TRUE(t.add(o));
  for (std::int64_t o = 39; o >= 11; --o) ASSERT_TRUE(t.finish(o));
  EXPECT_EQ(t.committable(), 10);
  ASSERT_TRUE(t.finish(10));
  EXPECT_EQ(t.committable(), 40);
}

TEST(OffsetTracker, PartitionsAreIndependent) {
  OffsetTracker t;
  ASSERT_TRUE(t.add("a", 0, 0));
  ASSERT_TRUE(t.add("a", 0, 1));
  ASSERT_TRUE(t.add("a", 1, 0));
  ASSERT_TRUE(t.add("b", 0, 0));
  ASSERT_TRUE(t.finish("a", 0, 1));
  ASSERT_TRUE(t.finish("a", 1, 0));
  EXPECT_EQ(t.committable("a", 0), 0);
  EXPECT_EQ(t.committable("a", 1), 1);
  EXPECT_EQ(t.committable("b", 0), 0);
  EXPECT_EQ(t.committable("b", 1), std::nullopt);
  EXPECT_FALSE(t.finish("b", 0, 1));
  EXPECT_FALSE(t.finish("c", 0, 0));
  EXPECT_EQ(t.unfinished(), 2u);
  EXPECT_EQ(t.partitionCount(), 3u);
}

TEST(OffsetTracker, CommitsListsEveryPartitionWithAnOffsetInOrder) {
  OffsetTracker t;
  ASSERT_TRUE(t.add("b", 0, 4));
  ASSERT_TRUE(t.add("a", 2, 9));
  ASSERT_TRUE(t.finish("a", 2, 9));
  ASSERT_TRUE(t.add("a", 1, 3));
  const std::vector<PartitionCommit> c = t.commits();
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].partition, (TopicPartition{"a", 1}));
  EXPECT_EQ(c[0].offset, 3);
  EXPECT_EQ(c[1].partition, (TopicPartition{"a", 2}));
  EXPECT_EQ(c[1].offset, 10);
  EXPECT_EQ(c[2].partition, (TopicPartition{"b", 0}));
  EXPECT_EQ(c[2].offset, 4);
}

TEST(OffsetTracker, RevokeDropsOnePartitionOnly) {
  OffsetTracker t;
  ASSERT_TRUE(t.add("a", 0, 5));
  ASSERT_TRUE(t.add("a", 1, 5));
  EXPECT_TRUE(t.revoke("a", 0));
  EXPECT_FALSE(t.revoke("a", 0));
  EXPECT_EQ(t.committable("a", 0), std::nullopt);
  EXPECT_FALSE(t.finish("a", 0, 5));  // a late finish of a revoked message
  EXPECT_EQ(t.committable("a", 1), 5);
  ASSERT_TRUE(t.add("a", 0, 2));  // reassigned, its new position is lower
  EXPECT_EQ(t.committable("a", 0), 2);
  t.revokeAll();
  EXPECT_EQ(t.partitionCount(), 0u);
  EXPECT_TRUE(t.commits().empty());
}

// The reference: every registered offset and whether it finished; the commit
// is the lowest unfinished offset, or one past the highest.
class ReferenceModel {
 public:
  bool add(std::int64_t o) {
    if (o < 0 || (!state_.empty() && o <= state_.rbegin()->first)) return false;
    state_[o] = false;
    return true;
  }
  bool finish(std::int64_t o) {
    const auto it = state_.find(o);
    if (it == state_.end() || it->second) return false;
    it->second = true;
    return true;
  }
  std::optional<std::int64_t> committable() const {
    if (state_.empty()) return std::nullopt;
    for (const auto& [o, done] : state_)
      if (!done) return o;
    return state_.rbegin()->first + 1;
  }
  std::vector<std::int64_t> unfinished() const {
    std::vector<std::int64_t> out;
    for (const auto& [o, done] : state_)
      if (!done) out.push_back(o);
    return out;
  }
  std::int64_t last() const { return state_.empty() ? -1 : state_.rbegin()->first; }
  void reset() { state_.clear(); }

 private:
  std::map<std::int64_t, bool> state_;
};

TEST(OffsetTrackerProperty, MatchesTheReferenceOverRandomOperations) {
  constexpr int kPartitions = 3;
  for (std::uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 rng(seed);
    OffsetTracker tracker;
    std::vector<ReferenceModel> model(kPartitions);
    std::vector<std::int64_t> next(kPartitions, 0);  // where each partition reads next
    for (int step = 0; step < 5000; ++step) {
      const int p = static_cast<int>(rng() % kPartitions);
      const std::string topic = "t";
      const unsigned op = static_cast<unsigned>(rng() % 100);
      if (op < 45) {
        // Read the next message, sometimes after a gap.
        const std::int64_t o = next[p] + ((rng() % 5 == 0) ? static_cast<std::int64_t>(rng() % 6) : 0);
        next[p] = o + 1;
        ASSERT_EQ(tracker.add(topic, p, o), model[p].add(o)) << "seed " << seed << " step " << step;
      } else if (op < 85) {
        // Finish a random unfinished message.
        const std::vector<std::int64_t> open = model[p].unfinished();
        if (open.empty()) continue;
        const std::int64_t o = open[rng() % open.size()];
        ASSERT_TRUE(tracker.finish(topic, p, o)) << "seed " << seed << " step " << step;
        ASSERT_TRUE(model[p].finish(o));
      } else if (op < 97) {
        // Something the tracker must refuse or accept exactly like the model:
        // a random offset near the window (gaps, finished, unknown), or an
        // add that does not increase.
        const std::int64_t o = model[p].last() - static_cast<std::int64_t>(rng() % 12) + 2;
        if (rng() % 2 == 0) {
          ASSERT_EQ(tracker.finish(topic, p, o), model[p].finish(o)) << "seed " << seed << " step " << step;
        } else if (o <= model[p].last()) {
          ASSERT_FALSE(tracker.add(topic, p, o));
        }
      } else {
        // Revoke, and later resume from the committed offset (or earlier).
        const std::optional<std::int64_t> c = model[p].committable();
        tracker.revoke(topic, p);
        model[p].reset();
        next[p] = c ? std::max<std::int64_t>(0, *c - static_cast<std::int64_t>(rng() % 3)) : 0;
      }
      ASSERT_EQ(tracker.committable(topic, p), model[p].committable()) << "seed " << seed << " step " << step;
    }
    std::size_t unfinished = 0;
    for (int p = 0; p < kPartitions; ++p) {
      EXPECT_EQ(tracker.committable("t", p), model[p].committable());
      unfinished += model[p].unfinished().size();
    }
    EXPECT_EQ(tracker.unfinished(), unfinished);
  }
}

TEST(OffsetTrackerProperty, TheCommitNeverPassesAnUnfinishedMessageAndNeverMovesBack) {
  std::mt19937_64 rng(42);
  PartitionOffsetTracker t;
  std::vector<std::int64_t> open;
  std::int64_t next = 0;
  std::int64_t previous = 0;
  for (int step = 0; step < 20000; ++step) {
    if (open.empty() || rng() % 2 == 0) {
      next += 1 + static_cast<std::int64_t>(rng() % 3);
      ASSERT_TRUE(t.add(next));
      open.push_back(next);
    } else {
      const std::size_t i = rng() % open.size();
      ASSERT_TRUE(t.finish(open[i]));
      open.erase(open.begin() + static_cast<std::ptrdiff_t>(i));
    }
    const std::int64_t c = *t.committable();
    for (const std::int64_t o : open) ASSERT_GE(o, c);
    ASSERT_EQ(c, open.empty() ? next + 1 : open.front());
    ASSERT_GE(c, previous);
    previous = c;
  }
}

}  // namespace
}  // namespace pacer
