// WorkerCore's message deadlines (worker_core_impl.h, docs/expiry.md).
//
// A message's deadline (Message::expires_at_ms) is its pacer-expires-at
// header, tightened when it is read by its campaign's default_ttl_ms. Past
// it, the message gets an `expired` row and is never sent. The decisive check
// is at the moment of sending (sendPaid), on the worker's wall time; a scan
// every expiry_scan_interval also finds the messages that cannot be sent now
// (a paused campaign or provider, a retry's backoff, quiet hours), so they
// are finished without waiting. Neither costs quota: a scanned message leaves
// the queue before any tick grants it, and one found at sending leaves its
// grant to the message behind it.
#include <fmt/format.h>

#include "worker_core_impl.h"

namespace pacer {

using delivery_detail::Item;

namespace {

std::int64_t epochMs(WallTime t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

}  // namespace

std::string expiredReason(std::int64_t expires_at_ms, std::int64_t now_ms) {
  return fmt::format("expired: deadline {} passed {} ms before it could be sent", formatDeadline(expires_at_ms),
                     now_ms - expires_at_ms);
}

void WorkerCore::Impl::applyTtl(const Campaign* c, Item& item, MonoTime now) {
  if (c->info.default_ttl_ms > 0) {
    const std::int64_t by_campaign = epochMs(wallAt(now)) + c->info.default_ttl_ms;
    if (item.msg.expires_at_ms == 0 || by_campaign < item.msg.expires_at_ms) item.msg.expires_at_ms = by_campaign;
  }
  if (item.msg.expires_at_ms != 0) with_deadlines = true;
}

bool WorkerCore::Impl::pastDeadline(const Item& item, MonoTime now) const {
  return item.msg.expires_at_ms != 0 && item.msg.expires_at_ms <= epochMs(wallAt(now));
}

void WorkerCore::Impl::expiredRow(Campaign* c, const Item& item, MonoTime now) {
  addRow(c, item, DeliveryStatus::kExpired, item.attempts, expiredReason(item.msg.expires_at_ms, epochMs(wallAt(now))));
}

bool WorkerCore::Impl::expireIfDue(Campaign* c, Item& item, MonoTime now) {
  if (item.msg.expires_at_ms != 0) with_deadlines = true;  // claimed back from parking with one
  if (!pastDeadline(item, now)) return false;
  expiredRow(c, item, now);
  return true;
}

bool WorkerCore::Impl::expireFront(Campaign* c, MonoTime now) {
  if (c->queue.empty() || !pastDeadline(c->queue.front(), now)) return false;
  Item item = c->queue.dropFront();  // its grant stays for the message behind it
  --queued;
  queued_units -= item.cost;
  buffered_bytes -= item.bytes();
  expiredRow(c, item, now);
  return true;
}

void WorkerCore::Impl::expireHeld(MonoTime now) {
  if (!with_deadlines || now < next_expiry_scan) return;
  next_expiry_scan = now + options.expiry_scan_interval;
  const auto due = [&](const Item& item) { return pastDeadline(item, now); };
  for (auto& entry : campaigns) {
    Campaign* c = entry.second.get();  // not a structured binding: lambdas capture it (Clang)
    if (c->queue.any(due)) {
      queued -= c->queue.removeIf([&](Item& item) {
        if (!due(item)) return false;
        buffered_bytes -= item.bytes();
        queued_units -= item.cost;
        expiredRow(c, item, now);
        return true;
      });
    }
    if (!c->rules.unchecked.empty() || !c->rules.waiting.empty()) {
      gate.dropHeld(c, [&](Item& item) {
        if (!due(item)) return false;
        expiredRow(c, item, now);
        return true;
      });
    }
  }
  for (auto it = retries.begin(); it != retries.end();) {
    auto& [c, item] = it->second;
    if (!due(item)) {
      ++it;
      continue;
    }
    buffered_bytes -= item.bytes();
    --c->retrying;
    expiredRow(c, item, now);
    it = retries.erase(it);
  }
}

}  // namespace pacer
