// The rolling-window count behind every FrequencyCapStore, on one
// (recipient, scope)'s sorted send stamps. src/frequency_cap_redis/
// frequency_cap.lua does the same steps in Redis; the integration tests check
// that the two agree decision by decision.
#pragma once

#include <cstdint>
#include <vector>

namespace pacer::rules {

struct CapStep {
  bool allowed = false;
  std::int64_t at_ms = 0;  // allowed: the stamp counted (now); capped: when it would be allowed
  std::uint32_t in_window = 0;
};

// `stamps` ascending, in ms. Drops the stamps at or before now - window
// (they no longer count), then: fewer than `limit` left -> add `now` in
// order, allowed; else capped until the limit-th newest stamp leaves the
// window. Stamps after `now` (a caller whose clock is behind another's)
// count like any other. limit >= 1, window >= 1.
CapStep applyCap(std::vector<std::int64_t>& stamps, std::int64_t now_ms, std::uint32_t limit, std::int64_t window_ms);

// Removes one stamp equal to `stamp`; false if there is none.
bool releaseStamp(std::vector<std::int64_t>& stamps, std::int64_t stamp);

}  // namespace pacer::rules
