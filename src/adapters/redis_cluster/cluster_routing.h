// Redis Cluster routing shared by the Redis adapters (quota_redis,
// frequency_cap_redis): which node owns a slot, what a CLUSTER SLOTS reply
// and a MOVED / ASK error say. The connections are script_node.h's, the
// nodes and the map's upkeep (failover included) cluster_nodes.h's.
//
// Thread-safety: none; a SlotMap belongs to one adapter instance.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "pacer/redis_cluster.h"

struct redisReply;
struct redisContext;

namespace pacer::redis_cluster {

inline constexpr std::size_t kSlots = 16384;
// Attempts per query in one batch: the first plus NOSCRIPT / MOVED / ASK retries.
inline constexpr int kMaxAttempts = 4;

enum class Redirect : std::uint8_t { kNone, kMoved, kAsk };

// An error reply "MOVED 3999 127.0.0.1:6381" or "ASK 3999 127.0.0.1:6381":
// its kind, and the node in `to`. kNone for any other text (`to` untouched).
Redirect parseRedirect(std::string_view error, RedisAddress& to);

// The nodes met so far (seeds first, then nodes named by CLUSTER SLOTS or
// redirects; never removed, so indexes stay valid) and the owner of every slot.
class SlotMap {
 public:
  // Adds the seeds as nodes 0..n-1; every slot starts owned by node 0.
  explicit SlotMap(const std::vector<RedisAddress>& seeds);

  // The index of `a`, added if new.
  std::size_t nodeFor(const RedisAddress& a);
  const std::vector<RedisAddress>& nodes() const noexcept { return nodes_; }
  std::size_t owner(std::uint16_t slot) const noexcept { return owner_[slot % kSlots]; }
  // After a MOVED: the slot is `node`'s until the next apply().
  void setOwner(std::uint16_t slot, std::size_t node) noexcept { owner_[slot % kSlots] = node; }
  // Applies a CLUSTER SLOTS reply read from node `from` (its host stands in
  // for an empty one). Returns false, the map unchanged, if the reply is
  // malformed. Nodes it names (masters and replicas) are added. `moved`, if
  // given, gets how many slots changed owner (0 on the first apply).
  bool apply(const redisReply& reply, std::size_t from, std::size_t* moved = nullptr);
  bool known() const noexcept { return known_; }  // an apply() has succeeded

 private:
  std::vector<RedisAddress> nodes_;
  std::vector<std::size_t> owner_;
  bool known_ = false;
};

// Appends ASKING to the pipeline (its reply must be read and dropped before
// the next command's). False if hiredis cannot (out of memory).
bool appendAsking(redisContext* c);

}  // namespace pacer::redis_cluster
