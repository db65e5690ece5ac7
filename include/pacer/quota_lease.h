// Leases: how a worker spends a global quota without a Redis round trip per
// message.
//
// Each tick, before Scheduler::tick(), QuotaLeaser::refresh(now) looks at the
// worker's active campaigns and, in ONE batch call to the QuotaBackend (one
// pipelined round trip for Redis), asks for a lease for every campaign whose
// local tokens have run low. A lease is sized to the campaign's backlog and to
// this worker's share of the tightest rate that applies:
//
//     target = ceil(min(level rates) / live_workers * horizon)
//     want   = min(backlog, target) - held          (asked when held < target * refill_fraction)
//
// When a grant leaves the global bucket dry (it fell short, or took the last
// whole token) the campaign waits
//
//     pause = min(horizon * (1 - refill_fraction), full_in - tick) * U(0.8, 1)
//
// (full_in: the reply's time until the first level is full again) before
// asking again. The bucket keeps what accrues meanwhile, and the pause ends
// before it is full, so even a worker alone loses nothing to overflow. The
// jitter (seeded per worker, LeaseOptions::seed) keeps workers that found the
// bucket dry together from coming back together. While demand exceeds the
// quota, round trips per message are then about live_workers / (rate * pause):
// with 4 workers on 5,000/s, burst 500 (full_in about 100 ms), about
// 4 / (5,000 * 0.085 s) = 0.0094. A burst below a few ticks of the rate makes
// pauses short and round trips many.
//
// The granted tokens go into the campaign's LeaseLimiter, which the Scheduler
// spends like any limiter, evenly over horizon * (1 - refill_fraction) or
// until the binding bucket is full again if sooner (whole leases spent in one
// tick by several workers reach a provider as bursts above its own bucket).
//
// A provider may adapt (QuotaProviderSpec::adaptive): its rate below the
// configured one and its 429 pause are then one state in the backend, shared
// by every worker; reportThrottle() feeds it. Unspent tokens expire `ttl` after the last grant
// (they are not handed back: a token granted and never spent only makes the
// sender slower, never faster).
//
// Overshoot bound. Every token spent was first taken from every global bucket
// of its request, and a worker never holds more than `target` tokens of a
// campaign. So for a global bucket of rate r and burst b, over any window of
// length w, summed over all workers:
//
//     sent <= r * w + b + (tokens held in leases at the start of the window)
//          <= r * w + b + sum over workers and campaigns of target
//
// i.e. the overshoot is at most the leases outstanding, and
// target ~ rate * horizon / live_workers, so about rate * horizon in total.
// With a burst b >= rate * horizon and demand above the rate (the bucket is
// empty in steady state) the 1 s count stays within rate + burst.
//
// Degraded mode. A request answered kUnavailable puts its provider (all of
// its campaigns) into degraded mode at once; the Redis backend answers within
// its command timeout (or at once while it backs off), so a worker switches
// within horizon + timeout (50 + 50 ms by default). Per provider, configured:
//   - kLocalShare: each campaign gets a local token bucket of
//     min(level rates) * safety_factor / live_workers that starts empty
//     (no burst on entry); lease tokens already held are still spent (they
//     were granted);
//   - kStop: nothing more is sent for that provider beyond leases already held.
// live_workers is configuration (LeaseOptions::live_workers): the number of
// worker processes sharing the quota. While degraded, the leaser keeps asking
// (the backend's reconnect backoff paces the attempts); the first answer
// leaves degraded mode, drops the local buckets, and — because degraded
// requests carry fill_new = false — buckets that Redis lost (restart, flush)
// are recreated empty: there is no catch-up burst. Entering and leaving call
// QuotaObserver::onDegraded and count in QuotaMetrics.
//
// Thread-safety: none; a QuotaLeaser, its Scheduler and its backend belong to
// one worker thread. Control calls throw SchedulerError for bad ids/limits;
// refresh() does not throw.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pacer/quota.h"
#include "pacer/scheduler.h"

