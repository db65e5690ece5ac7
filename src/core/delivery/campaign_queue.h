// A campaign's queued messages, and the scheduler's backlog count of them,
// kept equal by construction: whatever enters the queue is added to the
// campaign's backlog, whatever leaves it without a grant is taken out, and
// a grant (which the scheduler has already counted out) is taken with
// takeGranted(), its unused part handed back with unused(). No call site
// keeps the count in step by hand. Private to src/core/delivery.
#pragma once

#include <cstdint>
#include <deque>
#include <utility>

#include "pacer/scheduler.h"

namespace pacer::delivery_detail {

template <typename Item>
class CampaignQueue {
 public:
  // The scheduler (and the campaign's id there) that counts this queue; what
  // is queued already becomes that campaign's backlog. Called after each
  // registration (a campaign moved to another provider is registered again).
  void attach(Scheduler& scheduler, CampaignId id) {
    scheduler_ = &scheduler;
    id_ = id;
    if (!items_.empty()) scheduler_->addBacklog(id_, items_.size());
  }

  void push(Item item, bool at_front) {
    if (at_front)
      items_.push_front(std::move(item));
    else
      items_.push_back(std::move(item));
    scheduler_->addBacklog(id_, 1);
  }

  // The next message of a grant (the scheduler counted it out when it
  // granted it). The queue must not be empty.
  Item takeGranted() {
    Item item = std::move(items_.front());
    items_.pop_front();
    return item;
  }

  // `n` granted messages that were not taken (a sink that refused): still
  // queued, so counted again.
  void unused(std::uint64_t n) {
    if (n > 0) scheduler_->addBacklog(id_, n);
  }

  // Removes the messages `drop(item)` says to (it may move from the item),
  // without a grant; returns how many.
  template <typename Drop>
  std::size_t removeIf(Drop drop) {
    std::deque<Item> kept;
    std::size_t removed = 0;
    for (Item& item : items_) {
      if (drop(item))
        ++removed;
      else
        kept.push_back(std::move(item));
    }
    items_ = std::move(kept);
    scheduler_->dropBacklog(id_, removed);
    return removed;
  }

  std::size_t size() const noexcept { return items_.size(); }
  bool empty() const noexcept { return items_.empty(); }

 private:
  std::deque<Item> items_;
  Scheduler* scheduler_ = nullptr;
  CampaignId id_ = 0;
};

}  // namespace pacer::delivery_detail
