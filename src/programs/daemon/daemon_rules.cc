// pacerd's recipient rules (docs/recipient-rules.md): the tz database for
// quiet hours, read once at start, and the frequency caps' store.
#include <fmt/format.h>

#include "daemon_parts.h"
#include "pacer/frequency_cap_redis.h"

namespace pacer::worker {
namespace {

// Where the caps are counted: caps.redis, else the first quota node; "" for
// in this process.
std::string capsAddress(const DaemonOptions& o, const logging::LoggerPtr& log) {
  if (o.caps_redis == "none") return "";
  if (!o.caps_redis.empty()) return o.caps_redis;
  if (o.redis.empty()) return "";
  if (!o.redis_cluster) return o.redis.front();
  // The cap store speaks to one standalone Redis: a cluster node would answer
  // MOVED for most recipients, and those messages would wait for ever.
  if (!o.worker.class_caps.empty())
    throw DaemonConfigError(
        "caps.redis: redis.nodes are a Redis Cluster, which the frequency cap store cannot use; give caps.redis "
        "HOST:PORT of a standalone Redis (or none: counted per worker)");
  log->warn("event=caps_in_process reason=\"redis.nodes are a Redis Cluster; give caps.redis HOST:PORT\"");
  return "";
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
  const std::string at = capsAddress(o, log);
  if (at.empty()) {
    r.caps = makeMemoryFrequencyCapStore();
    log->warn(
        "event=caps_in_process hint=\"frequency caps are counted in this process only: each worker allows the "
        "full cap; give caps.redis (or redis.nodes) when several workers share recipients\"");
    return r;
  }
  RedisFrequencyCapOptions co;
  const std::size_t colon = at.rfind(':');
  co.host = at.substr(0, colon);
  co.port = std::stoi(at.substr(colon + 1));  // checked by the configuration (HOST:PORT)
  co.connect_timeout = std::max(o.redis_timeout, std::chrono::milliseconds(100));
  auto store = makeRedisFrequencyCapStore(co);
  std::string why;
  if (store->connect(why) == CapFault::kNone)
    log->info("event=caps_connected redis={}", at);
  else  // capped campaigns' messages wait (never unchecked) until it answers
    log->warn("event=caps_unavailable redis={} error=\"{}\"", at, why);
  r.caps_redis = store.get();
  r.caps = std::move(store);
  return r;
}

}  // namespace pacer::worker
