// The Redis FrequencyCapStore: hiredis, one pipelined round trip per batch,
// EVALSHA with NOSCRIPT reload, backoff on the caller's clock. See
// include/pacer/frequency_cap_redis.h.
#include <hiredis/hiredis.h>
#include "pacer/error.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "frequency_cap_redis/frequency_cap_lua.h"
#include "pacer/frequency_cap_redis.h"

namespace pacer {
namespace {

struct ReplyDeleter {
  void operator()(redisReply* r) const noexcept { freeReplyObject(r); }
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

timeval toTimeval(std::chrono::milliseconds ms) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

// hiredis reports a socket timeout as an I/O error whose text is the errno's.
CapFault classify(const redisContext* c) {
  if (c == nullptr) return CapFault::kIo;
  const char* s = c->errstr;
  if (std::strstr(s, "temporarily unavailable") != nullptr || std::strstr(s, "timed out") != nullptr ||
      std::strstr(s, "Timeout") != nullptr)
    return CapFault::kTimeout;
  return CapFault::kIo;
}

// Worse faults win when a batch sees several.
CapFault worse(CapFault a, CapFault b) { return static_cast<int>(a) >= static_cast<int>(b) ? a : b; }

class RedisFrequencyCapStoreImpl final : public RedisFrequencyCapStore {
 public:
  explicit RedisFrequencyCapStoreImpl(RedisFrequencyCapOptions options) : options_(std::move(options)) {
    if (options_.host.empty()) throw InvalidError("redis frequency cap: empty host");
    if (options_.port < 1 || options_.port > 65535)
      throw InvalidError("redis frequency cap: port must be 1..65535");
    if (options_.connect_timeout.count() <= 0 || options_.command_timeout.count() <= 0)
      throw InvalidError("redis frequency cap: timeouts must be > 0 ms");
    if (options_.backoff_min.count() <= 0 || options_.backoff_max < options_.backoff_min)
      throw InvalidError("redis frequency cap: need 0 < backoff_min <= backoff_max");
    if (options_.key_prefix.find_first_of("{}") != std::string::npos)
      throw InvalidError("redis frequency cap: key_prefix must not hold '{' or '}'");
    backoff_ = options_.backoff_min;
  }
  ~RedisFrequencyCapStoreImpl() override { close(); }

  CapFault connect(std::string& why) noexcept override {
    const CapFault f = open();  // explicit: ignores the backoff
    why = f == CapFault::kNone ? std::string() : last_error_;
    return f;
  }

  const RedisFrequencyCapStats& stats() const noexcept override { return stats_; }
  const std::string& lastError() const noexcept override { return last_error_; }

  CapBatchResult decide(std::span<const CapQuery> queries, WallTime now, std::span<CapDecision> out) noexcept override {
    const std::size_t n = std::min(queries.size(), out.size());
    pending_.clear();
    for (std::size_t i = 0; i < n; ++i) {
      const bool ok = validCapQuery(queries[i]) && validCapTime(now);
      out[i] = CapDecision{ok ? CapVerdict::kUnavailable : CapVerdict::kInvalid, now, 0};
      if (ok) pending_.push_back(i);
    }
    setNumber(now_text_, now.time_since_epoch().count());
    CapBatchResult result = run(
        now, [&](std::size_t i) { return appendDecide(queries[i]); },
        [&](std::size_t i, const redisReply& r) { return takeDecision(r, out[i]); });
    for (std::size_t i = 0; i < n; ++i)
      if (out[i].verdict == CapVerdict::kAllowed || out[i].verdict == CapVerdict::kCapped) ++result.decided;
    return result;
  }

  CapBatchResult release(std::span<const CapRelease> releases, WallTime now) noexcept override {
    pending_.clear();
    for (std::size_t i = 0; i < releases.size(); ++i) {
      const CapRelease& r = releases[i];
      const CapQuery shape{r.recipient, r.scope, 1, std::chrono::milliseconds(1)};
      if (validCapQuery(shape) && validCapTime(r.counted_at)) pending_.push_back(i);
    }
    std::size_t removed = 0;
    const auto take = [&](std::size_t, const redisReply& r) {
      if (r.type != REDIS_REPLY_INTEGER) return false;
      removed += r.integer == 1 ? 1 : 0;
      return true;
    };
    CapBatchResult result = run(
        now, [&](std::size_t i) { return appendRelease(releases[i]); }, take);
    result.decided = removed;
    return result;
  }

