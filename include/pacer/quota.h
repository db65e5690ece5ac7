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

#include "pacer/adaptive_rate.h"
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
// the bucket sees one effective rate and one pause (a provider that answered
// 429 is slowed and paused for everyone). The algorithm is AdaptiveRate's
// (include/pacer/adaptive_rate.h): the options' `ceiling` is ignored (the
// level's rate is the ceiling) and `latency_threshold` is the caller's
// business (it reports a slow answer as a throttle without a pause). The
// level's burst shrinks with the rate: burst * effective / ceiling (>= 1).
struct AdaptiveLevel {
  std::uint32_t level = 0;       // index into the request's levels
  AdaptiveRateOptions options;
  // >= 0: the provider throttled just now; decrease (at most once per
  // options.hold, whoever reports) and pause every worker this long.
  // < 0: nothing to report.
  Nanos throttled{-1};
};

struct LeaseRequest {
  // The hash tag every key of this request carries (the provider's name, or
  // the campaign's when it has no provider), so that one request touches one
  // Redis Cluster slot. Must not contain '{' or '}'.
  std::string scope;
  std::vector<QuotaLevel> levels;  // at least one
  std::uint64_t want = 0;          // tokens asked for; 0 only asks when the next token is due
  // Whether a bucket that does not exist yet (first use, expired while idle,
  // Redis restarted) starts full (true) or empty (false). Workers coming back
  // from degraded mode pass false, so a restarted Redis cannot add a burst.
  bool fill_new = true;
  // The level whose rate adapts, if any. Its state lives under the scope
  // (key "a" in Redis), shared by every request of the scope that names it.
  std::optional<AdaptiveLevel> adaptive;
};

enum class QuotaStatus : std::uint8_t {
  kOk,           // `granted` tokens were taken from every level (possibly 0)
  kUnavailable,  // no answer (I/O error, timeout, bad reply): nothing was granted
};

struct LeaseReply {
  QuotaStatus status = QuotaStatus::kUnavailable;
  std::uint64_t granted = 0;
  // After the grant: how long until every level holds one whole token again.
  // Nanos{0} if they already do; kNever if a level has rate 0.
  Nanos next_token = kNever;
  // The binding level: the one with the fewest whole tokens before the grant
  // (an index into the request's levels).
  std::uint32_t binding = 0;
  // After the grant: how long until the binding level is full again, after
  // which it wastes what accrues (kNever if it does not refill). Asking again
  // before then loses nothing.
  Nanos full_in = kNever;
  // With `adaptive`: the level's effective rate now, and how much longer the
  // scope is paused (0: not paused). While paused nothing is granted and
  // next_token is the rest of the pause.
  double effective_rate = 0.0;
  Nanos paused{0};
};

// Thread-safety: each implementation says; the shipped ones say below.
class QuotaBackend {
 public:
  virtual ~QuotaBackend() = default;
  // Answers requests[i] into replies[i] (replies.size() must equal
  // requests.size()). Each request is atomic on its own; requests of one batch
  // are independent. `now` is the caller's monotonic time: the local backend
  // uses it as its clock, the Redis backend ignores it (Redis TIME is the
  // clock). Never throws; failures come back as kUnavailable per request.
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
