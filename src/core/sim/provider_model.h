// A provider on a bad day, in the simulation: what it really takes (a strict
// sliding one-second window of accepted requests), what it refuses at random
// (throttles and faults unrelated to the rate), and the controller a worker
// runs against it (the throttle judge with the adaptive rate, the old
// decrease on every throttle, or none). Pure: answers come from a seeded
// generator and the time it is given.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <random>
#include <vector>

#include "pacer/adaptive_rate.h"
#include "pacer/sim/scenario.h"
#include "pacer/throttle_judge.h"

namespace pacer::sim {

class ProviderModel {
 public:
  enum class Answer : std::uint8_t { kAccepted, kThrottled, kFault };

  ProviderModel(const ProviderScenario& p, MonoTime now);

  // One request at `now`; the controller hears the answer.
  Answer send(MonoTime now);
  // The provider limit the worker applies now (the adaptive rate, its burst
  // scaled with it).
  RateLimit limit(MonoTime now);
  // The controller paused the provider (kPerThrottle only).
  bool paused(MonoTime now) const { return now < paused_until_; }
  double effectiveRate(MonoTime now) { return adaptive_.rate(now); }
  // What the provider takes at most, per second: min(rate x (1 - noise), capacity).
  double wouldAccept() const;
  // The judges' figures, summed (noise: the first judge's).
  std::uint64_t capacityVerdicts() const;
  std::uint64_t noiseVerdicts() const;
  double noise() const { return judges_.front().noise(); }

 private:
  void control(MonoTime now, Answer a);

  const ProviderScenario& p_;
  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> u_{0.0, 1.0};
  std::deque<MonoTime> window_;  // accepted in the last second
  AdaptiveRate adaptive_;
  std::vector<ThrottleJudge> judges_;  // one per worker, answers in turn
  std::size_t next_judge_ = 0;
  MonoTime paused_until_{};
};

}  // namespace pacer::sim
