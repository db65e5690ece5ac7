// Leases: how a worker spends a global quota without a Redis round trip per
// message.
//
// Each tick, before Scheduler::tick(), QuotaLeaser::refresh(now) looks at the
// worker's active campaigns and, in ONE batch call to the QuotaBackend (one
// pipelined round trip for Redis), asks for a lease for every campaign whose
// tokens have run low, topping up the others of the same provider in the same
// call. A lease is sized to the campaign's backlog and to this worker's share
// of the tightest rate that applies:
//
//     workers  = max(live_workers, the workers the backend saw asking for the provider)
//     share    = min(campaign rate, provider rate / workers * weight / weights of this
//                worker's active campaigns of the provider)
//     target   = ceil(share * horizon)
//     want     = min(backlog, target) - held    (asked when held < target * refill_fraction)
//     min_grant = ceil(target * min_grant_fraction)
//
// so that when the provider is the bottleneck each grant is a useful share of
// it, never scraps: the backend grants nothing rather than less than
// min_grant, and says when min_grant will fit.
//
// Summed over the worker's requests, what is asked for stays within
// refresh()'s `room` less every token held. The worker passes its sink's free
// room while the sink sets its pace (it was full within the last second: an
// SMSC's window under latency): a token falling due while the sink is full is
// forfeited and lost to every worker; left in the bucket, it goes to a worker
// that can send it.
//
// Tokens ahead of time. The backend may grant tokens the buckets do not hold
// yet, up to `lookahead` of each bucket's rate (LeaseRequest::lookahead): the
// bucket then owes them, and the next grant, whoever asks, starts after them.
// Each grant says how many tokens its tightest bucket held before it
// (LeaseReply::start_tokens, negative when owed); token k of the grant is due
// (k - start_tokens) / rate after the reply, and the LeaseLimiter spends no
// token before it is due. So the global sequence of tokens is spaced at the
// bucket's rate whoever holds them, a worker holds about `horizon` of its
// share, and a provider-limited run costs one round trip per
// share * horizon * (1 - refill_fraction) messages, as an uncontended one does.
//
// The granted tokens go into the campaign's LeaseLimiter, which the Scheduler
// spends like any limiter; a token due but not spent (no message, a pause,
// a loop that came late) stays spendable for 1.5 ticks (the lag), after
// which it is forfeited (counted in tokens_expired and tokens_late): a
// worker never catches up in one burst.
//
// A provider may adapt (QuotaProviderSpec::adaptive): its rate below the
// configured one, its 429 pause and its circuit breaker are then one state in
// the backend, shared by every worker; reportThrottle() and reportAnswer()
// feed it. Unspent tokens expire `ttl` after the last grant (they are not
// handed back: a token granted and never spent only makes the sender slower,
// never faster).
//
// Overshoot bound. Every token spent was first taken from every global bucket
// of its request and is spent no earlier than the bucket would have held it.
// So for a global bucket of rate r and burst b, over any window of length w,
// summed over all workers:
//
//     sent <= r * w + b + (tokens due but unspent at the window's start)
//
// and the last term is at most the lag (1.5 ticks) of each worker's rate,
// which the burst asked of the bucket leaves room for (tickSafe()).
//
// Degraded mode. A request answered kUnavailable puts its provider (all of
// its campaigns) into degraded mode at once; the Redis backend answers within
// its command timeout (or at once while it backs off). Lease tokens held are
// dropped (they were timed against the shared buckets). Per provider, configured:
//   - kLocalShare: this worker's provider limiter in the scheduler becomes
//     provider rate * safety_factor / workers (its campaigns share it by
//     weight, as they share any provider), and each campaign's limiter
//     campaign rate * safety_factor / workers; both start empty (no burst on
//     entry). workers is the larger of live_workers and the count last heard
//     from the backend, so that N workers together stay under the provider's
//     rate whatever the number of campaigns;
//   - kStop: nothing more is sent for that provider.
// While degraded, the leaser keeps asking (the backend's reconnect backoff
// paces the attempts); the first answer leaves degraded mode, and, because
// degraded requests carry fill_new = false, buckets that Redis lost (restart,
// flush) are recreated empty: there is no catch-up burst. Entering and leaving
// call QuotaObserver::onDegraded and count in QuotaMetrics.
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
  BreakerOptions breaker;  // the shared circuit breaker (with `adaptive`)
  // The scheduler's provider whose limiter this worker applies locally: the
  // provider's rate normally, this worker's safe share of it while degraded.
  // kNoProvider: none.
  ProviderId local_provider = kNoProvider;
};

