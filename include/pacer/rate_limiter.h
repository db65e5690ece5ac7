// RateLimitingInterface: may work start now, and if not, when?
//
// Units, for every limiter:
//   - rate  : units (messages) per second, a double in [0, 1e7]; fractions are
//             fine (0.001/s is one message every 1000 s). Rate 0 lets nothing through.
//   - burst : units; how many may start at one instant after an idle spell. Values
//             below 1 are treated as 1 (otherwise nothing could ever start).
//   - times : MonoTime / Nanos, nanosecond resolution.
//
// Every call takes `now`; the answer depends only on the limiter's state and
// `now`. A `now` earlier than one seen before is treated as the latest time
// seen, so a clock that jumps back never grants anything extra.
//
// Thread-safety: none. A limiter belongs to one scheduler thread; callers that
// share one across threads must lock around it (see bench/ for what that costs).
// Hot-path calls (canDoWork, available, tryAcquire) never throw or allocate.
#pragma once

#include "pacer/error.h"

#include <cstdint>
#include <memory>
#include <string_view>

#include "pacer/time.h"

namespace pacer {

struct RateLimit {
  double rate_per_s = 0.0;  // units per second
  double burst = 1.0;       // units
};

enum class Algorithm { kTokenBucket, kLeakyBucket, kFixedWindow, kSlidingLog, kSlidingWindow };

// "token_bucket" etc.; the names used in configuration and scenario files.
std::string_view algorithmName(Algorithm a) noexcept;
// Parses a configuration name; returns false for an unknown one.
bool parseAlgorithm(std::string_view name, Algorithm& out) noexcept;

class RateLimitingInterface {
 public:
  virtual ~RateLimitingInterface() = default;

  // May one unit of work start now? If yes, the unit is taken. The hot path:
  // limiters may override it with a cheaper equivalent of tryAcquire(1, now).
  virtual bool canDoWork(MonoTime now) noexcept { return tryAcquire(1, now); }

  // Takes `n` units if all `n` may start now; otherwise takes nothing.
  // n == 0 is always true.
  virtual bool tryAcquire(std::uint64_t n, MonoTime now) noexcept = 0;

  // How many units (at most `max`) could start now. Does not take them.
  virtual std::uint64_t available(MonoTime now, std::uint64_t max) noexcept = 0;

  // How long from `now` until `n` units may start at once: Nanos{0} if now,
  // kNever if that can never happen (rate 0, or n above what one instant can
  // ever grant). Callers sleep this long instead of spinning.
  virtual Nanos timeUntil(std::uint64_t n, MonoTime now) noexcept = 0;

  // Changes rate and burst from `now` on. What has accumulated so far (tokens,
  // window counts, the log) is kept, clipped to the new burst where one applies.
  virtual void setLimit(RateLimit limit, MonoTime now) noexcept = 0;

  virtual RateLimit limit() const noexcept = 0;
  virtual Algorithm algorithm() const noexcept = 0;

  // Takes as many units as may start now, up to `n`; returns how many it took.
  std::uint64_t acquireUpTo(std::uint64_t n, MonoTime now) noexcept {
    const std::uint64_t k = available(now, n);
    return (k > 0 && tryAcquire(k, now)) ? k : 0;
  }
};
using RateLimitingInterfacePtr = std::unique_ptr<RateLimitingInterface>;

// Settings that only some algorithms read.
struct LimiterOptions {
  Algorithm algorithm = Algorithm::kTokenBucket;
  // Window length for fixed_window, sliding_log and sliding_window.
  Nanos window = std::chrono::seconds(1);
  // leaky_bucket: how late a unit's slot may be and still be used. The
  // scheduler sets this to its tick: a slot that falls between two ticks is
  // sent at the next tick, and slots older than that are gone (no burst).
  Nanos max_lateness = std::chrono::milliseconds(10);
  // sliding_log: the most timestamps one limiter may hold (8 bytes each).
  std::uint64_t max_log_entries = 1u << 20;
};

// Thrown for settings a limiter cannot honour (negative or NaN rate, a
// sliding log larger than its memory cap, a window of 0). Configuration code
// turns it into a message naming the field.
class InvalidLimitError : public InvalidError {
 public:
  explicit InvalidLimitError(const char* what) : InvalidError(what) {}
};

// Checks `limit` against `options`; throws InvalidLimitError with the reason.
void validateLimit(const RateLimit& limit, const LimiterOptions& options);

// Builds a limiter that starts at `now` (a token bucket starts full).
// Throws InvalidLimitError for settings validateLimit refuses.
RateLimitingInterfacePtr makeLimiter(const LimiterOptions& options, RateLimit limit, MonoTime now);

}  // namespace pacer