 private:
  static void setNumber(std::string& out, std::int64_t v) {
    char buf[24];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.assign(buf, r.ptr);
  }

  // Connected with the script loaded, or the fault. Honours the backoff,
  // measured on the caller's clock (a clock that went back restarts it).
  CapFault ensure() {
    if (ctx_ != nullptr) return CapFault::kNone;
    if (now_ms_ < next_try_ms_ && now_ms_ >= next_try_ms_ - options_.backoff_max.count() * 2) {
      last_error_ = "backing off after: " + cause_;
      return last_fault_;
    }
    return open();
  }

  CapFault open() {
    if (ctx_ != nullptr) return CapFault::kNone;
    ctx_ = redisConnectWithTimeout(options_.host.c_str(), options_.port, toTimeval(options_.connect_timeout));
    if (ctx_ == nullptr || ctx_->err != 0) return fail(classify(ctx_), ctx_ ? ctx_->errstr : "out of memory");
    redisSetTimeout(ctx_, toTimeval(options_.command_timeout));
    redisEnableKeepAlive(ctx_);
    const CapFault f = loadScript();
    if (f != CapFault::kNone) return f;
    ++stats_.connects;
    backoff_ = options_.backoff_min;
    return CapFault::kNone;
  }

  CapFault loadScript() {
    ++stats_.script_loads;
    ++stats_.round_trips;
    ReplyPtr r(static_cast<redisReply*>(redisCommand(ctx_, "SCRIPT LOAD %s", rules::kFrequencyCapLua)));
    if (!r) return fail(classify(ctx_), ctx_->errstr);
    if (r->type != REDIS_REPLY_STRING) {
      ++stats_.reply_errors;
      return fail(CapFault::kReply, r->type == REDIS_REPLY_ERROR ? r->str : "SCRIPT LOAD: not a string reply");
    }
    sha_.assign(r->str, r->len);
    return CapFault::kNone;
  }

  // Drops the connection (a half-read pipeline cannot be resumed) and waits
  // a doubling backoff before the next attempt.
  CapFault fail(CapFault f, const char* why) {
    if (f == CapFault::kTimeout) ++stats_.timeouts;
    if (f == CapFault::kIo) ++stats_.io_errors;
    cause_ = why;
    last_error_ = "redis " + options_.host + ":" + std::to_string(options_.port) + ": " + cause_;
    last_fault_ = f;
    close();
    next_try_ms_ = now_ms_ + backoff_.count();
    backoff_ = std::min(backoff_ * 2, options_.backoff_max);
    return f;
  }

  void close() {
    if (ctx_ != nullptr) redisFree(ctx_);
    ctx_ = nullptr;
  }

  // Arguments go into one reused buffer; hiredis copies them when appending.
  void arg(std::string_view a) {
    offsets_.emplace_back(args_.size(), a.size());
    args_.append(a);
  }
  void keyArg(std::string_view recipient, std::string_view scope) {
    const std::size_t at = args_.size();
    args_.append(options_.key_prefix).append(":{").append(recipient).append("}:").append(scope);
    offsets_.emplace_back(at, args_.size() - at);
  }

  bool appendArgs() {
    argv_.clear();
    lens_.clear();
    for (const auto& [at, len] : offsets_) {
      argv_.push_back(args_.data() + at);
      lens_.push_back(len);
    }
    ++stats_.commands;
    return redisAppendCommandArgv(ctx_, static_cast<int>(argv_.size()), argv_.data(), lens_.data()) == REDIS_OK;
  }

  void startEval(std::string_view recipient, std::string_view scope, std::string_view op) {
    args_.clear();
    offsets_.clear();
    arg("EVALSHA");
    arg(sha_);
    arg("1");
    keyArg(recipient, scope);
    arg(op);
  }

  bool appendDecide(const CapQuery& q) {
    startEval(q.recipient, q.scope, "d");
    arg(now_text_);
    setNumber(number_, q.limit);
    arg(number_);
    setNumber(number_, q.window.count());
    arg(number_);
    return appendArgs();
  }

