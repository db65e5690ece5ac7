// Nodes and slot map of one Redis adapter. See cluster_nodes.h.
#include "cluster_nodes.h"

#include <hiredis/hiredis.h>
#include <spdlog/spdlog.h>

namespace pacer::redis_cluster {

spdlog::logger& ClusterNodes::log() const {
  return options_.log != nullptr ? *options_.log : *spdlog::default_logger_raw();
}

ClusterNodes::ClusterNodes(const std::vector<RedisAddress>& seeds, bool cluster, const NodeOptions& options,
                           NodeCounters counters, std::uint64_t* slot_refreshes)
    : options_(options),
      counters_(counters),
      slot_refreshes_(slot_refreshes),
      cluster_(cluster),
      map_(cluster ? seeds : std::vector<RedisAddress>(seeds.begin(), seeds.begin() + (seeds.empty() ? 0 : 1))),
      need_slots_(cluster) {
  syncNodes();
}

void ClusterNodes::syncNodes() {
  while (nodes_.size() < map_.nodes().size())
    nodes_.push_back(std::make_unique<ScriptNode>(map_.nodes()[nodes_.size()], options_, counters_));
}

bool ClusterNodes::ownsAny(std::size_t i) const {
  if (!cluster_) return i == 0;
  for (std::size_t s = 0; s < kSlots; ++s)
    if (map_.owner(static_cast<std::uint16_t>(s)) == i) return true;
  return false;
}

std::size_t ClusterNodes::nodeFor(const RedisAddress& a) {
  const std::size_t i = map_.nodeFor(a);
  syncNodes();
  return i;
}

void ClusterNodes::moved(std::uint16_t slot, std::size_t node) {
  map_.setOwner(slot, node);
  need_slots_ = true;
}

NodeFault ClusterNodes::prepare(std::int64_t now_ms) {
  if (!cluster_) return NodeFault::kNone;
  const std::int64_t every = options_.link.backoff_max.count();
  // A clock that went back by more than two periods allows a reread at once.
  if (suspect_ && (now_ms >= next_suspect_reread_ms_ || now_ms < next_suspect_reread_ms_ - 2 * every)) {
    need_slots_ = true;
    next_suspect_reread_ms_ = now_ms + every;
  }
  if (!need_slots_) return NodeFault::kNone;
  suspect_ = false;  // set again by the batch if it still meets a lost node
  return refresh(now_ms, false);
}

NodeFault ClusterNodes::refresh(std::int64_t now_ms, bool ignore_backoff) {
  NodeFault worst = NodeFault::kNone;
  const std::size_t known = nodes_.size();
  // Connected nodes first: a dead one is only tried when no live one answered.
  for (int pass = 0; pass < 2; ++pass) {
    for (std::size_t k = 0; k < known; ++k) {
      ScriptNode& node = *nodes_[k];
      if (node.connected() != (pass == 0)) continue;
      const NodeFault f = ignore_backoff ? node.open(now_ms) : node.ensure(now_ms);
      if (f == NodeFault::kNone) {
        const NodeFault r = readSlots(k, now_ms);
        if (r == NodeFault::kNone) return NodeFault::kNone;
        worst = worse(worst, r);
      } else {
        worst = worse(worst, f);
        last_error_ = node.error();
      }
    }
  }
  if (map_.known()) return NodeFault::kNone;  // a stale map still routes; MOVED or the next reread corrects it
  return worst == NodeFault::kNone ? NodeFault::kIo : worst;
}

NodeFault ClusterNodes::readSlots(std::size_t k, std::int64_t now_ms) {
  ScriptNode& node = *nodes_[k];
  ++*counters_.round_trips;
  ReplyPtr r(static_cast<redisReply*>(redisCommand(node.context(), "CLUSTER SLOTS")));
  if (!r) {
    const NodeFault f = node.failFromContext(now_ms);
    last_error_ = node.error();
    return f;
  }
  std::size_t moved = 0;
  const bool ok = map_.apply(*r, k, &moved);
  syncNodes();
  if (!ok) {
    ++*counters_.reply_errors;
    last_error_ = r->type == REDIS_REPLY_ERROR ? std::string(r->str, r->len) : "CLUSTER SLOTS: malformed reply";
    log().error("event={}_cluster_slots_error redis={}:{} error=\"{}\"", options_.log_name, node.address().host,
                node.address().port, last_error_);
    return NodeFault::kReply;
  }
  ++*slot_refreshes_;
  if (moved > 0)
    log().info("event={}_cluster_slots_reread redis={}:{} slots_moved={}", options_.log_name, node.address().host,
               node.address().port, moved);
  need_slots_ = false;
  return NodeFault::kNone;
}

}  // namespace pacer::redis_cluster
