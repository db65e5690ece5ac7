// A WorkerCore's recipient rules (docs/recipient-rules.md): quiet hours in
// the recipient's zone and per-recipient frequency caps, the messages they
// hold back, and the batches in which they ask the cap store.
//
// A message's way: the worker's admit() -> holdForQuiet(): quiet? wait (in
// memory, or parked with a not_before) -> the worker's route() (parks the
// excess) -> toQueue(): a capped campaign's message waits in `unchecked`
// until checkCaps() asks the store, in one decide() per step for every
// campaign, about the few messages the next ticks can grant; only a cleared
// message joins the queue, which is the scheduler's backlog, so a suppressed
// message never spends a token.
//
// The gate reads no clock and does no I/O but the cap store's. What it needs
// of the worker it is given: the options, the wall clock, the worker's byte
// count and totals (kept in step as messages come and go here), and a Host
// that takes the messages it lets through, parks or ends. It is a template
// over the worker's campaign, of which it uses `rules` (a CampaignRules),
// `info`, `queue.size()`, `sched_paused` and `stats.deferred`, so that it
// depends on no more of the worker than those. Private to src/core/delivery;
// not thread-safe (the worker's thread).
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "pacer/worker.h"
#include "worker_item.h"

namespace pacer::delivery_detail {

// The two clocks as the loop last read them together
// (WorkerCore::setWallClock): the core takes wall(now) = wall + (now - mono).
struct WallClock {
  WallTime wall_base{};
  MonoTime mono_base{};
  WallTime wallAt(MonoTime t) const {
    return wall_base + std::chrono::duration_cast<std::chrono::milliseconds>(t - mono_base);
  }
  MonoTime monoAt(WallTime w) const { return mono_base + std::chrono::duration_cast<Nanos>(w - wall_base); }
};

// A campaign's rules, from its row (RulesGate::setRules), and the messages
// they hold back.
struct CampaignRules {
  std::optional<QuietWindow> quiet;  // its quiet hours; nullopt: none
  std::string quiet_error;           // quiet_hours that do not parse (rowProblem names it too)
  struct Cap {
    std::string scope;  // "campaign:<id>" or "class:<name>"
    FrequencyCapRule rule;
    CapPolicy policy;
  };
  std::vector<Cap> caps;  // 0 to 2
  // The list before the last change of the campaign's caps, and a count of
  // changes: a message counted under the old list gives back the right
  // scopes (older ones than that are left to expire: capping early, never late).
  std::vector<Cap> prev_caps;
  std::uint8_t caps_gen = 0;
  std::deque<Item> unchecked;             // capped campaigns: not yet asked (not the scheduler's backlog)
  MonoTime cap_retry_at{};                // after the cap store could not answer
  std::multimap<WallTime, Item> waiting;  // until their time (quiet hours, a deferred cap), in memory
  std::size_t quiet_waiting = 0;          // of `waiting`, for quiet hours
};

// UTC, "2026-11-25T10:00:00Z" (the time in a suppressed row's reason).
std::string isoTime(WallTime t);

template <typename Campaign>
class RulesGate {
 public:
  // What the gate hands back to the worker.
  class Host {
   public:
    virtual ~Host() = default;
    // The message ends here with a row of this status (rejected, suppressed).
    virtual void row(Campaign* c, Item& item, DeliveryStatus status, std::string reason) = 0;
    // Cleared (or not capped): into the campaign's queue, at the back.
    virtual void enqueue(Campaign* c, Item&& item) = 0;
    // Parked until `until` (only asked of a worker with parking).
    virtual void park(Campaign* c, Item&& item, WallTime until, MonoTime now) = 0;
    // Done waiting: through the worker's checks again, as a new message.
    virtual void admit(Campaign* c, Item&& item, MonoTime now) = 0;
  };

