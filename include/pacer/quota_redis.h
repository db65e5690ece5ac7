// The Redis QuotaBackend (target pacer::quota_redis; hiredis stays behind it).
//
// One Lua script (src/quota/lease.lua, embedded at build time) does a whole
// request atomically with Redis's own TIME as the clock. It is loaded once per
// connection (SCRIPT LOAD) and called by SHA; a NOSCRIPT answer (SCRIPT FLUSH,
// restart, failover) reloads it and retries without the caller noticing.
// A batch is one pipelined round trip per Redis node (one node unless
// clustered). Keys are "<prefix>:{<scope>}:<level key>", so every key of a
// request shares a hash tag and a Redis Cluster slot.
//
// Faults never become grants: an I/O error, a timeout, an error reply or a
// reply of the wrong type answers kUnavailable for the requests involved (and
// is logged); a request whose reply was lost may have been charged in Redis,
// which only costs tokens. A lost connection is retried with exponential
// backoff measured on acquire()'s `now` (no clock is read for it); while
// backing off, acquire() answers kUnavailable at once.
//
// Redis Cluster: a node lost (refused, broken, timed out) makes the slot map
// suspect; it is reread from any node that answers, at most once per
// backoff_max, while batches keep meeting a lost node, so the keys of a dead
// master follow the replica promoted in its place (it never sends MOVED).
//
// Thread-safety: none; one backend (its connections) per worker thread.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "pacer/error.h"
#include "pacer/quota.h"
#include "pacer/redis_cluster.h"  // RedisAddress, redisClusterSlot

namespace spdlog {
class logger;
}
#include "pacer/time.h"

namespace pacer {

// Errors at the Redis boundary, for the calls that may throw (start-up).
// The per-tick path reports them as counts and kUnavailable instead.
class QuotaError : public Error {
 public:
  explicit QuotaError(const std::string& what, ErrorKind kind = ErrorKind::kUnavailable) : Error(kind, what) {}
};
class IoError : public QuotaError {  // cannot connect, connection lost
 public:
  using QuotaError::QuotaError;
};
class TimeoutError : public QuotaError {  // connect or command timeout
 public:
  using QuotaError::QuotaError;
};
class ReplyError : public QuotaError {  // an error reply, or a reply of the wrong type
 public:
  explicit ReplyError(const std::string& what) : QuotaError(what, ErrorKind::kRejected) {}
};

struct RedisQuotaOptions {
  // Standalone: the server. Cluster: any nodes to learn the slot map from.
  std::vector<RedisAddress> nodes{RedisAddress{}};
  bool cluster = false;
  RedisLinkOptions link{std::chrono::milliseconds(50), std::chrono::milliseconds(50), std::chrono::milliseconds(10),
                        std::chrono::milliseconds(500)};
  std::string key_prefix = "pacer";
  // Read once per batch, after the replies, to time the grants from their
  // arrival (LeaseReply::answered_at); null: the caller's `now` is used.
  const TimeSource* clock = nullptr;
  // Where its log lines go ("event=quota_... key=value", as pacerd's own);
  // null: spdlog's default logger. Lines that can repeat per request (error
  // replies, refused limits) are written at most once per scope per 10 s.
  std::shared_ptr<spdlog::logger> log;
};

// Upper bounds (seconds) of the round-trip latency histogram's buckets; one
// more bucket holds everything slower.
inline constexpr std::array<double, 12> kRedisRoundTripBounds{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                              0.01,   0.025,   0.05,   0.1,   0.25,   0.5};

// Counters since construction.
struct RedisQuotaStats {
  std::uint64_t round_trips = 0;  // pipelined flushes + replies read, per node
  std::uint64_t commands = 0;     // EVALSHA sent
  std::uint64_t script_loads = 0;
  std::uint64_t noscript_retries = 0;
  std::uint64_t moved = 0;
  std::uint64_t asked = 0;
  std::uint64_t slot_refreshes = 0;
  std::uint64_t io_errors = 0;
  std::uint64_t timeouts = 0;
  std::uint64_t reply_errors = 0;  // error replies and wrong-type replies
  std::uint64_t limits_refused = 0;  // typed refusals: a level the script cannot hold (QuotaStatus::kRefusedLimit)
  std::uint64_t connects = 0;      // successful (re)connections
  // The lease batches' round trips as acquire() waited for them: from the
  // first command appended to the last reply read, per attempt that sent
  // anything (one pipelined round trip per node; a NOSCRIPT or MOVED retry is
  // an attempt of its own). Per bucket of kRedisRoundTripBounds, not
  // cumulative; the last bucket is above the last bound.
  std::array<std::uint64_t, kRedisRoundTripBounds.size() + 1> round_trip_buckets{};
  std::uint64_t round_trip_count = 0;
  double round_trip_seconds = 0.0;  // their sum
};

class RedisQuotaBackend : public QuotaBackend {
 public:
  // Connects (and loads the script, and reads the slot map) now; throws
  // IoError / TimeoutError / ReplyError if that fails. Optional: acquire()
  // connects by itself.
  virtual void connect() = 0;
  virtual const RedisQuotaStats& stats() const noexcept = 0;
};
using RedisQuotaBackendPtr = std::unique_ptr<RedisQuotaBackend>;

// Does not connect yet (see connect()). Throws std::invalid_argument for
// empty nodes or non-positive timeouts.
RedisQuotaBackendPtr makeRedisQuotaBackend(RedisQuotaOptions options);

}  // namespace pacer
