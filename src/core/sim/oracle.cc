#include "oracle.h"

#include <cstdlib>
#include <ctime>
#include <optional>

namespace pacer::sim {

void CapOracle::sent(std::uint64_t recipient, std::int64_t at_ms) {
  std::vector<std::int64_t>& q = recent_[recipient];
  const std::int64_t window_ms = rule_.window.count();
  std::size_t gone = 0;
  while (gone < q.size() && q[gone] + window_ms <= at_ms) ++gone;
  q.erase(q.begin(), q.begin() + static_cast<std::ptrdiff_t>(gone));
  q.push_back(at_ms);
  if (q.size() > rule_.limit) over_.insert(recipient);
}

namespace {

bool insideLocal(const std::tm& local, const QuietWindow& w) {
  const std::int64_t s = local.tm_hour * 3600 + local.tm_min * 60 + local.tm_sec;
  const std::int64_t a = w.start.count();
  const std::int64_t b = w.end.count();
  if (a == b) return false;
  return a < b ? (s >= a && s < b) : (s >= a || s < b);
}

}  // namespace

std::uint64_t sendsInQuietWindow(const std::vector<std::string>& zones, const QuietWindow& window,
                                 const std::vector<std::vector<SendRun>>& sends) {
  const char* old = std::getenv("TZ");
  const std::optional<std::string> saved = old ? std::optional<std::string>(old) : std::nullopt;
  std::uint64_t inside = 0;
  for (std::size_t z = 0; z < zones.size() && z < sends.size(); ++z) {
    if (sends[z].empty()) continue;
    ::setenv("TZ", zones[z].c_str(), 1);
    ::tzset();
    for (const auto& [ms, count] : sends[z]) {
      // Floor to whole seconds: 07:59:59.5 is still before 08:00.
      const std::time_t t = static_cast<std::time_t>(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
      std::tm local{};
      ::localtime_r(&t, &local);
      if (insideLocal(local, window)) inside += count;
    }
  }
  if (saved) {
    ::setenv("TZ", saved->c_str(), 1);
  } else {
    ::unsetenv("TZ");
  }
  ::tzset();
  return inside;
}

}  // namespace pacer::sim
