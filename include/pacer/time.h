// Time as the core sees it: a monotonic instant and durations in nanoseconds.
// The core never reads a clock; callers pass `now` in. Only SteadyTimeSource
// (pacer::clock) reads std::chrono::steady_clock.
#pragma once

#include <chrono>
#include <memory>

namespace pacer {

using Nanos = std::chrono::nanoseconds;
// A point on the monotonic time line, nanosecond resolution. Tests and the
// simulator build these from Nanos since an arbitrary epoch.
using MonoTime = std::chrono::time_point<std::chrono::steady_clock, Nanos>;

// "Never" for answers like timeUntil(): the wait cannot end (rate 0, or a
// request larger than the limiter can ever grant at once).
inline constexpr Nanos kNever = Nanos::max();

inline constexpr MonoTime monoAt(Nanos since_epoch) { return MonoTime{since_epoch}; }

// Where time comes from. Thread-safety: implementations say so themselves;
// both shipped ones are safe to read from any thread.
class TimeSource {
 public:
  virtual ~TimeSource() = default;
  // The current monotonic time. Never goes backwards for the shipped sources.
  virtual MonoTime now() const noexcept = 0;
};
using TimeSourcePtr = std::unique_ptr<TimeSource>;

// A clock moved by hand: tests and pacer-sim own one and step it. Starts at
// the epoch (0 ns) unless told otherwise. Not thread-safe for writers.
class SimulatedTimeSource final : public TimeSource {
 public:
  explicit SimulatedTimeSource(MonoTime start = MonoTime{}) noexcept : now_(start) {}
  MonoTime now() const noexcept override { return now_; }
  // Moves time forward by `d` (a negative `d` moves it back: tests use that to
  // check limiters against clocks that jump).
  void advance(Nanos d) noexcept;
  void set(MonoTime t) noexcept;

 private:
  MonoTime now_;
};

// Reads std::chrono::steady_clock. Lives in pacer::clock, outside the core.
TimeSourcePtr makeSteadyTimeSource();

}  // namespace pacer
