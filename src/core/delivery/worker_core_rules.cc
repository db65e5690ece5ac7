// WorkerCore's side of the recipient rules (rules_gate.h,
// docs/recipient-rules.md): the wall clock, admit(), and what the rules hand
// back to the worker (Impl::RulesHost).
#include "worker_core_impl.h"

namespace pacer {

using delivery_detail::Item;

void WorkerCore::setWallClock(WallTime wall, MonoTime mono) noexcept {
  impl_->clock.wall_base = wall;
  impl_->clock.mono_base = mono;
}

void WorkerCore::Impl::admit(Campaign* c, Item item, MonoTime now) {
  if (expireIfDue(c, item, now)) return;
  if (gate.holdForQuiet(c, item, now)) return;
  route(c, std::move(item), now);
}

void WorkerCore::Impl::toPark(Campaign* c, Item item, MonoTime now) {
  if (to_park.empty()) to_park_since = now;
  buffered_bytes += item.bytes();
  ++c->to_park;
  to_park.push(c, std::move(item));
}

void WorkerCore::Impl::RulesHost::row(Campaign* c, Item& item, DeliveryStatus status, std::string reason) {
  m.addRow(c, item, status, item.attempts, std::move(reason));
}

void WorkerCore::Impl::RulesHost::enqueue(Campaign* c, Item&& item) { m.enqueue(c, std::move(item), false); }

// Parked with its time: park_wakes says when to claim it back.
void WorkerCore::Impl::RulesHost::park(Campaign* c, Item&& item, WallTime until, MonoTime now) {
  item.not_before = until;
  c->park_wakes.insert(std::chrono::ceil<std::chrono::seconds>(until));
  m.toPark(c, std::move(item), now);
}

void WorkerCore::Impl::RulesHost::admit(Campaign* c, Item&& item, MonoTime now) { m.admit(c, std::move(item), now); }

}  // namespace pacer
