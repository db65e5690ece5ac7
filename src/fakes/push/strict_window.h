// A strict sliding one-second window: at most `limit` admissions in any
// half-open interval of one second, with no burst allowance. Also remembers
// the most admissions ever seen inside one second (the report's
// busiest_1s_window), so it is kept even when the limit is 0 (none).
#pragma once

#include <cstdint>
#include <deque>

#include "pacer/time.h"

namespace pacer::fake {

// Not thread-safe: the fake's one event-loop thread owns it.
class StrictWindow {
 public:
  // `limit` admissions per second; 0 means no limit (every call admits).
  explicit StrictWindow(std::uint32_t limit) noexcept : limit_(limit) {}

  // Admits one request at `now` if fewer than `limit` were admitted in
  // (now - 1 s, now]. Time going backwards is treated as no time passing.
  bool tryAdmit(MonoTime now);
  // The most admissions seen inside any one-second interval so far.
  std::uint64_t busiest() const noexcept { return busiest_; }
  // Admissions in (now - 1 s, now] (does not evict; `now` is a hint only).
  std::size_t inWindow() const noexcept { return admitted_.size(); }

 private:
  std::uint32_t limit_;
  std::deque<MonoTime> admitted_;  // admission times within the last second
  MonoTime last_{};
  std::uint64_t busiest_ = 0;
};

}  // namespace pacer::fake
