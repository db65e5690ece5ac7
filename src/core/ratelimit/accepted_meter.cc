#include "pacer/accepted_meter.h"

#include <algorithm>

namespace pacer {

void AcceptedMeter::advance(MonoTime now) noexcept {
  const std::int64_t s = now.time_since_epoch() / kSlot;
  if (!started_) {
    started_ = true;
    slot_ = first_slot_ = s;
    return;
  }
  if (s <= slot_) return;  // the same slot, or time went back
  // Slots passed since: emptied (at most the whole ring).
  const std::int64_t n = std::min<std::int64_t>(s - slot_, kSlots + 1);
  for (std::int64_t i = 1; i <= n; ++i) {
    const auto k = static_cast<std::size_t>((slot_ + i) % (kSlots + 1));
    accepted_[k] = 0;
    throttled_[k] = 0;
  }
  const std::int64_t nr = std::min<std::int64_t>(s - slot_, kRecipientSlots);
  for (std::int64_t i = 1; i <= nr; ++i) recipient_[static_cast<std::size_t>((slot_ + i) % kRecipientSlots)] = 0;
  slot_ = s;
}

void AcceptedMeter::add(MonoTime now, bool throttled) noexcept {
  advance(now);
  const auto k = static_cast<std::size_t>(slot_ % (kSlots + 1));
  std::uint32_t& c = throttled ? throttled_[k] : accepted_[k];
  if (c < UINT32_MAX) ++c;
}

void AcceptedMeter::addRecipientThrottle(MonoTime now) noexcept {
  advance(now);
  std::uint32_t& c = recipient_[static_cast<std::size_t>(slot_ % kRecipientSlots)];
  if (c < UINT32_MAX) ++c;
}

void AcceptedMeter::pausedUntil(MonoTime until) noexcept {
  if (until > MonoTime{}) refilled_ = std::max(refilled_, until + refill_);
}

AcceptedRates AcceptedMeter::last(MonoTime now) noexcept {
  advance(now);
  AcceptedRates r;
  if (started_)
    for (const std::uint32_t c : recipient_) r.recipient += c;
  // The second [slot_ - kSlots, slot_) in slots, watched whole and clean.
  const MonoTime from{kSlot * (slot_ - kSlots)};
  if (!started_ || slot_ - kSlots < first_slot_ + 1 || from < refilled_) return r;
  double a = 0, t = 0;
  for (std::int64_t i = slot_ - kSlots; i < slot_; ++i) {
    const auto k = static_cast<std::size_t>(i % (kSlots + 1));
    a += accepted_[k];
    t += throttled_[k];
  }
  r.accepted = a;
  r.throttled = t;
  return r;
}

}  // namespace pacer
