// Runs the real scheduler and limiters over a scenario on simulated time.
// Pure: no clock reads, no I/O; the caller times the run if it wants to.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pacer/sim/scenario.h"

namespace pacer::sim {

struct SeriesResult {
  std::string id;
  std::optional<double> rate;
  double burst = 1;
  std::uint64_t sent = 0;
  std::optional<double> finished_s;  // when the last message went (finite campaigns)
  std::vector<std::uint64_t> per_s;  // sends in each simulated second
  std::vector<std::uint64_t> bins;   // sends in each tick (only when asked for)
};

struct SimResult {
  double tick_ms = 0;
  std::uint64_t ticks = 0;
  std::vector<SeriesResult> campaigns;  // in scenario order
  std::vector<SeriesResult> providers;
};

// Throws ScenarioError (naming the fields) when the result would need more
// than about 4 GiB, or when the scheduler refuses a campaign or provider.
SimResult simulate(const Scenario& scenario, bool keep_bins);

}  // namespace pacer::sim
