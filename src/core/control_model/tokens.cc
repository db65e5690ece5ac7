#include "pacer/control/tokens.h"

#include <fmt/format.h>

#include <cctype>

#include "pacer/control/values.h"

namespace pacer::control {
namespace {

std::string csvField(std::string_view s) {
  if (s.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + '"';
}

// Reads `n` digits at `pos` into `value`; false when they are not there.
bool digits(std::string_view s, std::size_t& pos, int n, int& value) {
  if (pos + static_cast<std::size_t>(n) > s.size()) return false;
  value = 0;
  for (int i = 0; i < n; ++i) {
    const char c = s[pos++];
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    value = value * 10 + (c - '0');
  }
  return true;
}

bool expect(std::string_view s, std::size_t& pos, char c) {
  if (pos >= s.size() || s[pos] != c) return false;
  ++pos;
  return true;
}

int daysIn(int year, int month) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  return month == 2 && leap ? 29 : kDays[month - 1];
}

// The clock part after the date ("T08:00", "T08:00:05.25"), appended to `out`.
bool clock(std::string_view s, std::size_t& pos, std::string& out) {
  int h = 0, m = 0, sec = 0;
  if (!digits(s, pos, 2, h) || !expect(s, pos, ':') || !digits(s, pos, 2, m) || h > 23 || m > 59) return false;
  std::string fraction;
  if (pos < s.size() && s[pos] == ':') {
    ++pos;
    if (!digits(s, pos, 2, sec) || sec > 59) return false;
    if (pos < s.size() && s[pos] == '.') {
      fraction = ".";
      ++pos;
      while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) fraction += s[pos++];
      if (fraction.size() == 1) return false;
    }
  }
  out += fmt::format("T{:02}:{:02}:{:02}{}", h, m, sec, fraction);
  return true;
}

// Z, +HH:MM or -HH:MM (or nothing: UTC), appended to `out`.
bool zone(std::string_view s, std::size_t& pos, std::string& out) {
  if (pos == s.size() || (s[pos] == 'Z' && pos + 1 == s.size())) {
    out += 'Z';
    pos = s.size();
    return true;
  }
  const char sign = s[pos++];
  int h = 0, m = 0;
  if ((sign != '+' && sign != '-') || !digits(s, pos, 2, h) || !expect(s, pos, ':') || !digits(s, pos, 2, m) ||
      h > 14 || m > 59 || pos != s.size())
    return false;
  out += fmt::format("{}{:02}:{:02}", sign, h, m);
  return true;
}

}  // namespace

std::string tokenCsvHeader() { return "provider,token,reason,first_seen,last_seen,provider_timestamp,campaign,hits\n"; }

std::string tokenCsvLine(const InvalidTokenRow& r) {
  return fmt::format("{},{},{},{},{},{},{},{}\n", csvField(r.provider), csvField(r.token), csvField(r.reason),
                     csvField(r.first_seen), csvField(r.last_seen), csvField(r.provider_timestamp),
                     csvField(r.campaign), r.hits);
}

Json tokenJson(const InvalidTokenRow& r) {
  return Json{{"provider", r.provider},
              {"token", r.token},
              {"reason", r.reason},
              {"first_seen", r.first_seen},
              {"last_seen", r.last_seen},
              {"provider_timestamp", r.provider_timestamp.empty() ? Json(nullptr) : Json(r.provider_timestamp)},
              {"campaign", r.campaign},
              {"hits", r.hits}};
}

std::string parseSinceTime(std::string_view text, std::string_view flag) {
  std::size_t pos = 0;
  int year = 0, month = 0, day = 0;
  std::string out;
  bool ok = digits(text, pos, 4, year) && expect(text, pos, '-') && digits(text, pos, 2, month) &&
            expect(text, pos, '-') && digits(text, pos, 2, day) && year >= 1 && month >= 1 && month <= 12 && day >= 1 &&
            day <= daysIn(year, month);
  if (ok) {
    out = fmt::format("{:04}-{:02}-{:02}", year, month, day);
    if (pos < text.size() && (text[pos] == 'T' || text[pos] == 't' || text[pos] == ' ')) {
      ++pos;
      ok = clock(text, pos, out);
    } else {
      out += "T00:00:00";
    }
  }
  ok = ok && zone(text, pos, out);
  if (!ok)
    throw InvalidValueError(
        fmt::format("{}: '{}' is not a time; give an ISO 8601 time such as 2026-11-23, 2026-11-23T08:00:00Z or "
                    "2026-11-23T09:00:00+01:00 (no zone: UTC)",
                    flag, text));
  return out;
}

}  // namespace pacer::control
