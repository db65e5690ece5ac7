// One Redis server of the frequency cap store: its hiredis connection, the
// cap script's SHA there, and the reconnect backoff on the caller's clock.
// Private to pacer::frequency_cap_redis (redis_frequency_cap.cc routes and
// batches over these).
#pragma once

#include <hiredis/hiredis.h>

#include <chrono>
#include <climits>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "frequency_cap_redis/frequency_cap_lua.h"
#include "pacer/frequency_cap_redis.h"

namespace pacer::cap_redis {

struct ReplyDeleter {
  void operator()(redisReply* r) const noexcept { freeReplyObject(r); }
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

inline timeval toTimeval(std::chrono::milliseconds ms) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

// hiredis reports a socket timeout as an I/O error whose text is the errno's.
inline CapFault classify(const redisContext* c) {
  if (c == nullptr) return CapFault::kIo;
  const char* s = c->errstr;
  if (std::strstr(s, "temporarily unavailable") != nullptr || std::strstr(s, "timed out") != nullptr ||
      std::strstr(s, "Timeout") != nullptr)
    return CapFault::kTimeout;
  return CapFault::kIo;
}

// One Redis server: its connection, the script's SHA there, and the
// reconnect backoff, measured on the caller's clock.
class Node {
 public:
  Node(RedisAddress address, const RedisFrequencyCapOptions& options, RedisFrequencyCapStats& stats)
      : address_(std::move(address)), options_(options), stats_(stats), backoff_(options.backoff_min) {}
  ~Node() { close(); }
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  redisContext* context() { return ctx_; }
  const std::string& sha() const { return sha_; }
  const std::string& error() const { return error_; }
  CapFault fault() const { return fault_; }

  // Connected with the script loaded, or the fault. Honours the backoff
  // (a clock that went back restarts it).
  CapFault ensure(std::int64_t now_ms) {
    if (ctx_ != nullptr) return CapFault::kNone;
    if (now_ms < next_try_ms_ && now_ms >= next_try_ms_ - options_.backoff_max.count() * 2) {
      error_ = where() + "backing off after: " + cause_;
      return fault_;
    }
    return open(now_ms);
  }

  // Connects now, ignoring the backoff.
  CapFault open(std::int64_t now_ms) {
    if (ctx_ != nullptr) return CapFault::kNone;
    ctx_ = redisConnectWithTimeout(address_.host.c_str(), address_.port, toTimeval(options_.connect_timeout));
    if (ctx_ == nullptr || ctx_->err != 0) return fail(classify(ctx_), ctx_ ? ctx_->errstr : "out of memory", now_ms);
    redisSetTimeout(ctx_, toTimeval(options_.command_timeout));
    redisEnableKeepAlive(ctx_);
    const CapFault f = loadScript(now_ms);
    if (f != CapFault::kNone) return f;
    ++stats_.connects;
    backoff_ = options_.backoff_min;
    return CapFault::kNone;
  }

  CapFault loadScript(std::int64_t now_ms) {
    ++stats_.script_loads;
    ++stats_.round_trips;
    ReplyPtr r(static_cast<redisReply*>(redisCommand(ctx_, "SCRIPT LOAD %s", rules::kFrequencyCapLua)));
    if (!r) return fail(classify(ctx_), ctx_->errstr, now_ms);
    if (r->type != REDIS_REPLY_STRING) {
      ++stats_.reply_errors;
      return fail(CapFault::kReply, r->type == REDIS_REPLY_ERROR ? r->str : "SCRIPT LOAD: not a string reply", now_ms);
    }
    sha_.assign(r->str, r->len);
    return CapFault::kNone;
  }

  // Drops the connection (a half-read pipeline cannot be resumed) and waits
  // a doubling backoff before the next attempt.
  CapFault fail(CapFault f, const char* why, std::int64_t now_ms) {
    if (f == CapFault::kTimeout) ++stats_.timeouts;
    if (f == CapFault::kIo) ++stats_.io_errors;
    cause_ = why;
    error_ = where() + cause_;
    fault_ = f;
    close();
    next_try_ms_ = now_ms + backoff_.count();
    backoff_ = std::min(backoff_ * 2, options_.backoff_max);
    return f;
  }

  void close() {
    if (ctx_ != nullptr) redisFree(ctx_);
    ctx_ = nullptr;
  }

 private:
  std::string where() const { return "redis " + address_.host + ":" + std::to_string(address_.port) + ": "; }

  RedisAddress address_;
  const RedisFrequencyCapOptions& options_;
  RedisFrequencyCapStats& stats_;
  redisContext* ctx_ = nullptr;
  std::string sha_;
  std::string cause_;
  std::string error_;
  CapFault fault_ = CapFault::kNone;
  std::int64_t next_try_ms_ = INT64_MIN;
  std::chrono::milliseconds backoff_;
};

}  // namespace pacer::cap_redis
