// WorkerCore's recipient rules (worker_core_impl.h, docs/recipient-rules.md):
// quiet hours in the recipient's zone and per-recipient frequency caps.
//
// A message's way: admit() -> quiet? wait (in memory, or parked with a
// not_before) -> route() (park the excess) -> toQueue(): a capped campaign's
// message waits in `unchecked` until checkCaps() asks the store, in one
// decide() per step for every campaign, about the few messages the next
// ticks can grant; only a cleared message joins the queue, which is the
// scheduler's backlog, so a suppressed message never spends a token.
#include <fmt/chrono.h>
#include <fmt/format.h>

#include "worker_core_impl.h"

namespace pacer {

using delivery_detail::Item;

void WorkerCore::setWallClock(WallTime wall, MonoTime mono) noexcept {
  impl_->wall_base = wall;
  impl_->mono_base = mono;
}

namespace {

// UTC by arithmetic on the calendar: fmt 9's chrono formatting goes through
// the C library's local time, so TZ would change the text.
std::string isoTime(WallTime t) {
  using namespace std::chrono;
  const auto secs = floor<seconds>(t);
  const auto day = floor<days>(secs);
  const year_month_day ymd{day};
  const hh_mm_ss<seconds> hms{secs - day};
  return fmt::format("{:04d}-{:02d}-{:02d}T{:02d}:{:02d}:{:02d}Z", static_cast<int>(ymd.year()),
                     static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()), hms.hours().count(),
                     hms.minutes().count(), hms.seconds().count());
}

}  // namespace

void WorkerCore::Impl::setRules(Campaign* c) {
  const CampaignInfo& info = c->info;
  c->quiet.reset();
  c->quiet_error.clear();
  if (!info.quiet_hours.empty()) {
    QuietWindowParse p = parseQuietWindow(info.quiet_hours);
    if (!p.window)
      c->quiet_error = std::move(p.error);
    else if (!p.window->none())
      c->quiet = *p.window;
  }
  std::vector<Campaign::Cap> caps;
  if (info.frequency_cap) caps.push_back(Campaign::Cap{"campaign:" + info.id, *info.frequency_cap, info.cap_policy});
  const std::string& cls = info.priority_class.empty() ? options.default_class : info.priority_class;
  for (const auto& [name, rule] : options.class_caps)
    if (name == cls) caps.push_back(Campaign::Cap{"class:" + name, rule, options.class_cap_policy});
  const auto same = [](const Campaign::Cap& a, const Campaign::Cap& b) { return a.scope == b.scope; };
  if (!std::equal(caps.begin(), caps.end(), c->caps.begin(), c->caps.end(), same)) {
    c->prev_caps = std::move(c->caps);
    ++c->caps_gen;
  }
  c->caps = std::move(caps);
  c->stats.priority_class = cls;
}

void WorkerCore::Impl::admit(Campaign* c, Item item, MonoTime now) {
  if (expireIfDue(c, item, now)) return;
  if (holdForQuiet(c, item, now)) return;
  route(c, std::move(item), now);
}

bool WorkerCore::Impl::holdForQuiet(Campaign* c, Item& item, MonoTime now) {
  if (!c->quiet_error.empty()) {
    addRow(c, item, DeliveryStatus::kRejected, item.attempts, "campaign's quiet hours: " + c->quiet_error);
    return true;
  }
  if (!c->quiet) return false;
  if (!quiet_hours) {
    addRow(c, item, DeliveryStatus::kRejected, item.attempts,
           fmt::format("quiet hours {} cannot be applied: this worker has no time zone table",
                       formatQuietWindow(*c->quiet)));
    return true;
  }
  const ZoneResolution z = quiet_hours->table().resolve(item.msg.time_zone, c->info.time_zone);
  if (z.status == ZoneStatus::kUnknownZone) {
    const std::string& name = item.msg.time_zone.empty() ? c->info.time_zone : item.msg.time_zone;
    addRow(c, item, DeliveryStatus::kRejected, item.attempts, fmt::format("unknown time zone '{}'", name));
    return true;
  }
  if (z.status == ZoneStatus::kNoZone) {
    addRow(c, item, DeliveryStatus::kRejected, item.attempts,
           fmt::format("no time zone: the message has no tz header and campaign '{}' has no time_zone, "
                       "needed for its quiet hours {}",
                       c->info.id, formatQuietWindow(*c->quiet)));
    return true;
  }
  const QuietCheck q = quiet_hours->check(z.zone, *c->quiet, wallAt(now));
  if (!q.quiet) return false;
  giveBack(item, c);  // a cleared message that became quiet is asked again when it may go
  item.caps_counted = 0;
  item.waiting_quiet = true;
  waitUntil(c, std::move(item), q.allowed_at, now);
  return true;
}

