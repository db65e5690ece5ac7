// Properties of QuietHours over every minute around each UTC-offset change
// of 2024 in 28 zones (plus Samoa's skipped day in 2011 and random days),
// for fixed and random windows. The oracle for "what does the recipient's
// clock show" is glibc's localtime_r with TZ set, not the date library that
// QuietHours uses.
//   1. Never allowed while the local clock shows a time inside the window.
//   2. check(t).allowed_at is the first allowed minute at or after t (all
//      window and offset boundaries fall on whole minutes, so a minute grid
//      is exact), and is itself allowed; the same for instants inside a minute.
//   3. Quiet while the clock is outside the window only within a day of an
//      offset change (the repeated-hour rule), never elsewhere.
#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "pacer/quiet_hours.h"

namespace pacer {
namespace {

using std::chrono::minutes;

constexpr const char* kZones[] = {
    "America/New_York", "America/Los_Angeles", "America/Chicago",     "America/Phoenix", "America/Santiago",
    "America/St_Johns", "America/Havana",      "America/Sao_Paulo",   "America/Nuuk",    "Europe/London",
    "Europe/Berlin",    "Europe/Dublin",       "Europe/Moscow",       "Africa/Cairo",    "Africa/Casablanca",
    "Asia/Kolkata",     "Asia/Kathmandu",      "Asia/Tehran",         "Asia/Tokyo",      "Asia/Gaza",
    "Australia/Sydney", "Australia/Adelaide",  "Australia/Lord_Howe", "Pacific/Chatham", "Pacific/Auckland",
    "Pacific/Apia",     "Antarctica/Troll",    "Pacific/Kiritimati"};

// The local clock in `zone` through glibc (TZ + tzset), minute resolution.
class LibcClock {
 public:
  explicit LibcClock(const std::string& zone) {
    const char* old = std::getenv("TZ");
    if (old) saved_ = old;
    had_ = old != nullptr;
    setenv("TZ", zone.c_str(), 1);
    tzset();
  }
  ~LibcClock() {
    if (had_)
      setenv("TZ", saved_.c_str(), 1);
    else
      unsetenv("TZ");
    tzset();
  }
  // Seconds after local midnight, and the UTC offset in seconds.
  std::pair<int, long> at(std::time_t t) const {
    std::tm tm{};
    localtime_r(&t, &tm);
    return {tm.tm_hour * 3600 + tm.tm_min * 60 + tm.tm_sec, tm.tm_gmtoff};
  }

