// Redis Cluster routing: slot map, CLUSTER SLOTS, MOVED / ASK. See cluster_routing.h.
#include "cluster_routing.h"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <charconv>

namespace pacer::redis_cluster {

Redirect parseRedirect(std::string_view msg, RedisAddress& to) {
  Redirect kind = Redirect::kNone;
  if (msg.starts_with("MOVED "))
    kind = Redirect::kMoved;
  else if (msg.starts_with("ASK "))
    kind = Redirect::kAsk;
  else
    return Redirect::kNone;
  const std::size_t sp = msg.rfind(' ');
  const std::size_t colon = msg.rfind(':');
  if (sp == std::string_view::npos || colon == std::string_view::npos || colon < sp) return Redirect::kNone;
  const std::string_view host = msg.substr(sp + 1, colon - sp - 1);
  const std::string_view port = msg.substr(colon + 1);
  int p = 0;
  const auto r = std::from_chars(port.data(), port.data() + port.size(), p);
  if (host.empty() || r.ec != std::errc() || r.ptr != port.data() + port.size() || p < 1 || p > 65535)
    return Redirect::kNone;
  to.host.assign(host);
  to.port = p;
  return kind;
}

SlotMap::SlotMap(const std::vector<RedisAddress>& seeds) : owner_(kSlots, 0) {
  for (const RedisAddress& a : seeds) nodeFor(a);
}

std::size_t SlotMap::nodeFor(const RedisAddress& a) {
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].host == a.host && nodes_[i].port == a.port) return i;
  nodes_.push_back(a);
  return nodes_.size() - 1;
}

bool SlotMap::apply(const redisReply& r, std::size_t from, std::size_t* moved) {
  if (r.type != REDIS_REPLY_ARRAY) return false;
  std::size_t changed = 0;
  for (std::size_t i = 0; i < r.elements; ++i) {
    const redisReply* e = r.element[i];
    // [start, end, [host, port, id...], replicas...]
    const bool ok = e->type == REDIS_REPLY_ARRAY && e->elements >= 3 && e->element[0]->type == REDIS_REPLY_INTEGER &&
                    e->element[1]->type == REDIS_REPLY_INTEGER && e->element[2]->type == REDIS_REPLY_ARRAY &&
                    e->element[2]->elements >= 2 && e->element[2]->element[0]->type == REDIS_REPLY_STRING &&
                    e->element[2]->element[1]->type == REDIS_REPLY_INTEGER;
    if (!ok) return false;
  }
  for (std::size_t i = 0; i < r.elements; ++i) {
    const redisReply* e = r.element[i];
    const long long lo = e->element[0]->integer;
    const long long hi = e->element[1]->integer;
    RedisAddress a{std::string(e->element[2]->element[0]->str, e->element[2]->element[0]->len),
                   static_cast<int>(e->element[2]->element[1]->integer)};
    if (a.host.empty() && from < nodes_.size()) a.host = nodes_[from].host;
    const std::size_t idx = nodeFor(a);
    for (long long s = std::max(0LL, lo); s <= hi && s < static_cast<long long>(kSlots); ++s) {
      std::size_t& owner = owner_[static_cast<std::size_t>(s)];
      if (known_ && owner != idx) ++changed;
      owner = idx;
    }
    // Replicas are met too: more nodes to reread the map from when a master is lost.
    for (std::size_t j = 3; j < e->elements; ++j) {
      const redisReply* rep = e->element[j];
      if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 2 || rep->element[0]->type != REDIS_REPLY_STRING ||
          rep->element[1]->type != REDIS_REPLY_INTEGER || rep->element[0]->len == 0)
        continue;
      nodeFor(RedisAddress{std::string(rep->element[0]->str, rep->element[0]->len),
                           static_cast<int>(rep->element[1]->integer)});
    }
  }
  if (moved != nullptr) *moved = changed;
  known_ = true;
  return true;
}

bool appendAsking(redisContext* c) {
  const char* argv[] = {"ASKING"};
  const std::size_t lens[] = {6};
  return redisAppendCommandArgv(c, 1, argv, lens) == REDIS_OK;
}

}  // namespace pacer::redis_cluster