  // `options` (zones, caps, class_caps, cap_* and the waits), `clock`,
  // `buffered_bytes` and `totals` are the worker's and outlive the gate.
  // `can_park`: the worker has parking, so long waits are parked.
  RulesGate(const WorkerOptions& options, Host& host, const WallClock& clock, bool can_park,
            std::size_t& buffered_bytes, WorkerStats& totals)
      : options_(options),
        host_(host),
        clock_(clock),
        can_park_(can_park),
        buffered_bytes_(buffered_bytes),
        totals_(totals) {
    if (options.zones) quiet_hours_.emplace(options.zones);
    caps_ = options.caps;
    if (!caps_) {
      own_caps_ = makeMemoryFrequencyCapStore();
      caps_ = own_caps_.get();
    }
  }

  // The campaign's rules from its row `info`; returns its class
  // (priority_class, else the default class).
  std::string setRules(CampaignRules& r, const CampaignInfo& info);
  // Quiet now (it waits, true), or rejected (true), or free to go (false).
  bool holdForQuiet(Campaign* c, Item& item, MonoTime now);
  // Into the campaign's queue: through the cap check when it has caps.
  void toQueue(Campaign* c, Item&& item);
  // Each step: the waiting messages whose time has come go to Host::admit.
  void releaseWaiting(MonoTime now);
  // Each step, before the tick: one decide() for every capped campaign whose
  // checked queue runs low.
  void checkCaps(MonoTime now);
  // A message counted under caps that ends without being sent: its counts are
  // given back at the next flushGiveBacks().
  void giveBack(const Item& item, const CampaignRules& r);
  // One release() for every count given back since the last call.
  void flushGiveBacks(MonoTime now);
  // Removes the campaign's held messages (unchecked, waiting) that `drop`
  // says to; `drop` makes their rows or lets them go.
  void dropHeld(Campaign* c, const std::function<bool(Item&)>& drop);

  std::size_t unchecked() const noexcept { return unchecked_; }  // in campaigns' `unchecked`
  std::size_t waiting() const noexcept { return waiting_; }      // in campaigns' `waiting`
  // When the first message waiting in memory falls due; nullopt: none waits.
  std::optional<WallTime> nextDue() const;

 private:
  void waitUntil(Campaign* c, Item item, WallTime until, MonoTime now);
  bool capAnswered(Campaign* c, Item& item, const CapDecision* d, MonoTime now);
  void deferred(Campaign* c) {
    ++c->stats.deferred;
    ++totals_.deferred;
  }

  const WorkerOptions& options_;
  Host& host_;
  const WallClock& clock_;
  const bool can_park_;
  std::size_t& buffered_bytes_;
  WorkerStats& totals_;