  bool appendRelease(const CapRelease& r) {
    startEval(r.recipient, r.scope, "r");
    setNumber(number_, r.counted_at.time_since_epoch().count());
    arg(number_);
    return appendArgs();
  }

  bool takeDecision(const redisReply& r, CapDecision& out) {
    if (r.type != REDIS_REPLY_ARRAY || r.elements != 3) return false;
    for (std::size_t k = 0; k < 3; ++k)
      if (r.element[k]->type != REDIS_REPLY_INTEGER) return false;
    const long long verdict = r.element[0]->integer, at = r.element[1]->integer, count = r.element[2]->integer;
    if ((verdict != 0 && verdict != 1) || at < 0 || count < 0) return false;
    out.verdict = verdict == 1 ? CapVerdict::kAllowed : CapVerdict::kCapped;
    out.at = WallTime(std::chrono::milliseconds(at));
    out.in_window = static_cast<std::uint32_t>(std::min<long long>(count, UINT32_MAX));
    return true;
  }

  // Sends pending_ (indexes) as one pipeline and reads every reply; queries
  // answered NOSCRIPT go again once after SCRIPT LOAD. A query without a
  // usable reply is left as the caller initialised it (kUnavailable).
  template <class Send, class Take>
  CapBatchResult run(WallTime now, const Send& send, const Take& take) noexcept {
    CapBatchResult result;
    try {
      for (int attempt = 0; attempt < 2 && !pending_.empty(); ++attempt) {
        now_ms_ = now.time_since_epoch().count();
        const CapFault f = ensure();
        if (f != CapFault::kNone) return CapBatchResult{f, 0};
        for (const std::size_t i : pending_)
          if (!send(i)) return CapBatchResult{fail(CapFault::kIo, ctx_->errstr), 0};
        ++stats_.round_trips;
        retry_.clear();
        for (const std::size_t i : pending_) {
          void* raw = nullptr;
          if (redisGetReply(ctx_, &raw) != REDIS_OK || raw == nullptr) {
            result.fault = worse(result.fault, fail(classify(ctx_), ctx_->errstr));
            return result;
          }
          const ReplyPtr reply(static_cast<redisReply*>(raw));
          if (reply->type == REDIS_REPLY_ERROR && std::string_view(reply->str, reply->len).starts_with("NOSCRIPT")) {
            ++stats_.noscript_retries;
            retry_.push_back(i);
          } else if (!take(i, *reply)) {
            ++stats_.reply_errors;
            last_error_ = reply->type == REDIS_REPLY_ERROR
                              ? std::string(reply->str, reply->len)
                              : "reply of unexpected shape (type " + std::to_string(reply->type) + ")";
            result.fault = worse(result.fault, CapFault::kReply);
          }
        }
        pending_.swap(retry_);
        // Not run by Redis: load the script and send only those again.
        if (!pending_.empty() && attempt == 0 && loadScript() != CapFault::kNone) return CapBatchResult{last_fault_, 0};
      }
      if (!pending_.empty()) result.fault = worse(result.fault, CapFault::kReply);
    } catch (const std::exception& e) {  // out of memory while building arguments
      last_error_ = e.what();
      result.fault = worse(result.fault, CapFault::kIo);
    }
    return result;
  }

  RedisFrequencyCapOptions options_;
  RedisFrequencyCapStats stats_;
  redisContext* ctx_ = nullptr;
  std::string sha_;
  std::string last_error_;
  std::string cause_;
  CapFault last_fault_ = CapFault::kNone;
  std::int64_t now_ms_ = 0;  // the caller's clock at the current call
  std::int64_t next_try_ms_ = INT64_MIN;
  std::chrono::milliseconds backoff_;
  std::vector<std::size_t> pending_;
  std::vector<std::size_t> retry_;
  std::string now_text_;
  std::string number_;
  std::string args_;
  std::vector<std::pair<std::size_t, std::size_t>> offsets_;
  std::vector<const char*> argv_;
  std::vector<std::size_t> lens_;
};

}  // namespace

RedisFrequencyCapStorePtr makeRedisFrequencyCapStore(RedisFrequencyCapOptions options) {
  return std::make_unique<RedisFrequencyCapStoreImpl>(std::move(options));
}

}  // namespace pacer
