// pacerd's global quota: the Redis backend built from --redis, and the log
// lines of its degraded mode.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "daemon_parts.h"

namespace pacer::worker {
namespace {

// "HOST:PORT" -> the address; throws DaemonConfigError naming the bad node.
RedisAddress parseNode(const std::string& node) {
  const std::size_t colon = node.rfind(':');
  int port = 0;
  if (colon != std::string::npos && colon != 0) {
    try {
      std::size_t used = 0;
      port = std::stoi(node.substr(colon + 1), &used);
      if (used != node.size() - colon - 1 || port <= 0 || port > 65535) port = 0;
    } catch (const std::exception&) {
      port = 0;
    }
  }
  if (port == 0) throw DaemonConfigError(fmt::format("--redis '{}': expected HOST:PORT", node));
  return RedisAddress{node.substr(0, colon), port};
}

}  // namespace

QuotaBackendPtr makeQuota(const DaemonOptions& o, const TimeSource* clock, const logging::LoggerPtr& log) {
  RedisQuotaOptions ro;
  ro.nodes.clear();
  for (const std::string& node : o.redis) ro.nodes.push_back(parseNode(node));
  ro.cluster = o.redis_cluster;
  ro.link.connect_timeout = o.redis_timeout;
  ro.link.command_timeout = o.redis_timeout;
  ro.clock = clock;
  ro.log = log;
  auto backend = makeRedisQuotaBackend(ro);
  try {
    backend->connect();
    log->info("event=quota_connected redis={} cluster={}", fmt::join(o.redis, ","), o.redis_cluster);
  } catch (const QuotaError& e) {
    log->warn("event=quota_unavailable redis={} error=\"{}\" (degraded until it answers)", fmt::join(o.redis, ","),
              e.what());
  }
  return backend;
}

void QuotaLog::onDegraded(std::string_view provider, DegradedMode mode, bool entered) noexcept {
  try {
    log_->log(entered ? spdlog::level::warn : spdlog::level::info, "event={} provider={} mode={}",
              entered ? "quota_degraded" : "quota_recovered", provider,
              mode == DegradedMode::kStop ? "stop" : "local-share");
  } catch (...) {
  }
}

}  // namespace pacer::worker
