// Wall-clock time for the rules about people (quiet hours, frequency caps):
// a UTC instant, Unix epoch, millisecond resolution. Distinct from MonoTime
// (pacer/time.h), which paces sends and has no calendar. The rules never
// read a clock; callers pass the instant in.
#pragma once

#include <chrono>
#include <cstdint>

namespace pacer {

using WallTime = std::chrono::sys_time<std::chrono::milliseconds>;

// Whole seconds since the Unix epoch (a JWT's iat, an HTTP-date's instant).
inline std::int64_t unixSeconds(WallTime t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

}  // namespace pacer
