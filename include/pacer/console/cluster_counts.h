// Cluster-wide failure counts that survive a worker's restart: each pacerd
// adds the growth of its own counters (429/503 and 5xx answers per provider,
// retries per campaign: the snapshot its loop publishes for /metrics) to one
// Redis hash every second, which the console reads (docs/console.md "Which
// numbers are whose"). Counts from the moment the hash began; a worker that
// dies loses at most its last second. Thread-safety: the publisher runs its
// own thread; finish() is for the thread that owns it.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "pacer/admin/admin_server.h"

namespace pacer::console {

struct ClusterCountsOptions {
  std::vector<std::string> redis;  // "HOST:PORT" nodes of the global quota (not empty)
  std::chrono::milliseconds redis_timeout{100};
  std::chrono::milliseconds interval{1000};
  std::string key_prefix = "pacer";
  // Told when Redis stops or starts taking the counts again (level, text); may be empty.
  std::function<void(const char*, const std::string&)> log;
};

class ClusterCountsPublisher {
 public:
  // Starts its thread. `state` must outlive it.
  ClusterCountsPublisher(ClusterCountsOptions options, const admin::AdminState& state);
  // Stops the thread without a last write (finish() writes one).
  ~ClusterCountsPublisher();
  ClusterCountsPublisher(const ClusterCountsPublisher&) = delete;
  ClusterCountsPublisher& operator=(const ClusterCountsPublisher&) = delete;

  // Stops the thread and writes what the last published snapshot adds, once
  // (call after the loop published its final snapshot). False when Redis did
  // not take it.
  bool finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pacer::console