// Waits in memory when the wait is short and the campaign has room (its
// offset is then held back: the message has no durable copy), else parked
// with its time so the offset may advance.
void WorkerCore::Impl::waitUntil(Campaign* c, Item item, WallTime until, MonoTime now) {
  const bool long_wait = until - wallAt(now) > std::chrono::duration_cast<std::chrono::milliseconds>(options.park_wait_after);
  if (parking && (long_wait || c->waiting.size() >= options.max_waiting)) {
    item.not_before = until;
    c->park_wakes.insert(std::chrono::ceil<std::chrono::seconds>(until));
    toPark(c, std::move(item), now);
    return;
  }
  if (item.waiting_quiet) ++c->quiet_waiting;
  buffered_bytes += item.bytes();
  ++waiting;
  c->waiting.emplace(until, std::move(item));
  with_waiting.insert(c);
}

void WorkerCore::Impl::toPark(Campaign* c, Item item, MonoTime now) {
  if (to_park.empty()) to_park_since = now;
  buffered_bytes += item.bytes();
  ++c->to_park;
  to_park.push(c, std::move(item));
}

void WorkerCore::Impl::toQueue(Campaign* c, Item item) {
  if (c->caps.empty() || item.caps_counted != 0) {
    enqueue(c, std::move(item), false);
    return;
  }
  if (item.msg.recipient.empty()) {
    addRow(c, item, DeliveryStatus::kRejected, item.attempts,
           fmt::format("no recipient: campaign '{}' has a frequency cap ({}), which counts per recipient", c->info.id,
                       c->caps.front().scope));
    return;
  }
  buffered_bytes += item.bytes();
  ++unchecked;
  c->unchecked.push_back(std::move(item));
  with_unchecked.insert(c);
}

void WorkerCore::Impl::releaseWaiting(MonoTime now) {
  const WallTime wall = wallAt(now);
  for (auto it = with_waiting.begin(); it != with_waiting.end();) {
    Campaign* c = *it;
    while (!c->waiting.empty() && c->waiting.begin()->first <= wall) {
      auto node = c->waiting.extract(c->waiting.begin());
      Item& item = node.mapped();
      --waiting;
      buffered_bytes -= item.bytes();
      if (item.waiting_quiet) --c->quiet_waiting;
      item.waiting_quiet = false;
      admit(c, std::move(item), now);
    }
    it = c->waiting.empty() ? with_waiting.erase(it) : std::next(it);
  }
}

// One decide() for every capped campaign whose checked queue runs low.
void WorkerCore::Impl::checkCaps(MonoTime now) {
  if (with_unchecked.empty()) return;
  cap_items.clear();
  for (auto it = with_unchecked.begin(); it != with_unchecked.end() && cap_items.size() < options.cap_batch;) {
    Campaign* c = *it;
    if (c->unchecked.empty()) {
      it = with_unchecked.erase(it);
      continue;
    }
    ++it;
    if (now < c->cap_retry_at || c->sched_paused) continue;
    std::size_t want = options.cap_batch;
    if (c->info.limit) {
      const double ahead = c->info.limit->rate_per_s * std::chrono::duration<double>(options.cap_lookahead).count() +
                           c->info.limit->burst;
      want = std::clamp<std::size_t>(static_cast<std::size_t>(std::min(ahead, 1e9)), options.cap_min_batch,
                                     options.cap_batch);
    }
    if (c->queue.size() * 2 >= want) continue;  // enough checked: ask in bigger batches later
    std::size_t n = std::min({want - c->queue.size(), c->unchecked.size(), options.cap_batch - cap_items.size()});
    for (; n > 0; --n) {
      cap_items.emplace_back(c, std::move(c->unchecked.front()));
      c->unchecked.pop_front();
      --unchecked;
      buffered_bytes -= cap_items.back().second.bytes();
    }
  }
  if (cap_items.empty()) return;
  // The views point into cap_items, which does not grow from here on.
  cap_queries.clear();
  for (const auto& [c, item] : cap_items)
    for (const Campaign::Cap& cap : c->caps)
      cap_queries.push_back(CapQuery{item.msg.recipient, cap.scope, cap.rule.limit, cap.rule.window});
  cap_out.assign(cap_queries.size(), CapDecision{});
  const CapBatchResult r = caps->decide(cap_queries, wallAt(now), cap_out);
  ++totals.cap_round_trips;
  if (r.fault != CapFault::kNone) ++totals.cap_faults;
  std::vector<std::size_t> retry;  // indices into cap_items: the store could not answer
  std::size_t q = 0;
  for (std::size_t i = 0; i < cap_items.size(); ++i) {
    Campaign* c = cap_items[i].first;
    const CapDecision* d = &cap_out[q];
    q += c->caps.size();
    if (capAnswered(c, cap_items[i].second, d, now)) retry.push_back(i);
  }
  // Back to the front of their queues, in their order, asked again later.
  for (auto it = retry.rbegin(); it != retry.rend(); ++it) {
    auto& [c, item] = cap_items[*it];
    buffered_bytes += item.bytes();
    ++unchecked;
    c->unchecked.push_front(std::move(item));
    c->cap_retry_at = now + options.cap_retry;
    with_unchecked.insert(c);
  }
  cap_items.clear();
}

