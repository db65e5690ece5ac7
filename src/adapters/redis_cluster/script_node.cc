// One Redis server running one script by SHA. See script_node.h.
#include "script_node.h"

#include <hiredis/hiredis.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "pacer/error.h"

namespace pacer::redis_cluster {

void ReplyDeleter::operator()(redisReply* r) const noexcept { freeReplyObject(r); }

namespace {

timeval toTimeval(std::chrono::milliseconds ms) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

}  // namespace

NodeFault classify(const redisContext* c) {
  if (c == nullptr) return NodeFault::kIo;
  const char* s = c->errstr;
  if (std::strstr(s, "temporarily unavailable") != nullptr || std::strstr(s, "timed out") != nullptr ||
      std::strstr(s, "Timeout") != nullptr)
    return NodeFault::kTimeout;
  return NodeFault::kIo;
}

NodeOptions makeNodeOptions(std::string_view who, const RedisLinkOptions& link, const char* script,
                            std::string log_name, spdlog::logger* log) {
  if (link.connect_timeout.count() <= 0 || link.command_timeout.count() <= 0)
    throw InvalidError(std::string(who) + ": timeouts must be > 0 ms");
  if (link.backoff_min.count() <= 0 || link.backoff_max < link.backoff_min)
    throw InvalidError(std::string(who) + ": need 0 < backoff_min <= backoff_max");
  return NodeOptions{link, script, std::move(log_name), log};
}

ScriptNode::ScriptNode(RedisAddress address, const NodeOptions& options, NodeCounters counters)
    : address_(std::move(address)), options_(options), counters_(counters), backoff_(options.link.backoff_min) {}

ScriptNode::~ScriptNode() { close(); }

NodeFault ScriptNode::ensure(std::int64_t now_ms) {
  if (ctx_ != nullptr) return NodeFault::kNone;
  if (now_ms < next_try_ms_ && now_ms >= next_try_ms_ - options_.link.backoff_max.count() * 2) {
    error_ = where() + "backing off after: " + cause_;
    return fault_;
  }
  return open(now_ms);
}

spdlog::logger& ScriptNode::logger() const {
  return options_.log != nullptr ? *options_.log : *spdlog::default_logger_raw();
}

NodeFault ScriptNode::open(std::int64_t now_ms) {
  if (ctx_ != nullptr) return NodeFault::kNone;
  ctx_ = redisConnectWithTimeout(address_.host.c_str(), address_.port, toTimeval(options_.link.connect_timeout));
  if (ctx_ == nullptr || ctx_->err != 0) return fail(classify(ctx_), ctx_ ? ctx_->errstr : "out of memory", now_ms);
  redisSetTimeout(ctx_, toTimeval(options_.link.command_timeout));
  redisEnableKeepAlive(ctx_);
  const NodeFault f = loadScript(now_ms);
  if (f != NodeFault::kNone) return f;
  ++*counters_.connects;
  if (lost_)
    logger().info("event={}_redis_reconnected redis={}:{}", options_.log_name, address_.host, address_.port);
  lost_ = false;
  fault_ = NodeFault::kNone;
  backoff_ = options_.link.backoff_min;
  return NodeFault::kNone;
}

NodeFault ScriptNode::loadScript(std::int64_t now_ms) {
  ++*counters_.script_loads;
  ++*counters_.round_trips;
  ReplyPtr r(static_cast<redisReply*>(redisCommand(ctx_, "SCRIPT LOAD %s", options_.script)));
  if (!r) return failFromContext(now_ms);
  if (r->type != REDIS_REPLY_STRING) {
    ++*counters_.reply_errors;
    const std::string why =
        r->type == REDIS_REPLY_ERROR ? std::string(r->str, r->len) : std::string("SCRIPT LOAD: not a string reply");
    return fail(NodeFault::kReply, why, now_ms);
  }
  sha_.assign(r->str, r->len);
  return NodeFault::kNone;
}

NodeFault ScriptNode::fail(NodeFault f, std::string_view why, std::int64_t now_ms) {
  if (f == NodeFault::kTimeout) ++*counters_.timeouts;
  if (f == NodeFault::kIo) ++*counters_.io_errors;
  cause_.assign(why);
  error_ = where() + cause_;
  fault_ = f;
  if (!lost_)
    logger().warn("event={}_redis_unavailable redis={}:{} error=\"{}\" action=\"retrying with backoff\"",
                  options_.log_name, address_.host, address_.port, cause_);
  lost_ = true;
  close();
  next_try_ms_ = now_ms + backoff_.count();
  backoff_ = std::min(backoff_ * 2, options_.link.backoff_max);
  return f;
}

NodeFault ScriptNode::failFromContext(std::int64_t now_ms) {
  const NodeFault f = classify(ctx_);
  const std::string why = ctx_ != nullptr ? ctx_->errstr : "no connection";
  return fail(f, why, now_ms);
}

void ScriptNode::close() noexcept {
  if (ctx_ != nullptr) redisFree(ctx_);
  ctx_ = nullptr;
}

std::string ScriptNode::where() const { return "redis " + address_.host + ":" + std::to_string(address_.port) + ": "; }

}  // namespace pacer::redis_cluster
