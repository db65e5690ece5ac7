// Independent checks of what the simulated recipient rules let through: they
// do not use the cap store or QuietHours, so a bug there shows as a count
// above zero in the report.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "pacer/campaign_rules.h"
#include "pacer/quiet_hours.h"

namespace pacer::sim {

// Counts recipients that were sent more than the cap's limit within any
// rolling window (a send at t counts in [t, t + window)).
class CapOracle {
 public:
  explicit CapOracle(FrequencyCapRule rule) : rule_(rule) {}
  void sent(std::uint64_t recipient, std::int64_t at_ms);
  std::uint64_t recipientsOverCap() const { return over_.size(); }

 private:
  FrequencyCapRule rule_;
  std::unordered_map<std::uint64_t, std::vector<std::int64_t>> recent_;  // sends still in the window (<= limit + 1)
  std::unordered_set<std::uint64_t> over_;
};

// Sends at one instant: UTC ms since 1970, and how many.
struct SendRun {
  std::int64_t at_ms = 0;
  std::uint64_t count = 0;
};

// How many of the sends (by zone index) fall inside the window in their
// zone's local time, per glibc's localtime_r with TZ set to the zone. Sets
// TZ and restores it: call from one thread only.
std::uint64_t sendsInQuietWindow(const std::vector<std::string>& zones, const QuietWindow& window,
                                 const std::vector<std::vector<SendRun>>& sends);

}  // namespace pacer::sim
