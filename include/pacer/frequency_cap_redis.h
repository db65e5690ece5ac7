// The Redis FrequencyCapStore (target pacer::frequency_cap_redis; hiredis
// stays behind it).
//
// State: one string key per (recipient, scope), "<prefix>:{<recipient>}:<scope>",
// holding the sends in the window as packed 6-byte big-endian millisecond
// stamps (at most `limit` of them), with PEXPIRE = the time until the newest
// stamp leaves the window, so an idle recipient costs nothing after a window.
// The hash tag keeps every scope of a recipient in one Redis Cluster slot.
//
// One Lua script (src/adapters/frequency_cap_redis/frequency_cap.lua,
// embedded at build time) checks and counts atomically; each call has one
// key. It is loaded once per connection and called by EVALSHA; a NOSCRIPT
// answer (SCRIPT FLUSH, restart) loads it again and resends only those
// queries, without the caller noticing. A batch is one pipelined round trip
// per node (redisAppendCommandArgv for every query, then redisGetReply for
// every reply).
//
// Redis Cluster (cluster_nodes given): the key format is the same (the hash
// tag already puts a recipient's keys in one slot), queries are grouped by
// their recipient's slot owner, read from CLUSTER SLOTS (shared routing with
// pacer::quota_redis: src/adapters/redis_cluster). MOVED sends the query to
// the node named and rereads the map before the next batch; ASK sends it
// there once with ASKING; at most 4 sends per query per batch. A lost node
// makes a later batch reread the map (at most once per backoff_max), so a
// replica promoted in its place is found.
//
// Faults: a node that cannot be reached, or whose replies stop, answers
// kUnavailable for its queries without a reply (the other nodes' queries are
// decided), with the worst fault kind in the batch result; its connection is
// dropped and retried on a later call after a backoff measured on the
// caller's `now`. Nothing here reads a clock.
//
// Thread-safety: none; one store (its connections) per worker thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pacer/frequency_cap.h"
#include "pacer/redis_cluster.h"

namespace pacer {

struct RedisFrequencyCapOptions {
  // A standalone Redis (when cluster_nodes is empty).
  std::string host = "127.0.0.1";
  int port = 6379;
  // Non-empty: a Redis Cluster, and any of its nodes to learn the slot map
  // from (host and port are then unused).
  std::vector<RedisAddress> cluster_nodes;
  // Timeouts and backoff; a batch of 1,000 queries takes Redis about 10 ms.
  RedisLinkOptions link{std::chrono::milliseconds(100), std::chrono::milliseconds(200), std::chrono::milliseconds(20),
                        std::chrono::milliseconds(2000)};
  std::string key_prefix = "fc";                // short: it is in every key
};

// Counters since construction.
struct RedisFrequencyCapStats {
  std::uint64_t round_trips = 0;  // pipelined batches sent and read (per node), SCRIPT LOADs, CLUSTER SLOTS
  std::uint64_t commands = 0;     // EVALSHA sent
  std::uint64_t script_loads = 0;
  std::uint64_t noscript_retries = 0;  // queries sent again after NOSCRIPT
  std::uint64_t moved = 0;             // queries sent again after MOVED (cluster)
  std::uint64_t asked = 0;             // queries sent again after ASK (cluster)
  std::uint64_t slot_refreshes = 0;    // CLUSTER SLOTS read
  std::uint64_t io_errors = 0;
  std::uint64_t timeouts = 0;
  std::uint64_t reply_errors = 0;
  std::uint64_t connects = 0;  // successful (re)connections
};

class RedisFrequencyCapStore : public FrequencyCapStore {
 public:
  // Connects and loads the script now (cluster: reads the slot map and
  // connects to every master); returns the fault (kNone on success) and
  // fills `why`. Optional: decide() connects by itself.
  virtual CapFault connect(std::string& why) noexcept = 0;
  virtual const RedisFrequencyCapStats& stats() const noexcept = 0;
  // The last fault's text ("" if none yet), for logs.
  virtual const std::string& lastError() const noexcept = 0;
};
using RedisFrequencyCapStorePtr = std::unique_ptr<RedisFrequencyCapStore>;

// Does not connect yet. Throws std::invalid_argument for an empty host, a
// port outside 1..65535 (also in cluster_nodes), non-positive timeouts, backoff_min <= 0 or
// backoff_max < backoff_min, or a key_prefix holding '{' or '}'.
RedisFrequencyCapStorePtr makeRedisFrequencyCapStore(RedisFrequencyCapOptions options);

}  // namespace pacer
