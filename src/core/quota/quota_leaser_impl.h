// QuotaLeaser's per-provider and per-campaign state, shared by the files
// that implement it (quota_setup.cc: registration and limits; quota_lease.cc:
// the lease cycle, degraded mode and reports; lease_limiter.cc: the limiter
// that spends leases). Private to src/core/quota.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "pacer/quota_lease.h"

namespace pacer::quota_detail {

inline double secs(Nanos d) { return std::chrono::duration<double>(d).count(); }

// While the quota does not answer, a provider's campaigns ask again this often.
inline constexpr Nanos kUnavailableRetry = std::chrono::milliseconds(50);

inline Nanos fromSecs(double s) {
  if (!(s < 1e9)) return kNever;
  return std::chrono::duration_cast<Nanos>(std::chrono::duration<double>(std::max(0.0, s)));
}

}  // namespace pacer::quota_detail

namespace pacer {

struct QuotaLeaser::Provider {
  std::string name;
  std::optional<RateLimit> limit;
  DegradedMode mode = DegradedMode::kLocalShare;
  bool degraded = false;
  ProviderId local = kNoProvider;  // the scheduler's provider it applies locally
  MonoTime local_from{};           // degraded: the local shares give nothing before this
  MonoTime unavailable_until{};    // degraded: do not ask again before this
  bool own = false;                // the scope of one campaign without a provider
  std::vector<CampaignId> campaigns;
  // Per priority rank of its campaigns:
  struct Rank {
    // The provider's bucket refused a grant: none of this rank's campaigns
    // (nor a lower rank's) asks before this (they come back together, in one batch).
    MonoTime retry_at{};
    double active_weight = 0;            // this worker's active campaigns, by weight (per refresh)
    std::uint64_t target = 0, held = 0;  // summed over its eligible active campaigns (per refresh)
  };
  std::array<Rank, kMaxPriorityRanks> ranks;
  bool asking = false;  // one of its campaigns asks in this batch (per refresh)
  std::optional<AdaptiveRateOptions> adaptive;
  BreakerOptions breaker;
  Nanos report{-1};                  // a throttle to report with the next refresh (< 0: none)
  double keep = 0;                   // with it, the judged fraction kept (0: the fixed decrease)
  double restore = 0;                // the last judged cut was noise: restore the limit (its keep; 0: none)
  std::uint64_t ok = 0, faults = 0;  // answers not yet reported to the breaker
  MonoTime reported_at{};            // the last report of answers
  std::optional<double> effective;   // the shared rate, as last heard
  MonoTime paused_until{};           // the shared pause, as last heard
  bool circuit_open = false;         // as last heard
  std::uint32_t workers = 0;         // workers asking for it, as last heard
  bool judge = false;                // this worker judges its throttles for all, as last heard
  double shared_noise = 0;           // the judge's noise level, as last heard
  double noise_report = -1;          // this worker's judge's noise level to send (< 0: none)
  AcceptedRates own_rates;           // this worker's answers per second, sent with every request
  AcceptedRates wide_rates;          // the provider's, as last heard
  double recipient_elsewhere = 0;    // its throttles of one recipient at the other workers, as last heard
  // Its rate adapts in the quota (an adaptive level beside its bucket).
  bool adapts() const { return adaptive && limit && limit->rate_per_s > 0; }
};

struct QuotaLeaser::Campaign {
  bool alive = false;
  std::string name;
  std::optional<RateLimit> limit;
  double weight = 1.0;
  std::uint32_t provider = 0;
  LeaseLimiter* lease = nullptr;   // owned by the scheduler; null: no global limit applies
  LeaseRequest request;            // scope and levels, kept ready
  double min_rate = 0.0;           // the tightest level's configured rate
  MonoTime retry_at{};             // do not ask before this (the quota refused a grant)
  std::uint64_t expired_seen = 0;  // lease->expired() already counted in the metrics
  std::uint64_t late_seen = 0;     // lease->late() likewise
  int provider_level = -1;         // index of the provider's level in request.levels, or -1
  std::uint32_t rank = 0;          // its priority class's rank
};

}  // namespace pacer
