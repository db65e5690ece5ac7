// pacerd's recipient rules (docs/recipient-rules.md): the tz database for
// quiet hours, read once at start, and the frequency caps' store.
#include <fmt/format.h>

#include "daemon_parts.h"
#include "pacer/frequency_cap_redis.h"

namespace pacer::worker {
namespace {

RedisAddress parseAddress(const std::string& at) {
  const std::size_t colon = at.rfind(':');
  return RedisAddress{at.substr(0, colon), std::stoi(at.substr(colon + 1))};  // checked by the configuration
}

// Where the caps are counted: caps.redis (a cluster node with caps.cluster),
// else the quota's redis.nodes (all of them as seeds of a cluster with
// redis.cluster, else the first); "" for in this process.
std::string capsAddress(const DaemonOptions& o, RedisFrequencyCapOptions& co) {
  if (o.caps_cluster && (o.caps_redis.empty() || o.caps_redis == "none"))
    throw DaemonConfigError("caps.cluster: needs caps.redis HOST:PORT, a node of the caps' Redis Cluster");
  if (o.caps_redis == "none") return "";
  if (!o.caps_redis.empty()) {
    if (o.caps_cluster) {
      co.cluster_nodes = {parseAddress(o.caps_redis)};
      return o.caps_redis;
    }
    const RedisAddress a = parseAddress(o.caps_redis);
    co.host = a.host;
    co.port = a.port;
    return o.caps_redis;
  }
  if (o.redis.empty()) return "";
  if (o.redis_cluster) {
    for (const std::string& n : o.redis) co.cluster_nodes.push_back(parseAddress(n));
    return o.redis.front();
  }
  const RedisAddress a = parseAddress(o.redis.front());
  co.host = a.host;
  co.port = a.port;
  return o.redis.front();
}

}  // namespace

RecipientRules makeRecipientRules(const DaemonOptions& o, const logging::LoggerPtr& log) {
  RecipientRules r;
  try {
    r.zones = TimeZoneTable::loadSystem();
  } catch (const TimeZoneError& e) {
    throw DaemonConfigError(fmt::format("time zones (quiet hours): {}; install tzdata", e.what()));
  }
  log->info("event=time_zones zones={} tzdata={}", r.zones->size(), r.zones->version());
  RedisFrequencyCapOptions co;
  const std::string at = capsAddress(o, co);
  if (at.empty()) {
    r.caps = makeMemoryFrequencyCapStore();
    log->warn(
        "event=caps_in_process hint=\"frequency caps are counted in this process only: each worker allows the "
        "full cap; give caps.redis (or redis.nodes) when several workers share recipients\"");
    return r;
  }
  co.link.connect_timeout = std::max(o.redis_timeout, std::chrono::milliseconds(100));
  auto store = makeRedisFrequencyCapStore(co);
  std::string why;
  if (store->connect(why) == CapFault::kNone)
    log->info("event=caps_connected redis={} cluster={}", at, !co.cluster_nodes.empty());
  else  // capped campaigns' messages wait (never unchecked) until it answers
    log->warn("event=caps_unavailable redis={} cluster={} error=\"{}\"", at, !co.cluster_nodes.empty(), why);
  r.caps_redis = store.get();
  r.caps = std::move(store);
  return r;
}

}  // namespace pacer::worker
