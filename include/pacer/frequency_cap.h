// Per-recipient frequency caps: "at most `limit` messages of this scope to
// one recipient in any rolling `window`" (e.g. 3 bulk messages per 24 h).
//
// A store answers a batch of queries at once. For each query the check and
// the count are one atomic step: an allowed answer has already counted the
// send (a reservation); a capped answer says when the query would be
// allowed. The daemon then either suppresses the capped message (ledger row
// "suppressed: frequency cap") or defers it to that instant; a counted send
// whose message later fails for good is given back with release().
//
// Time is the caller's wall clock, passed in (see docs/recipient-rules.md
// for why that is sound for windows of hours), so a simulated multi-day run
// needs no waiting. Implementations: makeMemoryFrequencyCapStore() here
// (pure, in pacer::rules) and the Redis store in pacer/frequency_cap_redis.h.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "pacer/wall_time.h"

namespace pacer {

// Bounds on a query. Longer ids or scopes, or limits beyond these, are
// kInvalid (bad input is classified, never sent to the store).
inline constexpr std::size_t kMaxCapRecipientBytes = 256;
inline constexpr std::size_t kMaxCapScopeBytes = 128;
inline constexpr std::uint32_t kMaxCapLimit = 1000;
inline constexpr std::chrono::milliseconds kMaxCapWindow = std::chrono::hours(24 * 366);

struct CapQuery {
  // Who: an opaque id (phone number, user id). Non-empty, at most
  // kMaxCapRecipientBytes, no '}' (it is the key's hash tag).
  std::string_view recipient;
  // Which cap: e.g. "class:bulk" or "campaign:spring-sale". Non-empty, at
  // most kMaxCapScopeBytes. One scope = one count per recipient.
  std::string_view scope;
  std::uint32_t limit = 0;             // sends allowed per window, 1..kMaxCapLimit
  std::chrono::milliseconds window{};  // rolling window, 1 ms..kMaxCapWindow
};

enum class CapVerdict : std::uint8_t {
  kAllowed,      // counted now; `at` is the stamp to release() it with
  kCapped,       // not counted; `at` is the first instant it would be allowed
  kInvalid,      // the query breaks the bounds above; not counted
  kUnavailable,  // the store could not answer; not known to be counted (see below)
};
std::string_view toString(CapVerdict v) noexcept;

struct CapDecision {
  CapVerdict verdict = CapVerdict::kUnavailable;
  WallTime at{};  // see CapVerdict; `now` for kInvalid and kUnavailable
  // Sends of this recipient and scope inside the window, this one included
  // when allowed (for capped answers: at least `limit`).
  std::uint32_t in_window = 0;
};

// A counted send to take back: the query's recipient and scope, and the
// `at` of its kAllowed decision.
struct CapRelease {
  std::string_view recipient;
  std::string_view scope;
  WallTime counted_at{};
};

// How a batch went as a whole. Anything but kNone means some queries are
// kUnavailable: the caller defers those (never drops, never sends them).
enum class CapFault : std::uint8_t {
  kNone,
  kIo,       // cannot connect, or the connection broke
  kTimeout,  // connect or command timeout
  kReply,    // an error reply, or a reply of the wrong shape
};
std::string_view toString(CapFault f) noexcept;

struct CapBatchResult {
  CapFault fault = CapFault::kNone;
  std::size_t decided = 0;  // allowed + capped (+ released, for release())
};

class FrequencyCapStore {
 public:
  virtual ~FrequencyCapStore() = default;

  // Decides queries[i] into out[i] (out.size() >= queries.size(); extra
  // entries untouched) as of `now`. Queries are applied in order, so two in
  // one batch for the same recipient and scope see each other. A send
  // counted at `now` stops counting at now + window. A kUnavailable answer's
  // send may have been counted (its reply was lost): that can only cap a
  // later send early, never let one over the limit. Never throws.
  // Thread-safety: none; one store (one connection) per worker thread.
  virtual CapBatchResult decide(std::span<const CapQuery> queries, WallTime now,
                                std::span<CapDecision> out) noexcept = 0;

  // Takes back one counted send per entry (one send stamped exactly
  // counted_at; a stamp that is not there, e.g. already out of the window,
  // is ignored). `now` only paces reconnects. decided = sends removed.
  virtual CapBatchResult release(std::span<const CapRelease> releases, WallTime now) noexcept = 0;
};
using FrequencyCapStorePtr = std::unique_ptr<FrequencyCapStore>;

// Checks one query against the bounds above.
bool validCapQuery(const CapQuery& q) noexcept;
// Stamps are kept as 48-bit milliseconds since 1970: `now` must be in
// [1970-01-01, year 10889); otherwise every query of the batch is kInvalid.
inline constexpr std::int64_t kMaxCapStampMs = (std::int64_t{1} << 48) - 1;
inline bool validCapTime(WallTime now) noexcept {
  return now.time_since_epoch().count() >= 0 && now.time_since_epoch().count() <= kMaxCapStampMs;
}

// In memory, for tests and pacer-sim: the same answers as the Redis store.
// Memory: about 100 bytes per (recipient, scope) with a send in its window;
// pairs whose window has passed are dropped as the map grows.
FrequencyCapStorePtr makeMemoryFrequencyCapStore();

}  // namespace pacer
