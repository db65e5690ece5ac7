// The providers' shared adaptive state as every worker sees it: the effective
// rate and the pause kept in Redis by the quota's Lua script
// (src/quota/lease.lua, key "<prefix>:{<provider>}:a", fields r and pu). Read
// with one pipelined round trip (TIME, then one HMGET per provider); a Redis
// Cluster's MOVED answer is followed once. Not thread-safe: the console's
// refresher thread owns it. Throws ProviderStateError when Redis does not
// answer.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "pacer/error.h"

struct redisContext;

namespace pacer::console {

class ProviderStateError : public Error {
 public:
  explicit ProviderStateError(const std::string& what) : Error(ErrorKind::kUnavailable, what) {}
};

struct SharedProviderState {
  std::optional<double> effective;  // msg/s; nullopt: no state in Redis (at its configured rate)
  double paused_s = 0;              // seconds the provider stays paused (0: not paused)
};

// The hash tag of a provider's keys: its id with '{', '}' and '%' escaped, as
// the worker core names its quota scopes (worker_core.cc quotaName).
std::string quotaScope(const std::string& provider);

class ProviderStateReader {
 public:
  // `nodes`: "HOST:PORT" (the first one is asked; with a cluster, MOVED says
  // where a key lives). `timeout` bounds the connect and every command.
  ProviderStateReader(std::vector<std::string> nodes, std::chrono::milliseconds timeout,
                      std::string key_prefix = "pacer");
  ~ProviderStateReader();
  ProviderStateReader(const ProviderStateReader&) = delete;
  ProviderStateReader& operator=(const ProviderStateReader&) = delete;

  std::map<std::string, SharedProviderState> read(const std::vector<std::string>& providers);

  // The cluster's counters (hash "<prefix>:{counts}", fields as
  // console_model.h countField names them): adds `deltas` with one pipelined
  // HINCRBY each, and reads `fields` with one HMGET (absent fields: 0).
  // Throws ProviderStateError when Redis does not answer or refuses; then
  // none, some or all of the deltas were added (the caller sends them again:
  // at worst a count is too high by one write's deltas, never lost).
  void addCounts(const std::map<std::string, std::uint64_t>& deltas);
  std::map<std::string, std::uint64_t> readCounts(const std::vector<std::string>& fields);

 private:
  redisContext* contextFor(const std::string& key);  // the node holding `key` (one MOVED followed)
  struct Node;
  Node& node(const std::string& address);
  std::vector<std::string> nodes_;
  std::chrono::milliseconds timeout_;
  std::string prefix_;
  std::map<std::string, std::unique_ptr<Node>> connections_;
};

}  // namespace pacer::console
