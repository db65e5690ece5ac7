// pacer-sim scenarios: what to simulate. Parsed from YAML (JSON is valid
// YAML); every problem is reported as a ScenarioError naming the field.
#pragma once

#include "pacer/error.h"

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "pacer/rate_limiter.h"

namespace pacer::sim {

class ScenarioError : public InvalidError {
 public:
  using InvalidError::InvalidError;
};

struct Stall {
  double from_s = 0;
  double to_s = 0;
};

struct ProviderScenario {
  std::string id;
  std::optional<double> rate;  // messages/s; nullopt = unlimited
  double burst = 1;
};

struct CampaignScenario {
  std::string id;
  std::optional<std::string> provider;
  std::optional<double> rate;
  double burst = 1;
  double weight = 1;
  std::optional<std::uint64_t> messages;  // nullopt = backlogged all run
  double start_s = 0;
};

struct Scenario {
  double duration_s = 0;
  double tick_ms = 10;
  std::optional<double> capacity_per_s;  // nullopt = unlimited
  Algorithm algorithm = Algorithm::kTokenBucket;
  double window_s = 1;
  std::vector<Stall> stalls;
  std::vector<ProviderScenario> providers;
  std::vector<CampaignScenario> campaigns;
};

// Default burst when a scenario gives none: one tick of tokens plus one, the
// least that lets a backlogged token bucket reach its full rate at this tick.
double defaultBurst(double rate_per_s, double tick_ms);

Scenario parseScenario(const std::string& yaml_text);
Scenario loadScenario(const std::string& path);

}  // namespace pacer::sim
