#include "strict_window.h"

#include <algorithm>

namespace pacer::fake {

bool StrictWindow::tryAdmit(MonoTime now) {
  now = std::max(now, last_);
  last_ = now;
  // An admission at t still counts at now while now - t < 1 s.
  while (!admitted_.empty() && now - admitted_.front() >= std::chrono::seconds(1)) admitted_.pop_front();
  if (limit_ != 0 && admitted_.size() >= limit_) return false;
  admitted_.push_back(now);
  busiest_ = std::max<std::uint64_t>(busiest_, admitted_.size());
  return true;
}

}  // namespace pacer::fake