  std::optional<QuietHours> quiet_hours_;  // with options.zones
  FrequencyCapStorePtr own_caps_;          // without options.caps
  FrequencyCapStore* caps_ = nullptr;
  std::size_t unchecked_ = 0;
  std::size_t waiting_ = 0;
  std::set<Campaign*> with_unchecked_, with_waiting_;
  std::vector<std::pair<Campaign*, Item>> cap_items_;  // the batch being asked
  std::vector<CapQuery> cap_queries_;
  std::vector<CapDecision> cap_out_;
  struct CapGiveBack {
    std::string recipient, scope;
    WallTime at;
  };
  std::vector<CapGiveBack> cap_give_back_;  // reservations to release() at the end of the step
  std::vector<CapRelease> cap_release_views_;
};

template <typename Campaign>
std::string RulesGate<Campaign>::setRules(CampaignRules& r, const CampaignInfo& info) {
  r.quiet.reset();
  r.quiet_error.clear();
  if (!info.quiet_hours.empty()) {
    QuietWindowParse p = parseQuietWindow(info.quiet_hours);
    if (!p.window)
      r.quiet_error = std::move(p.error);
    else if (!p.window->none())
      r.quiet = *p.window;
  }
  std::vector<CampaignRules::Cap> caps;
  if (info.frequency_cap)
    caps.push_back(CampaignRules::Cap{"campaign:" + info.id, *info.frequency_cap, info.cap_policy});
  const std::string& cls = info.priority_class.empty() ? options_.default_class : info.priority_class;
  for (const auto& [name, rule] : options_.class_caps)
    if (name == cls) caps.push_back(CampaignRules::Cap{"class:" + name, rule, options_.class_cap_policy});
  const auto same = [](const CampaignRules::Cap& a, const CampaignRules::Cap& b) { return a.scope == b.scope; };
  if (!std::equal(caps.begin(), caps.end(), r.caps.begin(), r.caps.end(), same)) {
    r.prev_caps = std::move(r.caps);
    ++r.caps_gen;
  }
  r.caps = std::move(caps);
  return cls;
}

template <typename Campaign>
bool RulesGate<Campaign>::holdForQuiet(Campaign* c, Item& item, MonoTime now) {
  const CampaignRules& r = c->rules;
  if (!r.quiet_error.empty()) {
    host_.row(c, item, DeliveryStatus::kRejected, "campaign's quiet hours: " + r.quiet_error);
    return true;
  }
  if (!r.quiet) return false;
  if (!quiet_hours_) {
    host_.row(c, item, DeliveryStatus::kRejected,
              fmt::format("quiet hours {} cannot be applied: this worker has no time zone table",
                          formatQuietWindow(*r.quiet)));
    return true;
  }
  const ZoneResolution z = quiet_hours_->table().resolve(item.msg.time_zone, c->info.time_zone);
  if (z.status == ZoneStatus::kUnknownZone) {
    const std::string& name = item.msg.time_zone.empty() ? c->info.time_zone : item.msg.time_zone;
    host_.row(c, item, DeliveryStatus::kRejected, fmt::format("unknown time zone '{}'", name));
    return true;
  }
  if (z.status == ZoneStatus::kNoZone) {
    host_.row(c, item, DeliveryStatus::kRejected,
              fmt::format("no time zone: the message has no tz header and campaign '{}' has no time_zone, "
                          "needed for its quiet hours {}",
                          c->info.id, formatQuietWindow(*r.quiet)));
    return true;
  }
  const QuietCheck q = quiet_hours_->check(z.zone, *r.quiet, clock_.wallAt(now));
  if (!q.quiet) return false;
  giveBack(item, r);  // a cleared message that became quiet is asked again when it may go
  item.caps_counted = 0;
  item.waiting_quiet = true;
  waitUntil(c, std::move(item), q.allowed_at, now);
  return true;
}

// Waits in memory when the wait is short and the campaign has room (its
// offset is then held back: the message has no durable copy), else parked
// with its time so the offset may advance.
template <typename Campaign>
void RulesGate<Campaign>::waitUntil(Campaign* c, Item item, WallTime until, MonoTime now) {
  CampaignRules& r = c->rules;
  const bool long_wait =
      until - clock_.wallAt(now) > std::chrono::duration_cast<std::chrono::milliseconds>(options_.park_wait_after);
  if (can_park_ && (long_wait || r.waiting.size() >= options_.max_waiting)) {
    host_.park(c, std::move(item), until, now);
    return;
  }
  if (item.waiting_quiet) ++r.quiet_waiting;
  buffered_bytes_ += item.bytes();
  ++waiting_;
  r.waiting.emplace(until, std::move(item));
  with_waiting_.insert(c);
}

template <typename Campaign>
void RulesGate<Campaign>::toQueue(Campaign* c, Item&& item) {
  CampaignRules& r = c->rules;
  if (r.caps.empty() || item.caps_counted != 0) {
    host_.enqueue(c, std::move(item));
    return;
  }
  if (item.msg.recipient.empty()) {
    host_.row(c, item, DeliveryStatus::kRejected,
              fmt::format("no recipient: campaign '{}' has a frequency cap ({}), which counts per recipient",
                          c->info.id, r.caps.front().scope));
    return;
  }
  buffered_bytes_ += item.bytes();
  ++unchecked_;
  r.unchecked.push_back(std::move(item));
  with_unchecked_.insert(c);
}

template <typename Campaign>
void RulesGate<Campaign>::releaseWaiting(MonoTime now) {
  const WallTime wall = clock_.wallAt(now);
  for (auto it = with_waiting_.begin(); it != with_waiting_.end();) {
    Campaign* c = *it;
    CampaignRules& r = c->rules;
    while (!r.waiting.empty() && r.waiting.begin()->first <= wall) {
      auto node = r.waiting.extract(r.waiting.begin());
      Item& item = node.mapped();
      --waiting_;
      buffered_bytes_ -= item.bytes();
      if (item.waiting_quiet) --r.quiet_waiting;
      item.waiting_quiet = false;
      host_.admit(c, std::move(item), now);
    }
    it = r.waiting.empty() ? with_waiting_.erase(it) : std::next(it);
  }
}

template <typename Campaign>
void RulesGate<Campaign>::checkCaps(MonoTime now) {
  if (with_unchecked_.empty()) return;
  cap_items_.clear();
  for (auto it = with_unchecked_.begin(); it != with_unchecked_.end() && cap_items_.size() < options_.cap_batch;) {
    Campaign* c = *it;
    CampaignRules& r = c->rules;
    if (r.unchecked.empty()) {
      it = with_unchecked_.erase(it);
      continue;
    }
    ++it;
    if (now < r.cap_retry_at || c->sched_paused) continue;
    std::size_t want = options_.cap_batch;
    if (c->info.limit) {
      const double ahead = c->info.limit->rate_per_s * std::chrono::duration<double>(options_.cap_lookahead).count() +
                           c->info.limit->burst;
      want = std::clamp<std::size_t>(static_cast<std::size_t>(std::min(ahead, 1e9)), options_.cap_min_batch,
                                     options_.cap_batch);
    }
    if (c->queue.size() * 2 >= want) continue;  // enough checked: ask in bigger batches later
    std::size_t n = std::min({want - c->queue.size(), r.unchecked.size(), options_.cap_batch - cap_items_.size()});
    for (; n > 0; --n) {
      cap_items_.emplace_back(c, std::move(r.unchecked.front()));
      r.unchecked.pop_front();
      --unchecked_;
      buffered_bytes_ -= cap_items_.back().second.bytes();
    }
  }
  if (cap_items_.empty()) return;
  // The views point into cap_items_, which does not grow from here on.
  cap_queries_.clear();
  for (const auto& [c, item] : cap_items_)
    for (const CampaignRules::Cap& cap : c->rules.caps)
      cap_queries_.push_back(CapQuery{item.msg.recipient, cap.scope, cap.rule.limit, cap.rule.window});
  cap_out_.assign(cap_queries_.size(), CapDecision{});
  const CapBatchResult res = caps_->decide(cap_queries_, clock_.wallAt(now), cap_out_);
  ++totals_.cap_round_trips;
  if (res.fault != CapFault::kNone) ++totals_.cap_faults;
  std::vector<std::size_t> retry;  // indices into cap_items_: the store could not answer
  std::size_t q = 0;
  for (std::size_t i = 0; i < cap_items_.size(); ++i) {
    Campaign* c = cap_items_[i].first;
    const CapDecision* d = &cap_out_[q];
    q += c->rules.caps.size();
    if (capAnswered(c, cap_items_[i].second, d, now)) retry.push_back(i);
  }
  // Back to the front of their queues, in their order, asked again later.
  for (auto it = retry.rbegin(); it != retry.rend(); ++it) {
    auto& [c, item] = cap_items_[*it];
    buffered_bytes_ += item.bytes();
    ++unchecked_;
    c->rules.unchecked.push_front(std::move(item));
    c->rules.cap_retry_at = now + options_.cap_retry;
    with_unchecked_.insert(c);
  }
  cap_items_.clear();
}

// One message's answers, d[0..caps): queued, suppressed, deferred or
// rejected (moved from `item`); or true: the store could not answer, `item`
// is left as it was, to be asked again.
template <typename Campaign>
bool RulesGate<Campaign>::capAnswered(Campaign* c, Item& item, const CapDecision* d, MonoTime now) {
  const CampaignRules& r = c->rules;
  const std::size_t n = r.caps.size();
  for (std::size_t k = 0; k < n; ++k)
    if (d[k].verdict == CapVerdict::kAllowed) {
      item.caps_counted |= static_cast<std::uint8_t>(1u << k);
      item.caps_gen = r.caps_gen;
      item.counted_at[k] = d[k].at;
    }
  const CampaignRules::Cap* capped = nullptr;
  WallTime allowed_at{};
  bool unavailable = false;
  for (std::size_t k = 0; k < n; ++k) {
    if (d[k].verdict == CapVerdict::kInvalid) {
      host_.row(c, item, DeliveryStatus::kRejected,
                fmt::format("frequency cap {}: the store refused the query (recipient empty, over {} bytes or "
                            "holding '}}', or the cap out of bounds)",
                            r.caps[k].scope, kMaxCapRecipientBytes));
      return false;  // the row gives back what was counted
    }
    if (d[k].verdict == CapVerdict::kUnavailable) unavailable = true;
    if (d[k].verdict == CapVerdict::kCapped && (!capped || d[k].at > allowed_at)) {
      capped = &r.caps[k];
      allowed_at = d[k].at;
    }
  }
  if (unavailable) {
    giveBack(item, r);
    item.caps_counted = 0;
    deferred(c);
    return true;
  }
  if (!capped) {
    host_.enqueue(c, std::move(item));
    return false;
  }
  if (capped->policy == CapPolicy::kSuppress) {
    host_.row(c, item, DeliveryStatus::kSuppressed,
              fmt::format("suppressed: frequency cap {} {}, allowed at {}", capped->scope,
                          formatFrequencyCap(capped->rule), isoTime(allowed_at)));
    return false;
  }
  giveBack(item, r);  // the slot is not held while it waits
  item.caps_counted = 0;
  deferred(c);
  waitUntil(c, std::move(item), allowed_at, now);
  return false;
}

template <typename Campaign>
void RulesGate<Campaign>::giveBack(const Item& item, const CampaignRules& r) {
  if (item.caps_counted == 0) return;
  const std::vector<CampaignRules::Cap>* caps = nullptr;  // the list the bits were set against
  if (item.caps_gen == r.caps_gen)
    caps = &r.caps;
  else if (item.caps_gen == static_cast<std::uint8_t>(r.caps_gen - 1))
    caps = &r.prev_caps;
  if (caps == nullptr) return;  // older still: left to expire
  for (std::size_t k = 0; k < caps->size(); ++k)
    if (item.caps_counted & (1u << k))
      cap_give_back_.push_back(CapGiveBack{item.msg.recipient, (*caps)[k].scope, item.counted_at[k]});
}

// If the store does not answer, the counts stay: a recipient may be capped
// early, never late.
template <typename Campaign>
void RulesGate<Campaign>::flushGiveBacks(MonoTime now) {
  if (cap_give_back_.empty()) return;
  cap_release_views_.clear();
  for (const CapGiveBack& g : cap_give_back_) cap_release_views_.push_back(CapRelease{g.recipient, g.scope, g.at});
  const CapBatchResult res = caps_->release(cap_release_views_, clock_.wallAt(now));
  ++totals_.cap_round_trips;
  if (res.fault != CapFault::kNone) ++totals_.cap_faults;
  cap_give_back_.clear();
}

template <typename Campaign>
void RulesGate<Campaign>::dropHeld(Campaign* c, const std::function<bool(Item&)>& drop) {
  CampaignRules& r = c->rules;
  for (auto it = r.unchecked.begin(); it != r.unchecked.end();) {
    if (!drop(*it)) {
      ++it;
      continue;
    }
    --unchecked_;
    buffered_bytes_ -= it->bytes();
    it = r.unchecked.erase(it);
  }
  for (auto it = r.waiting.begin(); it != r.waiting.end();) {
    if (!drop(it->second)) {
      ++it;
      continue;
    }
    --waiting_;
    buffered_bytes_ -= it->second.bytes();
    if (it->second.waiting_quiet) --r.quiet_waiting;
    it = r.waiting.erase(it);
  }
}

template <typename Campaign>
std::optional<WallTime> RulesGate<Campaign>::nextDue() const {
  std::optional<WallTime> due;
  for (const Campaign* c : with_waiting_)
    if (!c->rules.waiting.empty()) due = std::min(due.value_or(WallTime::max()), c->rules.waiting.begin()->first);
  return due;
}

}  // namespace pacer::delivery_detail
