#include "pacer/log_limiter.h"

namespace pacer {

std::optional<std::uint64_t> LogLimiter::admit(std::string_view key, MonoTime now) {
  auto it = entries_.find(std::string(key));
  if (it == entries_.end()) {
    entries_.emplace(std::string(key), Entry{now, 0});
    return 0;
  }
  Entry& e = it->second;
  if (now - e.last < interval_) {
    ++e.held;
    return std::nullopt;
  }
  const std::uint64_t held = e.held;
  e.last = now;
  e.held = 0;
  return held;
}

void LogLimiter::forgetIdle(MonoTime now, Nanos idle) {
  std::erase_if(entries_, [&](const auto& kv) { return kv.second.held == 0 && now - kv.second.last >= idle; });
}

}  // namespace pacer