 private:
  std::string saved_;
  bool had_ = false;
};

std::time_t toTimeT(WallTime t) {
  return static_cast<std::time_t>(std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count());
}

WallTime fromTimeT(std::time_t t) { return WallTime(std::chrono::seconds(t)); }

bool clockInside(int tod, const QuietWindow& w) {
  const int s = static_cast<int>(w.start.count()), e = static_cast<int>(w.end.count());
  return s < e ? (tod >= s && tod < e) : (tod >= s || tod < e);
}

// Offset changes of `year` (the first minute of each new offset).
std::vector<std::time_t> changes(const LibcClock& clock, int year) {
  std::vector<std::time_t> out;
  const std::chrono::sys_days from{std::chrono::year{year} / 1 / 1};
  std::time_t t = toTimeT(WallTime(from));
  const std::time_t end = t + 366 * 86400;
  long off = clock.at(t).second;
  for (; t < end; t += 3600) {
    const long now_off = clock.at(t + 3600).second;
    if (now_off == off) continue;
    std::time_t m = t;  // the first minute of the new offset inside this hour
    while (clock.at(m).second == off) m += 60;
    out.push_back(m);
    off = now_off;
  }
  return out;
}

struct Failures {
  int count = 0;
  std::string first;
  void add(const std::string& what) {
    if (count++ < 5) first += what + "\n";
  }
};

// Checks the three properties on every minute of [from, to).
void checkSpan(QuietHours& quiet, ZoneId zone, const std::string& name, const LibcClock& clock, const QuietWindow& w,
               std::time_t from, std::time_t to, std::mt19937_64& rng, Failures& f, std::uint64_t& checked) {
  const std::time_t margin = 86400 + 3600;
  std::vector<long> offset;  // per minute of [from - margin, to + margin + a day)
  const std::time_t grid0 = from - margin;
  for (std::time_t t = grid0; t < to + margin + 86400; t += 60) offset.push_back(clock.at(t).second);
  const auto offsetChangeNear = [&](std::time_t t) {
    const std::size_t lo = static_cast<std::size_t>((t - 86400 - grid0) / 60);
    const std::size_t hi = static_cast<std::size_t>((t + 86400 - grid0) / 60);
    for (std::size_t i = lo; i < hi; ++i)
      if (offset[i] != offset[lo]) return true;
    return false;
  };
  // Quietness of every minute up to a day past `to`, so the first allowed
  // minute after each one is known.
  std::vector<char> q;
  for (std::time_t t = from; t < to + 86400 + 3600; t += 60) q.push_back(quiet.isQuiet(zone, w, fromTimeT(t)));
  std::vector<std::time_t> next_open(q.size(), -1);
  for (std::size_t i = q.size(); i-- > 0;)
    next_open[i] = !q[i] ? from + static_cast<std::time_t>(i) * 60 : (i + 1 < q.size() ? next_open[i + 1] : -1);
  const std::string where = name + " " + formatQuietWindow(w);
  std::uniform_int_distribution<int> ms_in_minute(1, 59'999);
  for (std::time_t t = from; t < to; t += 60) {
    const std::size_t i = static_cast<std::size_t>((t - from) / 60);
    const bool inside = clockInside(clock.at(t).first, w);
    if (inside && !q[i]) f.add(where + ": allowed while the clock is inside, t=" + std::to_string(t));
    if (!inside && q[i] && !offsetChangeNear(t))
      f.add(where + ": quiet outside the window far from any change, t=" + std::to_string(t));
    const QuietCheck c = quiet.check(zone, w, fromTimeT(t));
    if (c.quiet != static_cast<bool>(q[i])) f.add(where + ": check and isQuiet disagree, t=" + std::to_string(t));
    if (next_open[i] >= 0 && c.allowed_at != fromTimeT(next_open[i]))
      f.add(where + ": allowed_at is not the first allowed minute, t=" + std::to_string(t));
    if (quiet.isQuiet(zone, w, c.allowed_at)) f.add(where + ": allowed_at is quiet, t=" + std::to_string(t));
    // An instant inside the minute behaves like the minute.
    const WallTime mid = fromTimeT(t) + std::chrono::milliseconds(ms_in_minute(rng));
    const QuietCheck cm = quiet.check(zone, w, mid);
    const WallTime want = q[i] ? c.allowed_at : mid;
    if (cm.quiet != static_cast<bool>(q[i]) || cm.allowed_at != want)
      f.add(where + ": instant inside a minute differs, t=" + std::to_string(t));
    checked += 3;
  }
}

TEST(QuietHoursProperty, NeverAllowedInsideAndNextAllowedIsTheFirstAllowedInstant) {
  const TimeZoneTablePtr table = TimeZoneTable::loadSystem();
  QuietHours quiet(table);
  std::mt19937_64 rng(20240310);
  std::uniform_int_distribution<int> minute_of_day(0, 1439);
  const std::vector<QuietWindow> fixed = {{std::chrono::hours(21), std::chrono::hours(8)},
                                          {std::chrono::hours(22), minutes(150)},
                                          {minutes(90), std::chrono::hours(6)},
                                          {std::chrono::hours(0), std::chrono::hours(6)},
                                          {minutes(23 * 60 + 30), minutes(60)},
                                          {minutes(120), minutes(180)},
                                          {minutes(23 * 60 + 59), minutes(23 * 60 + 58)}};
  Failures f;
  std::uint64_t checked = 0;
  int zones = 0;
  int spans = 0;
  for (const char* name : kZones) {
    const std::optional<ZoneId> zone = table->find(name);
    ASSERT_TRUE(zone) << name;
    ++zones;
    LibcClock clock(name);
    std::vector<std::pair<std::time_t, std::time_t>> periods;
    for (const std::time_t c : changes(clock, 2024)) periods.emplace_back(c - 2 * 86400, c + 2 * 86400);
    if (std::string(name) == "Pacific/Apia")
      for (const std::time_t c : changes(clock, 2011)) periods.emplace_back(c - 2 * 86400, c + 2 * 86400);
    // And a random day of 2024 (mostly far from any change: the fast path).
    const std::time_t y2024 = toTimeT(WallTime(std::chrono::sys_days{std::chrono::year{2024} / 1 / 1}));
    const std::time_t day = y2024 + std::uniform_int_distribution<int>(0, 364)(rng) * 86400;
    periods.emplace_back(day, day + 86400);
    for (const auto& [from, to] : periods) {
      std::vector<QuietWindow> windows = fixed;
      for (int k = 0; k < 3; ++k)
        windows.push_back(QuietWindow{minutes(minute_of_day(rng)), minutes(minute_of_day(rng))});
      for (const QuietWindow& w : windows) checkSpan(quiet, *zone, name, clock, w, from, to, rng, f, checked);
      ++spans;
    }
  }
  EXPECT_GE(zones, 24);
  EXPECT_GT(spans, 60);  // the DST zones contribute two changes each
  EXPECT_EQ(f.count, 0) << f.first;
  RecordProperty("instants_checked", std::to_string(checked));
}

}  // namespace
}  // namespace pacer