struct QuotaCampaignSpec {
  std::string name;                // unique within its provider
  std::optional<RateLimit> limit;  // across all workers; nullopt: no campaign cap
  double weight = 1.0;
  std::uint32_t provider = UINT32_MAX;  // a QuotaLeaser provider id, or UINT32_MAX for none
  // A scheduler provider to put the campaign under as well (local limits on
  // top of the global ones, for example an adaptive rate), or none.
  ProviderId local_provider = kNoProvider;
  // Its priority class's rank (0 highest, < kMaxPriorityRanks): served first
  // in this worker's scheduler, and, with LeaseOptions::priority.enabled,
  // first at its provider's shared bucket across every worker.
  std::uint32_t priority = 0;
};

// Strict priority at a provider's shared bucket (LeasePriority in quota.h).
struct PriorityLeaseOptions {
  bool enabled = false;  // requests carry their class; off: classes only order this worker's scheduler
  double floor = 0.05;   // [0, 0.5]: a provider's rate kept for each lower class asking
  Nanos lower_lookahead = std::chrono::milliseconds(50);
  Nanos top_lookahead = std::chrono::milliseconds(250);
  Nanos active_window = std::chrono::seconds(1);
  Nanos memory = std::chrono::seconds(60);  // a class that asked this recently caps a lower one's lookahead
};

struct LeaseOptions {
  Nanos horizon = std::chrono::milliseconds(500);     // a full lease is this much of the worker's share
  Nanos lookahead = std::chrono::milliseconds(1000);  // a bucket may owe this much of its rate (>= horizon)
  Nanos ttl = std::chrono::milliseconds(2500);        // unspent lease tokens expire this long after a grant
  double refill_fraction = 0.5;                       // ask again when held < target * refill_fraction
  double min_grant_fraction = 0.25;                   // grant nothing below this fraction of the target
  std::uint32_t live_workers = 1;  // workers expected to share each global rate (>= 1); more seen are used
  double safety_factor = 0.8;      // degraded local share multiplier, in (0, 1]
  // How late after a retry time the worker may act on it (its tick).
  Nanos tick = std::chrono::milliseconds(5);
  // Answers seen are reported to the shared circuit breaker at least this often.
  Nanos report_interval = std::chrono::milliseconds(1000);
  // Seeds the jitter of the wait after a refused grant, and is this worker's
  // id for the backend's count of active workers: give each worker process
  // its own (pacerd uses its pid and start time).
  std::uint64_t seed = 1;
  PriorityLeaseOptions priority;
};

// Counters and gauges of one leaser. Plain numbers: read them from the
// leaser's thread (or copy them out per tick for a metrics endpoint).
struct QuotaMetrics {
  std::uint64_t batches = 0;             // backend calls (at most one per refresh)
  std::uint64_t requests = 0;            // lease requests sent
  std::uint64_t tokens_granted = 0;      // tokens received in leases
  std::uint64_t tokens_expired = 0;      // lease tokens that expired unspent
  std::uint64_t tokens_late = 0;         // ... of them, due and not spent within the lag (a late loop)
  std::uint64_t unavailable = 0;         // requests answered kUnavailable
  std::uint64_t degraded_entered = 0;    // provider transitions into degraded mode
  std::uint64_t degraded_left = 0;       // ... and out of it
  std::uint32_t degraded_providers = 0;  // gauge: providers degraded now
  std::uint64_t throttle_reports = 0;    // throttles reported to the shared adaptive rate
  std::uint64_t health_reports = 0;      // requests that carried answers for the circuit breaker
  std::uint64_t shared_pauses = 0;       // pauses first heard of from the backend (another worker's 429)
  std::uint64_t refused = 0;             // requests granted nothing (min_grant did not fit yet)
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
// by the global quota, each spendable from the moment it is due (see
// LeaseReply::start_tokens) until `lag` after it, and forfeited (counted as
// expired) if not spent by then: a token spent later than that would land in
// a later window, on top of the tokens due there. In degraded local-share
// mode, a local token bucket as well. Not thread-safe (see rate_limiter.h).
class LeaseLimiter final : public RateLimitingInterface {
 public:
  explicit LeaseLimiter(RateLimit limit) noexcept : limit_(limit) {}

