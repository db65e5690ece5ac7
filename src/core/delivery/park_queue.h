// The messages waiting to be parked: one first-in-first-out queue per
// campaign, taken off round-robin. A batch gives every campaign with messages
// waiting an equal share of it (what one leaves goes to the others), so a
// campaign with a few hundred waiting goes out in the next batch, not behind
// another campaign's hundred thousand. Within a campaign the order is kept.
// Private to src/core/delivery.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <unordered_map>
#include <utility>
#include <vector>

namespace pacer::delivery_detail {

template <typename Key, typename Item>
class ParkQueue {
 public:
  using Batch = std::deque<std::pair<Key, Item>>;

  bool empty() const noexcept { return size_ == 0; }
  std::size_t size() const noexcept { return size_; }

  void push(Key key, Item item) {
    laneOf(key).push_back(std::move(item));
    ++size_;
  }

  // `batch` back in front of what waits (a batch that failed), each
  // campaign's in the batch's order; `batch` is left empty.
  void pushFront(Batch& batch) {
    for (auto it = batch.rbegin(); it != batch.rend(); ++it) {
      laneOf(it->first).push_front(std::move(it->second));
      ++size_;
    }
    batch.clear();
  }

  // At most `n`, shared equally among the campaigns with messages waiting
  // for which `skip(key)` is false, each campaign's oldest first. The
  // campaign served first moves on by one each call.
  template <typename Skip>
  Batch take(std::size_t n, Skip&& skip) {
    Batch out;
    std::vector<Lane*> from;
    for (std::size_t i = 0; i < lanes_.size(); ++i) {
      Lane& l = lanes_[(first_ + i) % lanes_.size()];
      if (!l.items.empty() && !skip(l.key)) from.push_back(&l);
    }
    if (!lanes_.empty()) first_ = (first_ + 1) % lanes_.size();
    while (out.size() < n && !from.empty()) {
      const std::size_t share = std::max<std::size_t>(1, (n - out.size()) / from.size());
      for (Lane* l : from) {
        for (std::size_t k = 0; k < share && !l->items.empty() && out.size() < n; ++k) {
          out.emplace_back(l->key, std::move(l->items.front()));
          l->items.pop_front();
          --size_;
        }
      }
      std::erase_if(from, [](const Lane* l) { return l->items.empty(); });
    }
    prune();
    return out;
  }
  Batch takeAll() {
    return take(SIZE_MAX, [](const Key&) { return false; });
  }

  // Removes what `drop(key, item)` says; the number removed.
  template <typename Drop>
  std::size_t removeIf(Drop&& drop) {
    std::size_t n = 0;
    for (Lane& l : lanes_) n += std::erase_if(l.items, [&](Item& item) { return drop(l.key, item); });
    size_ -= n;
    prune();
    return n;
  }

 private:
  struct Lane {
    Key key;
    std::deque<Item> items;
  };

  std::deque<Item>& laneOf(const Key& key) {
    const auto [it, added] = index_.try_emplace(key, lanes_.size());
    if (added) lanes_.push_back(Lane{key, {}});
    return lanes_[it->second].items;
  }

  // Campaigns with nothing waiting leave the rotation.
  void prune() {
    if (std::none_of(lanes_.begin(), lanes_.end(), [](const Lane& l) { return l.items.empty(); })) return;
    std::erase_if(lanes_, [](const Lane& l) { return l.items.empty(); });
    index_.clear();
    for (std::size_t i = 0; i < lanes_.size(); ++i) index_.emplace(lanes_[i].key, i);
    if (first_ >= lanes_.size()) first_ = 0;
  }

  std::vector<Lane> lanes_;
  std::unordered_map<Key, std::size_t> index_;
  std::size_t first_ = 0;
  std::size_t size_ = 0;
};

}  // namespace pacer::delivery_detail
