#include "cap_window.h"

#include <algorithm>

namespace pacer::rules {

CapStep applyCap(std::vector<std::int64_t>& stamps, std::int64_t now_ms, std::uint32_t limit, std::int64_t window_ms) {
  const std::int64_t from = now_ms - window_ms;
  const auto first_live = std::upper_bound(stamps.begin(), stamps.end(), from);
  stamps.erase(stamps.begin(), first_live);
  const std::size_t k = stamps.size();
  if (k >= limit) {
    // The send is allowed at t once fewer than `limit` stamps are in
    // (t - window, t]: when the limit-th newest stamp s has s <= t - window.
    return CapStep{false, stamps[k - limit] + window_ms, static_cast<std::uint32_t>(k)};
  }
  stamps.insert(std::upper_bound(stamps.begin(), stamps.end(), now_ms), now_ms);
  return CapStep{true, now_ms, static_cast<std::uint32_t>(k + 1)};
}

bool releaseStamp(std::vector<std::int64_t>& stamps, std::int64_t stamp) {
  const auto it = std::lower_bound(stamps.begin(), stamps.end(), stamp);
  if (it == stamps.end() || *it != stamp) return false;
  stamps.erase(it);
  return true;
}

}  // namespace pacer::rules