  bool tryAcquire(std::uint64_t n, MonoTime now) noexcept override;
  std::uint64_t available(MonoTime now, std::uint64_t max) noexcept override;
  // 0 if n are due now; the wait for the next lease token to fall due when
  // one will (n at most what is held); in local-share mode the local
  // bucket's wait otherwise; else kNever (more needs a new lease).
  Nanos timeUntil(std::uint64_t n, MonoTime now) noexcept override;
  // Records the global limit (used for the next requests and the local share).
  void setLimit(RateLimit limit, MonoTime now) noexcept override;
  RateLimit limit() const noexcept override { return limit_; }
  Algorithm algorithm() const noexcept override { return Algorithm::kTokenBucket; }

  // Adds `n` granted tokens whose schedule starts at `start` (LeaseReply::
  // start_tokens: token k is due (k - start) / rate after `now`). Every held
  // token expires at now + ttl; a token due but unspent for `lag` is
  // forfeited. Never throws (a grant that cannot be stored is forfeited).
  void grant(std::uint64_t n, double start, double rate, MonoTime now, Nanos ttl, Nanos lag) noexcept;
  // Lease tokens held at `now` (due or not; 0 once expired).
  std::uint64_t held(MonoTime now) noexcept;
  // Degraded local share: a local bucket of `share` that starts empty and
  // gives nothing before `from`; nullopt removes it.
  void setLocalShare(std::optional<RateLimit> share, MonoTime now, MonoTime from);
  // Tokens taken from the local share in the second before `now`.
  std::uint64_t localSpentLastSecond(MonoTime now) noexcept;
  // Lease tokens that expired or were forfeited unspent so far.
  std::uint64_t expired() const noexcept { return expired_; }
  // ... of them, forfeited because they fell due and were not spent within the lag.
  std::uint64_t late() const noexcept { return late_; }
  // Gives up every held token now (counted as expired).
  void drop() noexcept;

 private:
  // One grant's schedule: its token k (1..n) is due (k - start) / rate
  // after t0; `used` counts the first tokens spent or forfeited.
  struct Segment {
    MonoTime t0{};
    double start = 0;
    double rate = 0;
    std::uint64_t n = 0;
    std::uint64_t used = 0;
    std::uint64_t dueBy(MonoTime t) const noexcept;  // tokens due at or before t
  };
  void advance(MonoTime now) noexcept;
  std::uint64_t due() const noexcept;
  RateLimit limit_;
  std::vector<Segment> segments_;  // oldest first
  MonoTime now_{};                 // of the last advance()
  std::uint64_t tokens_ = 0;       // sum of left
  MonoTime expires_at_{};
  Nanos lag_{0};
  std::uint64_t expired_ = 0;
  std::uint64_t late_ = 0;
  RateLimitingInterfacePtr local_;
  MonoTime local_from_{};
  std::vector<std::pair<MonoTime, std::uint64_t>> local_spent_;  // (when, how many), the last second
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
  // global bucket without resetting it, and applied to the scheduler's
  // provider limiter (its degraded share while degraded).
  void setProviderLimit(std::uint32_t provider, std::optional<RateLimit> limit, MonoTime now);
  // A new adaptive setting for the provider (a configuration reload): sent
  // with its next lease requests; the shared state in the backend is kept.
  void setProviderAdaptive(std::uint32_t provider, std::optional<AdaptiveRateOptions> adaptive);

  // Adds the campaign to the scheduler (its limiter is a LeaseLimiter when any
  // global limit applies; unlimited otherwise) and returns the scheduler's id.
  CampaignId addCampaign(const QuotaCampaignSpec& spec, MonoTime now);
  void setCampaignLimit(CampaignId id, std::optional<RateLimit> limit, MonoTime now);
  // The campaign's weight, in the scheduler and in its share of the provider.
  void setCampaignWeight(CampaignId id, double weight);
  // The campaign's priority rank, in the scheduler and in its lease requests.
  void setCampaignPriority(CampaignId id, std::uint32_t rank);
  void removeCampaign(CampaignId id);

