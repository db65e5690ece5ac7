// The `pacer-expires-at` header's two forms (include/pacer/message.h).
#include <fmt/format.h>

#include <chrono>

#include "pacer/message.h"

namespace pacer {
namespace {

// Reads exactly `n` digits at s[at]; -1 when they are not all digits.
int digits(std::string_view s, std::size_t at, std::size_t n) {
  if (at + n > s.size()) return -1;
  int v = 0;
  for (std::size_t i = at; i < at + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

bool allDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char ch : s)
    if (ch < '0' || ch > '9') return false;
  return true;
}

// "+hh:mm" / "-hh:mm" at s[at..]: minutes east of UTC, or nullopt.
std::optional<int> offsetMinutes(std::string_view s, std::size_t at) {
  if (s.size() != at + 6 || (s[at] != '+' && s[at] != '-') || s[at + 3] != ':') return std::nullopt;
  const int h = digits(s, at + 1, 2), m = digits(s, at + 4, 2);
  if (h < 0 || m < 0 || h > 23 || m > 59) return std::nullopt;
  return (s[at] == '-' ? -1 : 1) * (h * 60 + m);
}

std::optional<std::int64_t> parseRfc3339(std::string_view s, std::string& why) {
  why = "not an RFC 3339 date-time (2026-11-26T15:30:00Z) nor epoch milliseconds";
  const int year = digits(s, 0, 4), month = digits(s, 5, 2), day = digits(s, 8, 2);
  const int hour = digits(s, 11, 2), minute = digits(s, 14, 2), second = digits(s, 17, 2);
  if (s.size() < 20 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') || s[13] != ':' || s[16] != ':' ||
      year < 0 || month < 0 || day < 0 || hour < 0 || minute < 0 || second < 0)
    return std::nullopt;
  using namespace std::chrono;
  const year_month_day ymd{std::chrono::year{year}, std::chrono::month{static_cast<unsigned>(month)},
                           std::chrono::day{static_cast<unsigned>(day)}};
  if (!ymd.ok() || hour > 23 || minute > 59 || second > 60) {
    why = "a date or time of day that does not exist";
    return std::nullopt;
  }
  std::size_t at = 19;
  std::int64_t millis = 0;
  if (s[at] == '.') {
    std::size_t end = at + 1;
    while (end < s.size() && s[end] >= '0' && s[end] <= '9') ++end;
    if (end == at + 1) return std::nullopt;
    for (std::size_t i = at + 1; i < at + 4; ++i) millis = millis * 10 + (i < end ? s[i] - '0' : 0);
    at = end;
  }
  int offset = 0;
  if (at + 1 == s.size() && (s[at] == 'Z' || s[at] == 'z')) {
    offset = 0;
  } else if (auto o = offsetMinutes(s, at)) {
    offset = *o;
  } else {
    return std::nullopt;
  }
  const auto t = sys_days{ymd} + hours{hour} + minutes{minute - offset} + seconds{std::min(second, 59)};
  return duration_cast<milliseconds>(t.time_since_epoch()).count() + millis;
}

}  // namespace

std::optional<std::int64_t> parseDeadline(std::string_view text, std::string& why) {
  if (allDigits(text)) {
    if (text.size() > 15) {
      why = "epoch milliseconds of more than 15 digits";
      return std::nullopt;
    }
    std::int64_t v = 0;
    for (char ch : text) v = v * 10 + (ch - '0');
    if (v == 0) {
      why = "epoch milliseconds must be above 0";
      return std::nullopt;
    }
    return v;
  }
  auto v = parseRfc3339(text, why);
  if (v && *v <= 0) {
    why = "a deadline at or before 1970-01-01T00:00:00Z";
    return std::nullopt;
  }
  return v;
}

std::string formatDeadline(std::int64_t epoch_ms) {
  using namespace std::chrono;
  const sys_time<milliseconds> at{milliseconds{epoch_ms}};
  const auto day = floor<days>(at);
  const year_month_day ymd{day};
  const hh_mm_ss<milliseconds> hms{at - day};
  return fmt::format("{:04d}-{:02d}-{:02d}T{:02d}:{:02d}:{:02d}.{:03d}Z", static_cast<int>(ymd.year()),
                     static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()), hms.hours().count(),
                     hms.minutes().count(), hms.seconds().count(), hms.subseconds().count());
}

}  // namespace pacer
