// Throwaway redis-server processes for integration tests: each runs in its
// own temp directory on a free loopback port, and is killed (SIGKILL) and its
// directory deleted on destruction, also when the test failed.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "support/loopback.h"    // runShell, freeLoopbackPort
#include "support/wait_until.h"  // waitUntil

namespace pacer::testing {

class RedisServer {
 public:
  // Starts a server; `extra` are more command-line arguments. Throws
  // std::runtime_error with the server log if it does not answer PING in 10 s.
  explicit RedisServer(std::vector<std::string> extra = {});
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  int port() const { return port_; }
  bool running() const { return pid_ > 0; }  // started and not killed since
  const std::string& dir() const { return dir_; }
  // SIGKILL (no shutdown, nothing saved); start() brings it back, same port, empty.
  void kill();
  void start();
  // Runs one command (redis-cli syntax split on spaces) and returns the reply
  // as text ("" for nil); throws std::runtime_error on an I/O error.
  std::string command(const std::string& cmd) const;
  // The same with the arguments given one by one (empty ones allowed).
  std::string command(const std::vector<std::string>& args) const;
  // The server's own clock (TIME), in microseconds: the lease script's clock.
  std::int64_t micros() const;

 private:
  std::vector<std::string> extra_;
  std::string dir_;
  int port_ = 0;
  int pid_ = 0;
};

// A Redis Cluster on loopback (three masters, no replicas, unless told),
// created with `redis-cli --cluster create`; ready (cluster_state:ok
// everywhere, every replica's link to its master up) when the constructor
// returns. Replicas fail over without regard to how long their link has been
// down (cluster-replica-validity-factor 0), so a killed master's replica is
// promoted about `node_timeout` plus an election later. Destroying it kills
// every node.
class RedisCluster {
 public:
  explicit RedisCluster(int masters = 3, int replicas_per_master = 0,
                        std::chrono::milliseconds node_timeout = std::chrono::milliseconds(5000));
  std::vector<std::unique_ptr<RedisServer>>& nodes() { return nodes_; }
  // The node that owns `slot` now (by asking CLUSTER SLOTS on the first
  // running node).
  RedisServer& owner(int slot);
  // Moves `slot` with its keys from `from` to `to` (SETSLOT IMPORTING /
  // MIGRATING, MIGRATE); with finish=false it stops before SETSLOT NODE, so
  // the source answers ASK for the moved keys.
  void migrateSlot(int slot, RedisServer& from, RedisServer& to, bool finish);

 private:
  std::vector<std::unique_ptr<RedisServer>> nodes_;
};

}  // namespace pacer::testing
