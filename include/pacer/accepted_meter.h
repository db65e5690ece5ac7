// What a provider took over the last full second, pure.
//
// The throttle judge's measured cut needs the provider's real capacity.
// One worker's throttle share in one period is a poor estimate of it: the
// judge sees only its own part of the traffic, and after a pause the workers
// come back unevenly. What the provider accepted, summed over every worker,
// over a whole second in which it was sent more than it takes, is the
// capacity itself (a provider with a one-second window accepts exactly its
// quota in any such second). This meter counts one sender's answers that
// were not throttled, and those that were, in 100 ms slots, and tells the
// rates over the last full second [s - 1 s, s) (s: the start of the current
// slot), unless that second overlapped a pause or the refill after it (a
// second: the provider's window is refilling while the senders come back,
// and what it accepts then says nothing of a steady rate).
//
// Each worker keeps one per provider and reports its rates; the quota sums
// them (lease.lua keeps the last report of each worker). Not thread-safe.
// Time never goes backwards here: an earlier `now` counts as the last one.
#pragma once

#include <array>
#include <cstdint>

#include "pacer/time.h"

namespace pacer {

struct AcceptedRates {
  double accepted = -1;   // answers not throttled, per second (< 0: not known)
  double throttled = -1;  // throttles, per second (< 0: not known)
  // Throttles of one recipient (APNs TooManyRequests, addRecipientThrottle())
  // over the last AcceptedMeter::kRecipientWindow, up to now: not in
  // `throttled`, which is the provider's own. Known whether or not the
  // others are (a pause does not make a refusal say less).
  double recipient = 0;
  bool known() const noexcept { return accepted >= 0 && throttled >= 0; }
};

class AcceptedMeter {
 public:
  static constexpr Nanos kSlot = std::chrono::milliseconds(100);
  static constexpr int kSlots = 10;  // one second
  // `refill`: how long after a pause ends the counts still say nothing (>= 0).
  explicit AcceptedMeter(Nanos refill = std::chrono::seconds(1)) noexcept : refill_(refill) {}

  // One answer at `now`: throttled (429, ESME_RTHROTTLED) or not.
  void add(MonoTime now, bool throttled) noexcept;
  // One throttle of a single recipient at `now` (APNs TooManyRequests): the
  // workers' crowd of them is told apart from a hot token by their sum over
  // kRecipientWindow. A probe that touches a strict window gets a refusal
  // or two a second, for seconds: over one second they seldom made a crowd,
  // and each touch cost about a dozen (bench/RESULTS-push.md).
  void addRecipientThrottle(MonoTime now) noexcept;
  static constexpr int kRecipientSlots = 50;
  static constexpr Nanos kRecipientWindow = kSlot * kRecipientSlots;  // 5 s
  // The provider is paused until `until` (the latest known wins): no second
  // that reaches into the pause or `refill` after it is measured.
  void pausedUntil(MonoTime until) noexcept;
  // The rates over the last full second before the current slot; unknown
  // when that second touched a pause or its refill, or the meter has not
  // watched it all. `recipient` is always known.
  AcceptedRates last(MonoTime now) noexcept;

 private:
  void advance(MonoTime now) noexcept;

  Nanos refill_;
  // The last second's slots and the current one.
  std::array<std::uint32_t, kSlots + 1> accepted_{};
  std::array<std::uint32_t, kSlots + 1> throttled_{};
  std::array<std::uint32_t, kRecipientSlots> recipient_{};  // the current slot and those before it
  std::int64_t slot_ = 0;  // the current slot's index (time / kSlot)
  std::int64_t first_slot_ = 0;
  bool started_ = false;
  MonoTime refilled_{};
};

}  // namespace pacer
