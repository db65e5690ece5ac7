// The nodes one Redis adapter talks to and where its keys live: a standalone
// server (one node, every slot), or a Redis Cluster learnt from seeds with
// CLUSTER SLOTS. Shared by quota_redis and frequency_cap_redis; they keep
// their own batching and replies, this keeps the map honest:
//
//   - MOVED: the slot is the named node's at once, and the map is reread
//     before the next batch (a migration rarely moves one slot alone);
//   - a lost node (I/O error, refused connection, timeout, or still backing
//     off) makes the map suspect: it is reread before a later batch, at most
//     once per `reread_every`, for as long as batches keep meeting a lost
//     node. A dead master never answers MOVED, so this is how the keys follow
//     a replica promoted in its place;
//   - the map is read from the first node that answers, connected nodes
//     first, so a dead node costs no connect attempt when another is up.
//
// Time is the caller's, in milliseconds (see script_node.h).
//
// Thread-safety: none; one per adapter instance.
#pragma once

#include <chrono>
#include <climits>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cluster_routing.h"
#include "script_node.h"

namespace pacer::redis_cluster {

class ClusterNodes {
 public:
  // `seeds` non-empty; with cluster=false only seeds[0] is used. `options`
  // must outlive this; `slot_refreshes` counts CLUSTER SLOTS read.
  ClusterNodes(const std::vector<RedisAddress>& seeds, bool cluster, const NodeOptions& options, NodeCounters counters,
               std::uint64_t* slot_refreshes);

  bool cluster() const noexcept { return cluster_; }
  std::size_t size() const noexcept { return nodes_.size(); }
  ScriptNode& node(std::size_t i) { return *nodes_[i]; }
  // The node that owns `slot` (0 when standalone).
  std::size_t owner(std::uint16_t slot) const noexcept { return cluster_ ? map_.owner(slot) : 0; }
  // Whether any slot is node i's (standalone: node 0 only).
  bool ownsAny(std::size_t i) const;
  // The index of the node at `a` (a redirect's target), added if new.
  std::size_t nodeFor(const RedisAddress& a);
  // After MOVED: `slot` is `node`'s now, and the map is reread before the next batch.
  void moved(std::uint16_t slot, std::size_t node);
  // A node could not be reached or was lost mid-batch: on a cluster the map
  // becomes suspect (it may have failed over).
  void lost() noexcept { suspect_ = cluster_; }

  // Before a batch: rereads the map when MOVED asked for it, or when it is
  // suspect and `reread_every` has passed since the last suspect reread.
  // kNone when batches can be routed (standalone, or a map known, even if
  // stale); else the worst fault met and lastError() says why.
  NodeFault prepare(std::int64_t now_ms);
  // Reads CLUSTER SLOTS now from the first node that answers (ignore_backoff:
  // connects even to nodes backing off, as an explicit connect does).
  NodeFault refresh(std::int64_t now_ms, bool ignore_backoff);
  bool known() const noexcept { return !cluster_ || map_.known(); }
  const std::string& lastError() const noexcept { return last_error_; }

 private:
  spdlog::logger& log() const;
  NodeFault readSlots(std::size_t k, std::int64_t now_ms);
  void syncNodes();

  const NodeOptions& options_;
  NodeCounters counters_;
  std::uint64_t* slot_refreshes_;
  bool cluster_;
  SlotMap map_;
  std::vector<std::unique_ptr<ScriptNode>> nodes_;
  bool need_slots_;
  bool suspect_ = false;
  std::int64_t next_suspect_reread_ms_ = INT64_MIN;
  std::string last_error_;
};

}  // namespace pacer::redis_cluster
