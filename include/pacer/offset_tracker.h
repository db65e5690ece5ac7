// Which Kafka offset may be committed when messages finish out of order.
//
// A partition's messages are registered as they are read (offsets increasing,
// possibly with gaps: compaction, transaction markers) and marked finished in
// any order (campaigns run at different rates). The committable offset is
// Kafka's "next offset to read": the lowest registered offset that is not yet
// finished, or one past the highest registered offset when all are finished.
// Offsets in a gap are not messages and never hold the commit back.
//
// Pure: no I/O, no clock, no locks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pacer {

// The outstanding (registered, not yet committable) messages of one partition.
// Memory: 16 bytes per message from the lowest unfinished one to the newest,
// in a ring that grows by doubling and is released by reset().
// add() and finish() are O(1) amortised (finish of an offset after a gap
// falls back to a binary search over the outstanding messages).
// Thread-safety: not thread-safe; one owner thread (the ingest loop).
class PartitionOffsetTracker {
 public:
  PartitionOffsetTracker() = default;

  // Registers the message read at `offset` (>= 0). Offsets must increase:
  // returns false and changes nothing when `offset` is not above the last
  // registered one (a seek or a replay needs reset() first).
  bool add(std::int64_t offset);

  // Marks the message at `offset` finished. Returns false, changing nothing,
  // when no outstanding message has that offset (never registered, a gap,
  // already finished, or dropped by reset()).
  bool finish(std::int64_t offset);

  // The offset to commit (next offset to read): every registered message
  // below it is finished. nullopt until a message is registered.
  std::optional<std::int64_t> committable() const;

  // Registered messages not yet finished.
  std::size_t unfinished() const { return unfinished_; }
  // Messages held in memory (unfinished plus finished ones above a hole).
  std::size_t outstanding() const { return size_; }
  // Entries the ring has room for (its memory is 16 bytes per entry).
  std::size_t capacity() const { return ring_.size(); }
  // The last registered offset, or nullopt.
  std::optional<std::int64_t> lastRegistered() const;

  // Forgets everything (the partition was revoked or seeked) and frees memory.
  void reset();

 private:
  struct Entry {
    std::int64_t offset;
    bool finished;
  };
  Entry& at(std::size_t i) { return ring_[(head_ + i) & (ring_.size() - 1)]; }
  const Entry& at(std::size_t i) const { return ring_[(head_ + i) & (ring_.size() - 1)]; }
  void popFinishedPrefix();

  std::vector<Entry> ring_;  // capacity is 0 or a power of two
  std::size_t head_ = 0;
  std::size_t size_ = 0;
  std::size_t unfinished_ = 0;
  std::int64_t last_ = -1;  // last registered offset, -1 before the first
};

// A topic's partition.
struct TopicPartition {
  std::string topic;
  std::int32_t partition = 0;
  friend auto operator<=>(const TopicPartition&, const TopicPartition&) = default;
};

// One partition's offset to commit.
struct PartitionCommit {
  TopicPartition partition;
  std::int64_t offset = 0;  // next offset to read
};

// The per-partition trackers of one consumer. Looking a partition up costs a
// map search (no allocation); a partition is created by its first add().
// Thread-safety: not thread-safe; one owner thread (the ingest loop).
class OffsetTracker {
 public:
  // PartitionOffsetTracker::add for `topic`/`partition`.
  bool add(std::string_view topic, std::int32_t partition, std::int64_t offset);
  // PartitionOffsetTracker::finish; false also for an unknown (revoked) partition.
  bool finish(std::string_view topic, std::int32_t partition, std::int64_t offset);
  // The offset to commit for one partition; nullopt when unknown or empty.
  std::optional<std::int64_t> committable(std::string_view topic, std::int32_t partition) const;
  // The offset to commit for every partition that has one, in partition order.
  std::vector<PartitionCommit> commits() const;
  // Drops a partition's state (revoked: its new owner reads the unfinished
  // messages again). Returns whether the partition was known.
  bool revoke(std::string_view topic, std::int32_t partition);
  // Drops every partition (eager rebalance, shutdown).
  void revokeAll() { partitions_.clear(); }

  // Unfinished messages over all partitions (for the memory bound).
  std::size_t unfinished() const;
  std::size_t partitionCount() const { return partitions_.size(); }

 private:
  // Ordered by (topic, partition); transparent, so a lookup by string_view
  // builds no std::string.
  using Key = std::pair<std::string, std::int32_t>;
  using KeyView = std::pair<std::string_view, std::int32_t>;
  struct KeyLess {
    using is_transparent = void;
    static KeyView view(const Key& k) { return {k.first, k.second}; }
    static KeyView view(const KeyView& k) { return k; }
    template <class A, class B>
    bool operator()(const A& a, const B& b) const {
      return view(a) < view(b);
    }
  };
  using Map = std::map<Key, PartitionOffsetTracker, KeyLess>;
  Map partitions_;
};

}  // namespace pacer
