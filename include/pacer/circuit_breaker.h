// A circuit breaker on a provider's fault ratio, pure.
//
// Answers are reported in counts (ok, faults) as they arrive; the breaker
// keeps a sliding-window estimate of the fault fraction (the current window
// plus the previous one weighted by how much of it still overlaps). When at
// least `min_requests` answers are in the window and the fault fraction is at
// or above `threshold`, it opens for `cooldown`, doubled for each open in a
// row (up to `max_cooldown`), and forgets its counts: after the cooldown it is
// half-open, judged afresh on the answers that follow. A whole window closed
// since the last open resets the doubling.
//
// Faults are per-message answers (5xx without Retry-After, timeouts, lost
// connections); throttles are not faults. A few faults retry with backoff
// and change nothing else; only sustained faults open the breaker, which
// pauses the provider and lowers its rate (the caller's business).
// src/quota/lease.lua keeps the same algorithm in Redis, so that the ratio
// is the one seen by every worker.
//
// Not thread-safe.
#pragma once

#include <cstdint>

#include "pacer/time.h"

namespace pacer {

struct BreakerOptions {
  double threshold = 0.5;           // fault fraction that opens it, in (0, 1]
  std::uint32_t min_requests = 20;  // answers in the window before it judges, >= 1
  Nanos window = std::chrono::seconds(10);
  Nanos cooldown = std::chrono::seconds(5);
  Nanos max_cooldown = std::chrono::seconds(60);
};

class CircuitBreaker {
 public:
  CircuitBreaker(BreakerOptions options, MonoTime now) noexcept;
  // Counts answers seen since the last report. Returns true when this report
  // opened the breaker (the caller pauses the provider until openUntil()).
  bool report(std::uint64_t ok, std::uint64_t faults, MonoTime now) noexcept;
  bool isOpen(MonoTime now) const noexcept { return now < open_until_; }
  MonoTime openUntil() const noexcept { return open_until_; }
  // The sliding-window fault fraction at `now` (0 with no answers).
  double faultRatio(MonoTime now) noexcept;
  void setOptions(const BreakerOptions& options) noexcept { options_ = options; }

 private:
  void roll(MonoTime now) noexcept;
  double weight(MonoTime now) const noexcept;

  BreakerOptions options_;
  MonoTime window_start_;
  double ok_ = 0, faults_ = 0;            // the current window
  double prev_ok_ = 0, prev_faults_ = 0;  // the one before
  MonoTime open_until_{};
  int opens_ = 0;  // opens in a row
};

}  // namespace pacer
