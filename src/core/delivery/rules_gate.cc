// A WorkerCore's recipient rules (rules_gate.h): what does not depend on the
// worker's campaign type.
#include "rules_gate.h"

namespace pacer::delivery_detail {

// UTC by arithmetic on the calendar: fmt 9's chrono formatting goes through
// the C library's local time, so TZ would change the text.
std::string isoTime(WallTime t) {
  using namespace std::chrono;
  const auto secs = floor<seconds>(t);
  const auto day = floor<days>(secs);
  const year_month_day ymd{day};
  const hh_mm_ss<seconds> hms{secs - day};
  return fmt::format("{:04d}-{:02d}-{:02d}T{:02d}:{:02d}:{:02d}Z", static_cast<int>(ymd.year()),
                     static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()), hms.hours().count(),
                     hms.minutes().count(), hms.seconds().count());
}

}  // namespace pacer::delivery_detail