namespace pacer {

enum class DegradedMode : std::uint8_t { kLocalShare, kStop };

struct QuotaProviderSpec {
  std::string name;                // the hash tag of its keys; no '{' or '}'
  std::optional<RateLimit> limit;  // across all workers; nullopt: no provider cap
  DegradedMode degraded = DegradedMode::kLocalShare;
  // The provider's rate adapts below `limit` (its ceiling) with one state
  // shared by every worker through the backend (AdaptiveLevel in quota.h):
  // reportThrottle() slows and pauses it for all. nullopt: it does not adapt.
  std::optional<AdaptiveRateOptions> adaptive;
};

struct QuotaCampaignSpec {
  std::string name;                // unique within its provider
  std::optional<RateLimit> limit;  // across all workers; nullopt: no campaign cap
  double weight = 1.0;
  std::uint32_t provider = UINT32_MAX;  // a QuotaLeaser provider id, or UINT32_MAX for none
  // A scheduler provider to put the campaign under as well (local limits on
  // top of the global ones, for example an adaptive rate), or none.
  ProviderId local_provider = kNoProvider;
};

struct LeaseOptions {
  Nanos horizon = std::chrono::milliseconds(250);  // a full lease is this much of the worker's share
  Nanos ttl = std::chrono::milliseconds(1000);     // unspent lease tokens expire this long after a grant
  double refill_fraction = 0.5;                   // ask again when held < target * refill_fraction
  std::uint32_t live_workers = 1;                 // workers sharing each global rate (configured, >= 1)
  double safety_factor = 0.8;                     // degraded local share multiplier, in (0, 1]
  // How late after a retry time the worker may act on it (its tick): a pause
  // ends this long before a global bucket would be full.
  Nanos tick = std::chrono::milliseconds(5);
  // Seeds the jitter of the pause after a dry grant. Give each worker process
  // its own (pacerd uses its pid and start time): workers with the same seed
  // that start in step stay in step and ask at the same instants.
  std::uint64_t seed = 1;
};

// Counters and gauges of one leaser. Plain numbers: read them from the
// leaser's thread (or copy them out per tick for a metrics endpoint).
struct QuotaMetrics {
  std::uint64_t batches = 0;             // backend calls (at most one per refresh)
  std::uint64_t requests = 0;            // lease requests sent
  std::uint64_t tokens_granted = 0;      // tokens received in leases
  std::uint64_t tokens_expired = 0;      // lease tokens that expired unspent
  std::uint64_t unavailable = 0;         // requests answered kUnavailable
  std::uint64_t degraded_entered = 0;    // provider transitions into degraded mode
  std::uint64_t degraded_left = 0;       // ... and out of it
  std::uint32_t degraded_providers = 0;  // gauge: providers degraded now
  std::uint64_t throttle_reports = 0;    // throttles reported to the shared adaptive rate
  std::uint64_t shared_pauses = 0;       // pauses first heard of from the backend (another worker's 429)
};

// Told about degraded-mode transitions. Called on the leaser's thread; must
// not throw.
class QuotaObserver {
 public:
  virtual ~QuotaObserver() = default;
  // `entered` true on entering degraded mode, false on leaving it.
  virtual void onDegraded(std::string_view provider, DegradedMode mode, bool entered) noexcept = 0;
};

// The limiter the Scheduler spends for a leased campaign: whole tokens granted
// by the global quota (expiring), plus, in degraded local-share mode, a local
// token bucket. Not thread-safe (see rate_limiter.h).
class LeaseLimiter final : public RateLimitingInterface {
 public:
  explicit LeaseLimiter(RateLimit limit) noexcept : limit_(limit) {}

  bool tryAcquire(std::uint64_t n, MonoTime now) noexcept override;
  std::uint64_t available(MonoTime now, std::uint64_t max) noexcept override;
  // 0 if n are here now; in local-share mode the local bucket's wait for the
  // rest; otherwise kNever (more needs a new lease, which refresh() asks for).
  Nanos timeUntil(std::uint64_t n, MonoTime now) noexcept override;
  // Records the global limit (used for the next requests and the local share).
  void setLimit(RateLimit limit, MonoTime now) noexcept override;
  RateLimit limit() const noexcept override { return limit_; }
  Algorithm algorithm() const noexcept override { return Algorithm::kTokenBucket; }

  // Adds `n` granted tokens; all held tokens now expire at now + ttl. With a
  // `spread` > 0 the tokens held become spendable evenly over that long (in
  // steps of at most max(4 ticks, 20 ms) worth) instead of all at once.
  void grant(std::uint64_t n, MonoTime now, Nanos ttl, Nanos spread = Nanos{0}, Nanos tick = Nanos{0}) noexcept;
  // Lease tokens held at `now` (0 once expired; expiry is counted).
  std::uint64_t held(MonoTime now) noexcept;
  // Degraded local share: a local bucket of `share` starting empty; nullopt removes it.
  void setLocalShare(std::optional<RateLimit> share, MonoTime now);
  // Lease tokens that expired unspent so far.
  std::uint64_t expired() const noexcept { return expired_; }
  // Gives up every held token now (counted as expired).
  void drop() noexcept;

 private:
  void expire(MonoTime now) noexcept;
  // Lease tokens that may be spent now (the drip), at most `tokens_`.
  std::uint64_t spendable(MonoTime now) noexcept;
  RateLimit limit_;
  std::uint64_t tokens_ = 0;
  MonoTime expires_at_{};
  // The drip: spendable lease tokens accrue at drip_rate_ per second up to
  // drip_cap_; drip_rate_ 0 means no drip (all held tokens are spendable).
  double drip_rate_ = 0;
  double drip_cap_ = 0;
  double drip_ = 0;
  MonoTime drip_at_{};
  std::uint64_t expired_ = 0;
  RateLimitingInterfacePtr local_;
};

class QuotaLeaser {
 public:
  // `scheduler`, `backend` and `observer` (may be null) must outlive the leaser.
  QuotaLeaser(Scheduler& scheduler, QuotaBackend& backend, LeaseOptions options, QuotaObserver* observer = nullptr);
  ~QuotaLeaser();
  QuotaLeaser(const QuotaLeaser&) = delete;
  QuotaLeaser& operator=(const QuotaLeaser&) = delete;

