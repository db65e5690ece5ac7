// Global quota: token buckets shared by every worker (a campaign's send_rate
// across all workers, a provider's total across all campaigns), handed out as
// leases of several tokens at a time.
//
// A QuotaBackend answers a batch of lease requests at once. Each request names
// a list of buckets (levels: the campaign, its provider, optionally more); the
// backend refills every bucket, grants g = min(want, whole tokens in each
// bucket), and takes g from every bucket of that request atomically: no other
// request sees a state in which some levels were charged and others were not.
//
// Two backends:
//   - makeLocalQuotaBackend(): in-process buckets (the embedded default, for a
//     worker alone and for tests). Its clock is the `now` passed in.
//   - the Redis backend (pacer::quota_redis, include/pacer/quota_redis.h): one
//     Lua script, Redis's own TIME as the clock, one pipelined round trip per
//     batch.
//
// Pure: this header and the local backend do no I/O and read no clock.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "pacer/accepted_meter.h"
#include "pacer/adaptive_rate.h"
#include "pacer/circuit_breaker.h"
#include "pacer/rate_limiter.h"
#include "pacer/time.h"

namespace pacer {

// One bucket of a request. `key` is unique within the request's scope
// (e.g. "c:welcome-42" for a campaign, "p" for the provider itself).
struct QuotaLevel {
  std::string key;
  RateLimit limit;  // tokens per second (>= 0; 0 grants nothing) and burst (< 1 counts as 1)
};

// A level whose rate adapts below its configured rate (the ceiling), with its
// state kept by the backend beside the buckets, so that every worker using
// the bucket sees one effective rate, one pause and one circuit breaker (a
// provider that answered 429 is slowed and paused for everyone). The rate
// follows AdaptiveRate (include/pacer/adaptive_rate.h; the options' `ceiling`
// is ignored: the level's rate is the ceiling) and the breaker follows
// CircuitBreaker (include/pacer/circuit_breaker.h). The level's burst shrinks
// with the rate: burst * effective / ceiling (>= 1).
struct AdaptiveLevel {
  std::uint32_t level = 0;  // index into the request's levels
  AdaptiveRateOptions options;
  BreakerOptions breaker;
  // >= 0: the provider throttled just now; decrease (at most once per
  // options.hold, whoever reports) and pause every worker this long.
  // < 0: nothing to report.
  Nanos throttled{-1};
  // Answers this worker saw from the provider since its last report, for
  // the shared circuit breaker (faults: kFault answers; ok: the others).
  std::uint64_t ok = 0;
  std::uint64_t faults = 0;
  // With `throttled` >= 0 and keep in (0, 1]: a judged ceiling
  // (AdaptiveRate::onCapacity): the rate comes down to keep times itself
  // rather than by the fixed decrease. 0: the fixed decrease.
  double keep = 0;
  // In (0, 1]: the last judged cut was noise, in whole (1) or in part: the
  // limit goes back to the rate at the cut times this
  // (AdaptiveRate::restoreLimit). 0: nothing to restore.
  double restore = 0;
  // In [0, 1]: the throttle noise level this worker's judge learned
  // (ThrottleJudge::noise), kept by the backend for every worker when this
  // worker is the scope's judge (LeaseReply::judge). < 0: nothing to report.
  double noise = -1;
  // What this worker's answers from the provider were over its last clean
  // second (AcceptedMeter): the backend keeps each worker's last and sums
  // them into LeaseReply::provider_rates. Unknown: this worker's is not.
  AcceptedRates rates{};
};

// Strict priority between classes sharing one level (a provider's bucket),
// across every worker. The backend keeps, per scope, when each class last
// asked for tokens (want > 0); a class that asked within `active_window` is
// "asking". Then, for a request of class `rank`:
//   - with a higher class asking, its lookahead on the shared level is only
//     `lower_lookahead` (up to twice that for a class with lower classes
//     asking too): it takes the tokens the level holds now and may owe it
//     only a moment, so a higher class asking after it finds the level owing
//     little and is granted at once, and while a higher class owes the level
//     it gets nothing;
//   - with no higher class asking, the request's own lookahead applies, at
//     most `top_lookahead` while a lower class is asking or a higher class
//     asked within `memory`: so a higher class that starts asking again finds
//     the level owing at most that much and waits no longer (a class that
//     never saw a higher one keeps the full lookahead);
//   - with lower classes asking and floor > 0, it may use at most
//     (1 - floor * lower classes asking) of the level's rate (a bucket of its
//     own, key "k<rank>"), so a floor of the level is left to the lower
//     classes: none is starved for good.
// Every grant still takes from the shared level, so priority decides who
// gets the level's tokens, never how many there are.
struct LeasePriority {
  std::uint32_t level = 0;  // index into the request's levels: the shared one
  std::uint32_t rank = 0;   // the class; 0 is the highest
  double floor = 0.0;       // [0, 0.5]: kept for each lower class asking
  Nanos lower_lookahead = std::chrono::milliseconds(50);
  Nanos top_lookahead = std::chrono::milliseconds(250);
  Nanos active_window = std::chrono::seconds(1);
  Nanos memory = std::chrono::seconds(60);  // >= active_window
};

struct LeaseRequest {
  // The hash tag every key of this request carries (the provider's name, or
  // the campaign's when it has no provider), so that one request touches one
  // Redis Cluster slot. Must not contain '{' or '}'.
  std::string scope;
  std::vector<QuotaLevel> levels;  // at least one
  std::uint64_t want = 0;          // tokens asked for; 0 only reports and asks when the next token is due
  // Whether a bucket that does not exist yet (first use, expired while idle,
  // Redis restarted) starts full (true) or empty (false). Workers coming back
  // from degraded mode pass false, so a restarted Redis cannot add a burst.
  bool fill_new = true;
  // Tokens up to this far ahead of now may be granted: a bucket may owe up to
  // rate * lookahead tokens, and a granted token that was not in the bucket
  // yet is due when the bucket would have held it (LeaseReply::start_tokens).
  // 0: only whole tokens held now.
  Nanos lookahead{0};
  // Grant nothing rather than fewer than this many tokens (a request for
  // fewer than min_grant is granted in full or not at all). >= 1.
  std::uint64_t min_grant = 1;
  // Tokens sent without the quota (degraded mode's local share) that every
  // level is charged before the grant: it may go below zero, so that later
  // grants make up for them.
  std::uint64_t debt = 0;
  // The asking worker (any stable nonzero id per process): the backend
  // counts the workers that asked for the scope recently (LeaseReply::
  // active_workers). 0: not counted.
  std::uint64_t worker = 0;
  // The level whose rate adapts, if any. Its state lives under the scope
  // (key "a" in Redis), shared by every request of the scope that names it.
  std::optional<AdaptiveLevel> adaptive;
  // Classes sharing a level (see LeasePriority). nullopt: no priority.
  std::optional<LeasePriority> priority;
};

enum class QuotaStatus : std::uint8_t {
  kOk,           // `granted` tokens were taken from every level (possibly 0)
  kUnavailable,  // no answer (I/O error, timeout, bad reply): nothing was granted
  // The backend answered but cannot hold a level's limit (LeaseReply::
  // refusal; `binding` is the level): nothing was granted. Not an outage:
  // the caller does not fall back to a local share; it asks again later.
  kRefusedLimit,
};

// Why a level's limit cannot be held (QuotaStatus::kRefusedLimit).
enum class LimitRefusal : std::uint8_t {
  kNone,
  kOutOfRange,     // a rate or burst that is not a number in the backend's range
  kRefillTooLong,  // refilling the burst at the rate outlasts the longest key lifetime
};

struct LeaseReply {
  QuotaStatus status = QuotaStatus::kUnavailable;
  LimitRefusal refusal = LimitRefusal::kNone;  // with kRefusedLimit
  std::uint64_t granted = 0;
  // When the granted tokens are due: token k (1-based) is due
  // (k - start_tokens) / schedule_rate seconds from now if that is positive
  // (start_tokens is negative when the levels owe tokens to earlier grants).
  // The caller spends no token before it is due; no level is then ever
  // ahead of its own refill, and the binding level is followed closely.
  double start_tokens = 0;
  double schedule_rate = 0;  // tokens per second; 0 when nothing was granted
  // With granted == 0: how long until min_grant tokens could be granted
  // (Nanos{0} if now). Otherwise how long until every level holds one whole
  // token again. kNever if a level has rate 0.
  Nanos next_token = kNever;
  // The binding level: the one with the fewest tokens before the grant
  // (an index into the request's levels).
  std::uint32_t binding = 0;
  // After the grant: how long until the binding level is full again, after
  // which it wastes what accrues (kNever if it does not refill).
  Nanos full_in = kNever;
  // With `adaptive`: the level's effective rate now, how much longer the
  // scope is paused (0: not paused; a 429's pause or an open circuit
  // breaker), and whether the breaker is open. While paused nothing is
  // granted and next_token is the rest of the pause.
  double effective_rate = 0.0;
  Nanos paused{0};
  bool circuit_open = false;
  // Workers (LeaseRequest::worker) that asked for this scope in the last
  // two seconds, this one included; 0 when not counted.
  std::uint32_t active_workers = 0;
  // With `adaptive` and a worker id: whether this worker judges the scope's
  // throttles for every worker (ThrottleJudge): one does, the one that
  // judged last, until it has reported no answers (AdaptiveLevel::ok,
  // faults) for two seconds, then the next to report some; the others only
  // follow the shared rate and pause. True without an adaptive level or a
  // worker id (each worker judges alone). `noise` is the judge's learned
  // noise level as the backend holds it (0: none learned).
  bool judge = true;
  double noise = 0;
  // With `adaptive` and a worker id: the provider's accepted and throttled
  // answers per second, the sum of every active worker's last
  // AdaptiveLevel::rates (reported in the last two seconds); unknown when
  // one of them is, or fewer workers reported than are asking.
  AcceptedRates provider_rates;
  // When the reply arrived, on the caller's monotonic clock (at least the
  // `now` given to acquire()): the grant's schedule starts here.
  MonoTime answered_at{};
};

// Thread-safety: each implementation says; the shipped ones say below.
class QuotaBackend {
 public:
  virtual ~QuotaBackend() = default;
  // Answers requests[i] into replies[i] (replies.size() must equal
  // requests.size()). Each request is atomic on its own; requests of one batch
  // are independent. `now` is the caller's monotonic time: the local backend
  // uses it as its clock, the Redis backend does not (Redis TIME is the
  // clock); each reply's answered_at is `now` or later. Never throws;
  // failures come back as kUnavailable per request.
  virtual void acquire(std::span<const LeaseRequest> requests, MonoTime now,
                       std::span<LeaseReply> replies) noexcept = 0;
};
using QuotaBackendPtr = std::unique_ptr<QuotaBackend>;

// In-process buckets keyed by scope and level key. Thread-safe (one mutex):
// several workers (threads) of one process, or tests, can share one. A new
// rate or burst passed in takes effect without resetting the bucket; a `now`
// earlier than one already seen grants nothing extra.
QuotaBackendPtr makeLocalQuotaBackend();

}  // namespace pacer
