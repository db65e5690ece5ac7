// pacer-sim scenarios: what to simulate. Parsed from YAML (JSON is valid
// YAML); every problem is reported as a ScenarioError naming the field.
#pragma once

#include "pacer/error.h"

#include <algorithm>
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

// How a modelled provider's configured rate follows its answers.
enum class ProviderController : std::uint8_t {
  kJudged,       // pacerd's: ThrottleJudge tells a ceiling from noise, AdaptiveRate follows (the default)
  kPerThrottle,  // every throttle lowers the rate and pauses the provider (pacerd before the judge)
  kFixed,        // the configured rate, whatever the answers
};

struct ProviderScenario {
  std::string id;
  std::optional<double> rate;  // messages/s; nullopt = unlimited
  double burst = 1;
  // A provider on a bad day (docs/tools.md); modelled when any is set.
  std::optional<double> capacity;  // it accepts at most this many in any sliding second; nullopt: no ceiling
  double throttle_noise = 0;       // share of requests throttled at random, whatever the rate, in [0, 1)
  double fault_noise = 0;          // share answered as a fault (5xx, ESME_RSYSERR) at random, in [0, 1)
  ProviderController controller = ProviderController::kJudged;
  double retry_s = 1;              // a refused message waits this long for its retry
  std::uint64_t seed = 1;          // of its random answers
  std::uint32_t workers = 1;       // judges sharing the one rate (pacerd workers through Redis), answers in turn
  // Windows [from_s, to_s) in which it is out (binds refused, breaker open):
  // it takes nothing, and campaigns that name a next provider move to it.
  std::vector<Stall> outages;

  bool modelled() const { return capacity.has_value() || throttle_noise > 0 || fault_noise > 0; }
};

struct CampaignScenario {
  std::string id;
  std::optional<std::string> provider;
  // The ordered failover list after `provider` (`provider: [a, b]`): while a
  // provider is out, traffic goes to the first of the list that is not.
  std::vector<std::string> fallbacks;
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
  // Expiry (docs/expiry.md): the campaign's default lifetime (default_ttl_ms)
  // and the lifetime each message's own deadline gives it (pacer-expires-at),
  // both counted from the message's arrival; the earlier deadline wins.
  std::optional<double> ttl_s;
  std::optional<double> message_ttl_s;

  std::optional<double> lifetimeS() const {
    if (ttl_s && message_ttl_s) return std::min(*ttl_s, *message_ttl_s);
    return ttl_s ? ttl_s : message_ttl_s;
  }
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
