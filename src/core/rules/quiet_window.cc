// Parsing and printing quiet windows ("21:00-08:00").
#include <charconv>
#include <cstdio>
#include <string>

#include "pacer/quiet_hours.h"

namespace pacer {
namespace {

constexpr int kDaySeconds = 86'400;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// "HH:MM" or "HH:MM:SS", two digits each -> seconds after midnight; 24:00
// only when `end` (it means the next midnight, stored as 0).
std::optional<int> parseClock(std::string_view s, bool end) {
  if (s.size() != 5 && s.size() != 8) return std::nullopt;
  int parts[3] = {0, 0, 0};
  const int n = s.size() == 5 ? 2 : 3;
  for (int i = 0; i < n; ++i) {
    const std::string_view two = s.substr(static_cast<std::size_t>(i) * 3, 2);
    if (two.size() != 2 || two[0] < '0' || two[0] > '9' || two[1] < '0' || two[1] > '9') return std::nullopt;
    std::from_chars(two.data(), two.data() + 2, parts[i]);
    if (i + 1 < n && s[static_cast<std::size_t>(i) * 3 + 2] != ':') return std::nullopt;
  }
  if (parts[1] > 59 || parts[2] > 59) return std::nullopt;
  if (parts[0] == 24 && end && parts[1] == 0 && parts[2] == 0) return 0;
  if (parts[0] > 23) return std::nullopt;
  return parts[0] * 3600 + parts[1] * 60 + parts[2];
}

std::string formatClock(std::chrono::seconds s) {
  const long v = static_cast<long>(s.count());
  char buf[64];  // room for any long, so the compiler can prove no truncation
  const long h = v / 3600, m = v / 60 % 60, sec = v % 60;
  if (sec != 0)
    std::snprintf(buf, sizeof buf, "%02ld:%02ld:%02ld", h, m, sec);
  else
    std::snprintf(buf, sizeof buf, "%02ld:%02ld", h, m);
  return buf;
}

}  // namespace

bool QuietWindow::valid() const noexcept {
  return start.count() >= 0 && start.count() < kDaySeconds && end.count() >= 0 && end.count() < kDaySeconds;
}

QuietWindowParse parseQuietWindow(std::string_view text) {
  QuietWindowParse r;
  const std::string_view t = trim(text);
  if (t.empty() || t == "none") {
    r.window = QuietWindow{};
    return r;
  }
  const std::size_t dash = t.find('-');
  const auto bad = [&](std::string_view why) {
    r.error = "quiet window '" + std::string(text) + "': " + std::string(why);
    return r;
  };
  if (dash == std::string_view::npos) return bad("expected HH:MM-HH:MM, e.g. 21:00-08:00");
  const std::optional<int> start = parseClock(trim(t.substr(0, dash)), false);
  const std::optional<int> end = parseClock(trim(t.substr(dash + 1)), true);
  if (!start) return bad("the start is not a time of day HH:MM (00:00 to 23:59)");
  if (!end) return bad("the end is not a time of day HH:MM (00:00 to 24:00)");
  r.window = QuietWindow{std::chrono::seconds(*start), std::chrono::seconds(*end)};
  return r;
}

std::string formatQuietWindow(const QuietWindow& window) {
  if (window.none()) return "none";
  return formatClock(window.start) + "-" + formatClock(window.end);
}

}  // namespace pacer
