// Wall-clock time for the rules about people (quiet hours, frequency caps):
// a UTC instant, Unix epoch, millisecond resolution. Distinct from MonoTime
// (pacer/time.h), which paces sends and has no calendar. The rules never
// read a clock; callers pass the instant in.
#pragma once

#include <chrono>

namespace pacer {

using WallTime = std::chrono::sys_time<std::chrono::milliseconds>;

}  // namespace pacer
