// QuietHours: is an instant inside the recipient's local quiet window, and
// when does it end. The DST rules (docs/recipient-rules.md):
//   - a window starts the first time the local clock reaches its start and
//     ends the last time the clock reaches its end, so it never opens for a
//     while inside a repeated (fall-back) hour;
//   - a start or end inside a skipped (spring-forward) hour takes effect at
//     the change itself (a window ending 02:30 ends at 03:00 that night);
//   - a window wholly inside a skipped hour does not happen that night.
// Away from a UTC-offset change (two days either side) this is plain
// arithmetic on the cached offset; near one, it asks the tz database.
#include <algorithm>

#include "time_zone_table_impl.h"

namespace pacer {
namespace {

constexpr std::int64_t kDayMs = 86'400'000;
// A window spans at most a day of local time, and an offset change moves the
// clock by at most a day (Pacific/Apia skipped 30 December 2011): with no
// change within two days of t, one offset explains every boundary near t.
constexpr std::int64_t kMarginMs = 2 * kDayMs;
// The date library's civil range is years -32767..32767; stay well inside it.
constexpr std::int64_t kMinMs = -62'135'596'800'000;  // 0001-01-01
constexpr std::int64_t kMaxMs = 253'402'300'799'999;  // 9999-12-31 23:59:59.999
constexpr std::int64_t kNone = INT64_MIN;

std::int64_t floorDiv(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) --q;
  return q;
}

bool inWindow(std::int64_t tod, std::int64_t start, std::int64_t end) {
  return start < end ? (tod >= start && tod < end) : (tod >= start || tod < end);
}

std::int64_t toMs(date::sys_seconds s) { return static_cast<std::int64_t>(s.time_since_epoch().count()) * 1000; }

// The instant the local clock shows `local_ms` (a whole second). For a time
// in a skipped hour both choices give the change itself.
std::int64_t toSys(const date::time_zone* tz, std::int64_t local_ms, date::choose which) {
  const date::local_seconds ls{std::chrono::seconds(local_ms / 1000)};
  return toMs(tz->to_sys(ls, which));
}

}  // namespace

QuietHours::QuietHours(TimeZoneTablePtr table) : table_(std::move(table)) {
  periods_.resize(table_->size());
  const std::optional<ZoneId> utc = table_->find("Etc/UTC");
  if (utc) utc_ = *utc;
}

const QuietHours::Period& QuietHours::periodAt(ZoneId zone, std::int64_t t_ms) noexcept {
  Period& p = periods_[zone.index()];
  if (t_ms >= p.begin_ms && t_ms < p.end_ms) return p;
  const date::time_zone* tz = table_->impl().zones[zone.index()];
  const date::sys_seconds s{std::chrono::seconds(floorDiv(t_ms, 1000))};
  const date::sys_info info = tz->get_info(s);
  p.begin_ms = std::max(toMs(info.begin), kMinMs);
  p.end_ms = std::min(toMs(info.end), kMaxMs + 1);
  p.offset_ms = static_cast<std::int64_t>(info.offset.count()) * 1000;
  return p;
}

QuietCheck QuietHours::check(ZoneId zone, const QuietWindow& window, WallTime t) noexcept {
  if (window.none() || !window.valid()) return QuietCheck{false, t};
  if (zone.index() >= periods_.size()) zone = utc_;
  const std::int64_t t_ms = std::clamp<std::int64_t>(t.time_since_epoch().count(), kMinMs, kMaxMs);
  const Period& p = periodAt(zone, t_ms);
  if (p.begin_ms > t_ms - kMarginMs || t_ms + kMarginMs >= p.end_ms) return slowCheck(zone, window, t_ms);
  const std::int64_t start = window.start.count() * 1000;
  const std::int64_t end = window.end.count() * 1000;
  const std::int64_t local = t_ms + p.offset_ms;
  const std::int64_t tod = local - floorDiv(local, kDayMs) * kDayMs;
  if (!inWindow(tod, start, end)) return QuietCheck{false, WallTime(std::chrono::milliseconds(t_ms))};
  const std::int64_t wait = tod < end ? end - tod : kDayMs - tod + end;
  return QuietCheck{true, WallTime(std::chrono::milliseconds(t_ms + wait))};
}

// Near an offset change: the window occurrences anchored on the local days
// around t, each [first instant showing start, last instant showing end).
// The union of those intervals is the quiet time; walk to the end of the run
// of intervals that contains t.
QuietCheck QuietHours::slowCheck(ZoneId zone, const QuietWindow& window, std::int64_t t_ms) noexcept {
  const date::time_zone* tz = table_->impl().zones[zone.index()];
  const std::int64_t start = window.start.count() * 1000;
  const std::int64_t end = window.end.count() * 1000;
  const std::int64_t end_day = window.wraps() ? 1 : 0;
  const auto endOfWindowAt = [&](std::int64_t x) {
    const std::int64_t local = x + periodAt(zone, x).offset_ms;
    const std::int64_t d0 = floorDiv(local, kDayMs);
    std::int64_t best = kNone;
    for (std::int64_t d = d0 - 1; d <= d0 + 1; ++d) {
      const std::int64_t s = toSys(tz, d * kDayMs + start, date::choose::earliest);
      if (s > x) continue;
      const std::int64_t e = toSys(tz, (d + end_day) * kDayMs + end, date::choose::latest);
      if (x < e) best = std::max(best, e);
    }
    return best;
  };
  QuietCheck r{false, WallTime(std::chrono::milliseconds(t_ms))};
  std::int64_t cur = t_ms;
  // Occurrences may touch end to start (a 23:59-long window); a handful of
  // steps always reaches open time.
  for (int step = 0; step < 8; ++step) {
    const std::int64_t e = endOfWindowAt(cur);
    if (e == kNone || e > kMaxMs) break;
    r.quiet = true;
    cur = e;
  }
  r.allowed_at = WallTime(std::chrono::milliseconds(cur));
  return r;
}

bool QuietHours::isQuiet(ZoneId zone, const QuietWindow& window, WallTime t) noexcept {
  return check(zone, window, t).quiet;
}

WallTime QuietHours::nextAllowed(ZoneId zone, const QuietWindow& window, WallTime t) noexcept {
  return check(zone, window, t).allowed_at;
}

}  // namespace pacer
