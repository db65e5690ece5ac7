// One Redis server that runs one Lua script by SHA, shared by the Redis
// adapters (quota_redis, frequency_cap_redis): its hiredis connection, the
// script loaded on every new connection, the classification of faults, the
// reconnect backoff and the log lines when it is lost and back.
//
// Time: the backoff is measured on the caller's clock, in milliseconds
// (`now_ms`, any epoch); nothing here reads a clock. A clock that went back
// by more than twice backoff_max ends the wait at once.
//
// Thread-safety: none; a node belongs to one adapter instance.
#pragma once

#include <spdlog/logger.h>

#include <chrono>
#include <climits>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "pacer/redis_cluster.h"

struct redisContext;
struct redisReply;

namespace pacer::redis_cluster {

// Owns a hiredis reply (freed with freeReplyObject).
struct ReplyDeleter {
  void operator()(redisReply* r) const noexcept;
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

// What went wrong with a node, worst last.
enum class NodeFault : std::uint8_t { kNone, kIo, kTimeout, kReply };

// The worse of two faults (a batch that saw several reports the worst).
inline NodeFault worse(NodeFault a, NodeFault b) { return static_cast<int>(a) >= static_cast<int>(b) ? a : b; }

// hiredis reports a socket timeout as an I/O error whose text is the errno's:
// kTimeout for those, kIo for the rest (and for a null context).
NodeFault classify(const redisContext* c);

struct NodeOptions {
  RedisLinkOptions link{std::chrono::milliseconds(50), std::chrono::milliseconds(50), std::chrono::milliseconds(10),
                        std::chrono::milliseconds(500)};
  const char* script = "";         // Lua source, loaded on every connection
  std::string log_name = "redis";  // event=<log_name>_redis_unavailable ... in the log
  spdlog::logger* log = nullptr;   // where those lines go (null: spdlog's default logger)
};

// An adapter's node options: its `link` settings, checked (throws
// InvalidError "<who>: ..." when a timeout is not > 0 or the backoff range is
// empty), its script, its log name and its logger (null: spdlog's default).
NodeOptions makeNodeOptions(std::string_view who, const RedisLinkOptions& link, const char* script,
                            std::string log_name, spdlog::logger* log);

// The adapter's counters the node adds to (every pointer non-null).
struct NodeCounters {
  std::uint64_t* round_trips;
  std::uint64_t* script_loads;
  std::uint64_t* connects;
  std::uint64_t* io_errors;
  std::uint64_t* timeouts;
  std::uint64_t* reply_errors;
};

class ScriptNode {
 public:
  // `options` must outlive the node.
  ScriptNode(RedisAddress address, const NodeOptions& options, NodeCounters counters);
  ~ScriptNode();
  ScriptNode(const ScriptNode&) = delete;
  ScriptNode& operator=(const ScriptNode&) = delete;

  const RedisAddress& address() const noexcept { return address_; }
  redisContext* context() noexcept { return ctx_; }
  bool connected() const noexcept { return ctx_ != nullptr; }
  const std::string& sha() const noexcept { return sha_; }
  // The last fault: its kind and "redis host:port: <why>".
  NodeFault fault() const noexcept { return fault_; }
  const std::string& error() const noexcept { return error_; }

  // Connected with the script loaded, or the fault; while backing off it
  // answers the last fault at once, without a system call.
  NodeFault ensure(std::int64_t now_ms);
  // The same, ignoring the backoff (an explicit connect).
  NodeFault open(std::int64_t now_ms);
  // SCRIPT LOAD on the open connection (again after NOSCRIPT).
  NodeFault loadScript(std::int64_t now_ms);
  // Drops the connection (a half-read pipeline cannot be resumed), counts
  // and logs the fault (the log once per outage) and starts or doubles the
  // backoff. Returns `f`.
  NodeFault fail(NodeFault f, std::string_view why, std::int64_t now_ms);
  // fail() with the context's own error (classified).
  NodeFault failFromContext(std::int64_t now_ms);
  void close() noexcept;

 private:
  std::string where() const;
  spdlog::logger& logger() const;

  RedisAddress address_;
  const NodeOptions& options_;
  NodeCounters counters_;
  redisContext* ctx_ = nullptr;
  std::string sha_;
  std::string cause_;
  std::string error_;
  NodeFault fault_ = NodeFault::kNone;
  std::int64_t next_try_ms_ = INT64_MIN;
  std::chrono::milliseconds backoff_;
  bool lost_ = false;  // logged as unavailable; the next connect is logged as back
};

}  // namespace pacer::redis_cluster
