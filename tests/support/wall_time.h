// A wall time in UTC from its calendar fields, for tests that set a wall
// clock (quiet hours, the recipient rules).
#pragma once

#include <chrono>

#include "pacer/wall_time.h"

namespace pacer::test {

inline WallTime utc(int y, unsigned mo, unsigned d, int h, int mi = 0, int s = 0) {
  using namespace std::chrono;
  return WallTime{sys_days{year{y} / month{mo} / day{d}}} + hours(h) + minutes(mi) + seconds(s);
}

}  // namespace pacer::test
