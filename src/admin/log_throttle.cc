#include "admin/log_throttle.h"

namespace pacer::admin {

std::optional<std::uint64_t> LogThrottle::admit(std::string_view kind, MonoTime now) {
  auto it = kinds_.find(kind);
  if (it == kinds_.end()) {
    kinds_.emplace(std::string(kind), Entry{now, 0});
    return 0;
  }
  Entry& e = it->second;
  if (now - e.last < interval_) {
    ++e.suppressed;
    return std::nullopt;
  }
  const std::uint64_t left_out = e.suppressed;
  e = Entry{now, 0};
  return left_out;
}

}  // namespace pacer::admin