// One message's answers, d[0..caps): queued, suppressed, deferred or
// rejected (moved from `item`); or true: the store could not answer, `item`
// is left as it was, to be asked again.
bool WorkerCore::Impl::capAnswered(Campaign* c, Item& item, const CapDecision* d, MonoTime now) {
  const std::size_t n = c->caps.size();
  for (std::size_t k = 0; k < n; ++k)
    if (d[k].verdict == CapVerdict::kAllowed) {
      item.caps_counted |= static_cast<std::uint8_t>(1u << k);
      item.caps_gen = c->caps_gen;
      item.counted_at[k] = d[k].at;
    }
  const Campaign::Cap* capped = nullptr;
  WallTime allowed_at{};
  bool unavailable = false;
  for (std::size_t k = 0; k < n; ++k) {
    if (d[k].verdict == CapVerdict::kInvalid) {
      addRow(c, item, DeliveryStatus::kRejected, item.attempts,
             fmt::format("frequency cap {}: the store refused the query (recipient empty, over {} bytes or holding "
                         "'}}', or the cap out of bounds)",
                         c->caps[k].scope, kMaxCapRecipientBytes));
      return false;  // addRow gives back what was counted
    }
    if (d[k].verdict == CapVerdict::kUnavailable) unavailable = true;
    if (d[k].verdict == CapVerdict::kCapped && (!capped || d[k].at > allowed_at)) {
      capped = &c->caps[k];
      allowed_at = d[k].at;
    }
  }
  if (unavailable) {
    giveBack(item, c);
    item.caps_counted = 0;
    ++c->stats.deferred;
    ++totals.deferred;
    return true;
  }
  if (!capped) {
    enqueue(c, std::move(item), false);
    return false;
  }
  if (capped->policy == CapPolicy::kSuppress) {
    addRow(c, item, DeliveryStatus::kSuppressed, item.attempts,
           fmt::format("suppressed: frequency cap {} {}, allowed at {}", capped->scope,
                       formatFrequencyCap(capped->rule), isoTime(allowed_at)));
    return false;
  }
  giveBack(item, c);  // the slot is not held while it waits
  item.caps_counted = 0;
  ++c->stats.deferred;
  ++totals.deferred;
  waitUntil(c, std::move(item), allowed_at, now);
  return false;
}

void WorkerCore::Impl::giveBack(const Item& item, const Campaign* c) {
  if (item.caps_counted == 0) return;
  const std::vector<Campaign::Cap>* caps = nullptr;  // the list the bits were set against
  if (item.caps_gen == c->caps_gen)
    caps = &c->caps;
  else if (item.caps_gen == static_cast<std::uint8_t>(c->caps_gen - 1))
    caps = &c->prev_caps;
  if (caps == nullptr) return;  // older still: left to expire
  for (std::size_t k = 0; k < caps->size(); ++k)
    if (item.caps_counted & (1u << k))
      cap_give_back.push_back(CapGiveBack{item.msg.recipient, (*caps)[k].scope, item.counted_at[k]});
}

// One release() per step for every reservation given back. If the store does
// not answer, the counts stay: a recipient may be capped early, never late.
void WorkerCore::Impl::flushGiveBacks(MonoTime now) {
  if (cap_give_back.empty()) return;
  cap_release_views.clear();
  for (const CapGiveBack& g : cap_give_back) cap_release_views.push_back(CapRelease{g.recipient, g.scope, g.at});
  const CapBatchResult r = caps->release(cap_release_views, wallAt(now));
  ++totals.cap_round_trips;
  if (r.fault != CapFault::kNone) ++totals.cap_faults;
  cap_give_back.clear();
}

// Removes held-for-rules messages (unchecked, waiting) that `drop` says to.
void WorkerCore::Impl::dropRuleHeld(Campaign* c, const std::function<bool(Item&)>& drop) {
  for (auto it = c->unchecked.begin(); it != c->unchecked.end();) {
    if (!drop(*it)) {
      ++it;
      continue;
    }
    --unchecked;
    buffered_bytes -= it->bytes();
    it = c->unchecked.erase(it);
  }
  for (auto it = c->waiting.begin(); it != c->waiting.end();) {
    if (!drop(it->second)) {
      ++it;
      continue;
    }
    --waiting;
    buffered_bytes -= it->second.bytes();
    if (it->second.waiting_quiet) --c->quiet_waiting;
    it = c->waiting.erase(it);
  }
}

}  // namespace pacer
