#include "pacer/offset_tracker.h"

#include <algorithm>

namespace pacer {

bool PartitionOffsetTracker::add(std::int64_t offset) {
  if (offset < 0 || offset <= last_) return false;
  if (size_ == ring_.size()) {
    // Grow by doubling, unrolling the ring so the oldest entry is at 0.
    std::vector<Entry> bigger(ring_.empty() ? 16 : ring_.size() * 2);
    for (std::size_t i = 0; i < size_; ++i) bigger[i] = at(i);
    ring_.swap(bigger);
    head_ = 0;
  }
  at(size_) = Entry{offset, false};
  ++size_;
  ++unfinished_;
  last_ = offset;
  return true;
}

bool PartitionOffsetTracker::finish(std::int64_t offset) {
  if (size_ == 0) return false;
  const std::int64_t front = at(0).offset;
  if (offset < front || offset > last_) return false;
  // Without gaps the message sits at index offset - front; with gaps it sits
  // at a lower index, found by binary search below it.
  std::size_t hi = static_cast<std::size_t>(std::min<std::int64_t>(offset - front, size_ - 1));
  std::size_t index = hi;
  if (at(hi).offset != offset) {
    std::size_t lo = 0;  // invariant: at(lo).offset <= offset < at(hi).offset
    while (hi - lo > 1) {
      const std::size_t mid = lo + (hi - lo) / 2;
      (at(mid).offset <= offset ? lo : hi) = mid;
    }
    if (at(lo).offset != offset) return false;  // a gap
    index = lo;
  }
  Entry& e = at(index);
  if (e.finished) return false;
  e.finished = true;
  --unfinished_;
  if (index == 0) popFinishedPrefix();
  return true;
}

void PartitionOffsetTracker::popFinishedPrefix() {
  while (size_ > 0 && at(0).finished) {
    head_ = (head_ + 1) & (ring_.size() - 1);
    --size_;
  }
}

std::optional<std::int64_t> PartitionOffsetTracker::committable() const {
  if (last_ < 0) return std::nullopt;
  return size_ == 0 ? last_ + 1 : at(0).offset;
}

std::optional<std::int64_t> PartitionOffsetTracker::lastRegistered() const {
  if (last_ < 0) return std::nullopt;
  return last_;
}

void PartitionOffsetTracker::reset() { *this = PartitionOffsetTracker(); }

bool OffsetTracker::add(std::string_view topic, std::int32_t partition, std::int64_t offset) {
  auto it = partitions_.find(KeyView{topic, partition});
  if (it == partitions_.end())
    it = partitions_.emplace(Key{std::string(topic), partition}, PartitionOffsetTracker{}).first;
  return it->second.add(offset);
}

bool OffsetTracker::finish(std::string_view topic, std::int32_t partition, std::int64_t offset) {
  const auto it = partitions_.find(KeyView{topic, partition});
  return it != partitions_.end() && it->second.finish(offset);
}

std::optional<std::int64_t> OffsetTracker::committable(std::string_view topic, std::int32_t partition) const {
  const auto it = partitions_.find(KeyView{topic, partition});
  if (it == partitions_.end()) return std::nullopt;
  return it->second.committable();
}

std::vector<PartitionCommit> OffsetTracker::commits() const {
  std::vector<PartitionCommit> out;
  out.reserve(partitions_.size());
  for (const auto& [key, tracker] : partitions_)
    if (const auto offset = tracker.committable()) out.push_back({TopicPartition{key.first, key.second}, *offset});
  return out;
}

bool OffsetTracker::revoke(std::string_view topic, std::int32_t partition) {
  const auto it = partitions_.find(KeyView{topic, partition});
  if (it == partitions_.end()) return false;
  partitions_.erase(it);
  return true;
}

std::size_t OffsetTracker::unfinished() const {
  std::size_t n = 0;
  for (const auto& [key, tracker] : partitions_) n += tracker.unfinished();
  return n;
}

}  // namespace pacer
