// pacer-sim scenarios: what to simulate. Parsed from YAML (JSON is valid
// YAML); every problem is reported as a ScenarioError naming the field.
#pragma once

#include "pacer/error.h"

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "pacer/campaign_rules.h"
#include "pacer/quiet_hours.h"
#include "pacer/rate_limiter.h"
#include "pacer/wall_time.h"

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
  // Recipient rules (docs/recipient-rules.md), all optional.
  std::string class_name;      // a name from Scenario::classes
  std::uint32_t priority = 0;  // its rank there (CampaignSpec::priority)
  // Messages arrive at this steady rate from start_s (up to `messages` when
  // set) instead of being a backlog from the start.
  std::optional<double> arrival_per_s;
  std::uint64_t recipients = 0;  // message n goes to recipient n % recipients; 0: not modelled
  std::optional<FrequencyCapRule> cap;
  CapPolicy cap_policy = CapPolicy::kSuppress;
  std::optional<QuietWindow> quiet_hours;
  std::vector<std::string> time_zones;  // message n is in zone n % size; ["UTC"] with quiet hours and none given
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
  // Priority classes, highest first; a campaign's rank is its class's index.
  std::vector<std::string> classes{"critical", "transactional", "bulk"};
  // The wall-clock instant of simulated time 0 (quiet hours, caps).
  WallTime start_utc = kDefaultStartUtc;
  // Loaded when a campaign names time zones; null otherwise.
  TimeZoneTablePtr zones;

  static constexpr WallTime kDefaultStartUtc{std::chrono::milliseconds{1704067200000}};  // 2024-01-01T00:00:00Z
};

// Default burst when a scenario gives none: one tick of tokens plus one, the
// least that lets a backlogged token bucket reach its full rate at this tick.
double defaultBurst(double rate_per_s, double tick_ms);

Scenario parseScenario(const std::string& yaml_text);
Scenario loadScenario(const std::string& path);

}  // namespace pacer::sim