  // Registers a provider; returns its leaser id (0, 1, ...). Throws
  // SchedulerError for a bad name or limit.
  std::uint32_t addProvider(const QuotaProviderSpec& spec);
  // New provider rate/burst: sent with the next requests, taking effect in the
  // global bucket without resetting it.
  void setProviderLimit(std::uint32_t provider, std::optional<RateLimit> limit);
  // A new adaptive setting for the provider (a configuration reload): sent
  // with its next lease requests; the shared state in the backend is kept.
  void setProviderAdaptive(std::uint32_t provider, std::optional<AdaptiveRateOptions> adaptive);

  // Adds the campaign to the scheduler (its limiter is a LeaseLimiter when any
  // global limit applies; unlimited otherwise) and returns the scheduler's id.
  CampaignId addCampaign(const QuotaCampaignSpec& spec, MonoTime now);
  void setCampaignLimit(CampaignId id, std::optional<RateLimit> limit, MonoTime now);
  void removeCampaign(CampaignId id);

  // Once per tick, before Scheduler::tick(now, ...): one batch call to the
  // backend for every active campaign running low. Returns the number of
  // requests sent (0: no backend call was made). Never throws.
  std::size_t refresh(MonoTime now) noexcept;

  // Gives up the lease tokens held for the provider's campaigns (when the
  // provider throttles: tokens kept through a pause would all go out at its
  // end, on top of what the bucket grants then). Safe: only sends less.
  void dropLeases(std::uint32_t provider) noexcept;

  // The provider answered 429/503 (or too slowly: pause 0). Drops its leases
  // now and, when it adapts, sends the report with the next refresh (a
  // request of its own, want 0): the shared rate decreases and every worker
  // pauses for `pause`, learning of it at its next request for the provider,
  // which then drops its leases as well. Several reports before the next
  // refresh go as one, with the longest pause.
  void reportThrottle(std::uint32_t provider, Nanos pause) noexcept;
  // The provider answered too slowly: the shared rate decreases (once per
  // hold), with no pause; leases held are kept.
  void reportSlow(std::uint32_t provider) noexcept;

  // The provider's shared effective rate as last heard from the backend
  // (nullopt: it does not adapt or no answer came yet), and until when it is
  // paused for everyone as far as this worker knows.
  std::optional<double> effectiveRate(std::uint32_t provider) const;
  MonoTime pausedUntil(std::uint32_t provider) const;

  // Workers sharing each global rate from now on (>= 1; throws SchedulerError
  // otherwise): sizes the next leases and any local share entered later.
  void setLiveWorkers(std::uint32_t n);

  // Lease tokens held for `id` at `now` (for tests and metrics).
  std::uint64_t held(CampaignId id, MonoTime now);
  bool degraded(std::uint32_t provider) const;
  const QuotaMetrics& metrics() const noexcept { return metrics_; }

 private:
  struct Campaign;
  struct Provider;
  void enterDegraded(std::uint32_t provider, MonoTime now) noexcept;
  void leaveDegraded(std::uint32_t provider, MonoTime now) noexcept;
  std::optional<RateLimit> localShare(const Campaign& c) const;
  void rebuildLevels(Campaign& c);
  double unitRandom() noexcept;
  void heardAdaptive(std::uint32_t provider, const LeaseReply& reply, MonoTime now, bool own) noexcept;
  void queueReport(std::uint32_t provider, Nanos pause) noexcept;
  // requests_[i], growing requests_ and replies_ by one when i is their size (may throw).
  LeaseRequest& requestSlot(std::size_t i);

  Scheduler& scheduler_;
  QuotaBackend& backend_;
  LeaseOptions options_;
  QuotaObserver* observer_;
  QuotaMetrics metrics_;
  std::vector<Provider> providers_;
  std::vector<Campaign> campaigns_;  // indexed by scheduler CampaignId
  // Scratch reused every refresh.
  std::vector<LeaseRequest> requests_;
  std::vector<LeaseReply> replies_;
  std::vector<CampaignId> asked_;
  std::vector<std::uint32_t> reported_;  // providers whose throttle reports lead this batch
  std::uint64_t rng_;  // splitmix64 state for the pause jitter
  std::size_t rotate_ = 0;  // where the next refresh starts among the active campaigns
  Nanos spread_{0};         // a lease is spent evenly over this long: horizon * (1 - refill_fraction)
};

}  // namespace pacer
