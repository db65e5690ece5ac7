// A campaign's queued messages, and the scheduler's backlog count of them,
// kept in step by construction. Backlog is in quota units (a message costs
// Item::cost units: 1, or an SMS's segments):
//
//   scheduler backlog = units queued - units prepaid
//
// A grant of n units (already counted out by the scheduler's tick) becomes
// prepaid; a message leaves the queue only when its whole cost is prepaid
// (never half an SMS), and a message the sink refused goes back paid. No
// call site keeps the count in step by hand. Private to src/core/delivery.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <utility>

#include "pacer/scheduler.h"

namespace pacer::delivery_detail {

template <typename Item>
class CampaignQueue {
 public:
  // The scheduler (and the campaign's id there) that counts this queue; the
  // unpaid units queued become that campaign's backlog. Called after each
  // registration (a campaign moved to another provider is registered again).
  void attach(Scheduler& scheduler, CampaignId id) {
    scheduler_ = &scheduler;
    id_ = id;
    if (units_ > prepaid_) scheduler_->addBacklog(id_, units_ - prepaid_);
  }

  void push(Item item, bool at_front) {
    const std::uint64_t cost = item.cost;
    if (at_front)
      items_.push_front(std::move(item));
    else
      items_.push_back(std::move(item));
    units_ += cost;
    scheduler_->addBacklog(id_, cost);
  }

  // What is prepaid is given up (the campaign moves to another provider,
  // whose quota must pay for what it carries); call attach() next.
  void forfeit() noexcept { prepaid_ = 0; }

  // The scheduler granted `units` of this campaign's backlog.
  void grant(std::uint64_t units) noexcept { prepaid_ += units; }
  // The next message's whole cost is paid.
  bool affordable() const noexcept { return !items_.empty() && items_.front().cost <= prepaid_; }
  // The next message, paid for (affordable() must be true).
  Item take() {
    Item item = std::move(items_.front());
    items_.pop_front();
    units_ -= item.cost;
    prepaid_ -= item.cost;
    return item;
  }
  // The next message leaves without spending what is prepaid (it expired):
  // the grant stays for the messages behind it, up to what they cost; the
  // rest of it is given up (under the rate, never over).
  Item dropFront() {
    Item item = std::move(items_.front());
    items_.pop_front();
    const std::uint64_t unpaid_before = units_ - prepaid_;
    units_ -= item.cost;
    prepaid_ = std::min(prepaid_, units_);
    scheduler_->dropBacklog(id_, unpaid_before - (units_ - prepaid_));
    return item;
  }
  const Item& front() const { return items_.front(); }
  // True when `pred(item)` holds for any queued message. Reads only.
  template <typename Pred>
  bool any(Pred pred) const {
    return std::any_of(items_.begin(), items_.end(), [&](const Item& item) { return pred(item); });
  }

  // A message taken and not sent after all (the sink refused it): first in
  // line again, still paid.
  void putBack(Item item) {
    units_ += item.cost;
    prepaid_ += item.cost;
    items_.push_front(std::move(item));
  }

  // Removes the messages `drop(item)` says to (it may move from the item),
  // without a grant; returns how many. Prepaid units beyond what is left
  // are given up (under the rate, never over).
  template <typename Drop>
  std::size_t removeIf(Drop drop) {
    std::deque<Item> kept;
    std::size_t removed = 0;
    std::uint64_t removed_units = 0;
    for (Item& item : items_) {
      const std::uint64_t cost = item.cost;
      if (drop(item)) {
        ++removed;
        removed_units += cost;
      } else {
        kept.push_back(std::move(item));
      }
    }
    items_ = std::move(kept);
    units_ -= removed_units;
    scheduler_->dropBacklog(id_, removed_units);
    prepaid_ = std::min(prepaid_, units_);
    return removed;
  }

  std::size_t size() const noexcept { return items_.size(); }
  bool empty() const noexcept { return items_.empty(); }
  std::uint64_t units() const noexcept { return units_; }
  std::uint64_t prepaid() const noexcept { return prepaid_; }

 private:
  std::deque<Item> items_;
  std::uint64_t units_ = 0;    // the cost of everything queued
  std::uint64_t prepaid_ = 0;  // granted, not yet spent on a message
  Scheduler* scheduler_ = nullptr;
  CampaignId id_ = 0;
};

}  // namespace pacer::delivery_detail
