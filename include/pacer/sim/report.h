// pacer-sim output: the JSON document, and a table for people.
#pragma once

#include <cstdio>
#include <string>

#include "pacer/sim/simulator.h"

namespace pacer::sim {

// {"tick_ms":..,"campaigns":{id:{"sent","finished_s","per_s","bins",...}},"providers":{..},"wall_ms":..}
void writeJson(std::FILE* out, const SimResult& result, bool bins, double wall_ms);

// One line per campaign and provider: configured rate, achieved rate, sent,
// and when it finished.
std::string summaryTable(const Scenario& scenario, const SimResult& result);

}  // namespace pacer::sim