  // Once per tick, before Scheduler::tick(now, ...): one batch call to the
  // backend for every active campaign running low. `room`: the most quota
  // units the worker should hold (its sink's free slots times the cost of a
  // queued message, while the sink sets the pace); what is asked for, plus
  // what is held, stays within it.
  // Returns the number of requests sent (0: no backend call was made).
  // Never throws.
  std::size_t refresh(MonoTime now, std::uint64_t room = UINT64_MAX) noexcept;

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
  // A throttle judge (include/pacer/throttle_judge.h) found the provider
  // takes only `keep` (in (0, 1]) of what it is sent: like reportThrottle(),
  // but the shared rate comes down to keep times itself (AdaptiveRate::
  // onCapacity) rather than by the fixed decrease. Several before a refresh
  // go as one, with the smallest keep and the longest pause.
  void reportCapacity(std::uint32_t provider, Nanos pause, double keep) noexcept;
  // The judge found the last cut answered noise (in whole: keep 1, or in
  // part): the shared limit goes back to the rate at the cut times keep
  // (AdaptiveRate::restoreLimit). Leases are kept.
  void reportNoise(std::uint32_t provider, double keep) noexcept;
  // The noise level this worker's judge learned for the provider
  // (ThrottleJudge::noise): kept for every worker while this one judges.
  // Sent with the next refresh.
  void reportNoiseLevel(std::uint32_t provider, double noise) noexcept;
  // One answer from the provider, for its shared circuit breaker: `fault`
  // for kFault answers, false for the others. Sent with the next request for
  // the provider, or on its own after report_interval.
  void reportAnswer(std::uint32_t provider, bool fault) noexcept;
  // This worker's own answers from the provider per second over its last
  // clean second (AcceptedMeter::last): sent with every request for the
  // provider, summed by the backend for every worker.
  void reportRates(std::uint32_t provider, AcceptedRates rates) noexcept;
  // The throttles of one recipient the other workers reported for the
  // provider over the meter's recipient window (AcceptedMeter), as last
  // heard: the quota's sum less what this worker sent with it (0 while
  // degraded).
  double recipientThrottlesElsewhere(std::uint32_t provider) const;
  // Whether the provider's shared circuit breaker was open at the last answer.
  bool circuitOpen(std::uint32_t provider) const;
  // The workers sharing the provider as last heard (at least live_workers).
  std::uint32_t workersFor(std::uint32_t provider) const;

  // The provider's shared effective rate as last heard from the backend
  // (nullopt: it does not adapt or no answer came yet), and until when it is
  // paused for everyone as far as this worker knows.
  std::optional<double> effectiveRate(std::uint32_t provider) const;
  MonoTime pausedUntil(std::uint32_t provider) const;
  // Whether this worker judges the provider's throttles for every worker
  // sharing it (LeaseReply::judge, as last heard; false until heard), and
  // the judge's noise level as the backend holds it. A provider whose rate
  // does not adapt, or while the quota is degraded (no shared state), is
  // judged by each worker alone: true.
  bool judges(std::uint32_t provider) const;
  double sharedNoise(std::uint32_t provider) const;
  // The whole provider's accepted and throttled answers per second, as last
  // heard (LeaseReply::provider_rates; unknown while degraded or not heard).
  AcceptedRates providerRates(std::uint32_t provider) const;

  // Workers sharing each global rate from now on (>= 1; throws SchedulerError
  // otherwise): sizes the next leases and any local share entered later.
  void setLiveWorkers(std::uint32_t n);

  // When the last batch's replies arrived (LeaseReply::answered_at): the
  // tick that follows a refresh runs at this time, not before the round trip.
  MonoTime lastAnswer() const noexcept { return last_answer_; }

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
  std::optional<RateLimit> providerShare(const Provider& p) const;
  void applyProviderLimit(Provider& p, MonoTime now, bool start_empty);
  void rebuildLevels(Campaign& c);
  // Adds to the metrics what the campaign's lease forfeited since last counted.
  void countForfeited(Campaign& c) noexcept;
  // Appends the batch's leading requests (throttle and health reports that
  // go alone); returns how many.
  std::size_t addReports(MonoTime now);
  // A campaign's lease as things stand: `eligible` when it may ask now.
  struct Sizing {
    bool eligible = false;
    std::uint64_t target = 0, held = 0, goal = 0, min_grant = 1;
  };
  Sizing size(CampaignId id, MonoTime now);
  void addCampaignRequest(CampaignId id, const Sizing& z, MonoTime now, std::size_t lead);
  RateLimit tickSafe(RateLimit limit) const noexcept;
  void handleReply(Campaign& c, const LeaseRequest& request, const LeaseReply& reply, MonoTime now);
  void unanswered(std::size_t i, std::size_t lead, MonoTime now);
  void attachHealth(LeaseRequest& r, std::uint32_t provider);
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
  std::vector<Sizing> sizes_;                    // per active campaign, this refresh
  std::vector<std::uint32_t> reported_;          // providers whose reports lead this batch
  std::vector<std::uint32_t> request_provider_;  // per request of the batch: its provider
  std::uint64_t rng_;                            // splitmix64 state for the pause jitter
  std::size_t rotate_ = 0;                       // where the next refresh starts among the active campaigns
  Nanos lag_{0};                                 // a due token is forfeited this long after (LeaseLimiter::grant)
  MonoTime last_answer_{};                       // see lastAnswer()
};

}  // namespace pacer
