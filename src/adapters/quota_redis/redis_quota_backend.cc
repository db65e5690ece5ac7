// The Redis QuotaBackend: hiredis, pipelining, NOSCRIPT reload, backoff, and
// Redis Cluster slot routing (CLUSTER SLOTS, MOVED, ASK). See quota_redis.h.
#include <fmt/format.h>
#include <hiredis/hiredis.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "cluster_nodes.h"
#include "lease_reply.h"
#include "pacer/error.h"
#include "pacer/log_limiter.h"
#include "pacer/quota_redis.h"
#include "quota/lease_lua.h"

namespace pacer {
namespace {

using Clock = std::chrono::steady_clock;  // only to time round trips for the latency histogram
using redis_cluster::kMaxAttempts;
using redis_cluster::kSlots;
using redis_cluster::NodeFault;
using redis_cluster::ReplyPtr;
using redis_cluster::ScriptNode;

std::int64_t millis(MonoTime t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

redis_cluster::NodeCounters counters(RedisQuotaStats& s) {
  return {&s.round_trips, &s.script_loads, &s.connects, &s.io_errors, &s.timeouts, &s.reply_errors};
}

// Where this backend's lines go: the structured logger it was given, else
// spdlog's default one. Lines are "event=... key=value", as pacerd's own.
spdlog::logger& quotaLog(const RedisQuotaOptions& o) { return o.log ? *o.log : *spdlog::default_logger_raw(); }

const char* refusalText(LimitRefusal r) {
  return r == LimitRefusal::kRefillTooLong
             ? "refilling the burst at this rate outlasts the longest key lifetime (the rate is too small)"
             : "a rate or burst that is not a number in range";
}

class RedisQuotaBackendImpl final : public RedisQuotaBackend {
 public:
  explicit RedisQuotaBackendImpl(RedisQuotaOptions options)
      : options_(checked(std::move(options))),
        node_options_(redis_cluster::makeNodeOptions("redis quota", options_.link, quota::kLeaseLua, "quota",
                                                     options_.log.get())),
        nodes_(options_.nodes, options_.cluster, node_options_, counters(stats_), &stats_.slot_refreshes) {}

  void connect() override {
    if (options_.clock != nullptr) now_ms_ = millis(options_.clock->now());
    if (!options_.cluster) {
      ScriptNode& server = nodes_.node(0);
      throwFault(server.open(now_ms_), server.error());
      return;
    }
    // Any seed will do: the first that answers gives the map.
    const NodeFault f = nodes_.refresh(now_ms_, true);
    if (f != NodeFault::kNone) throwFault(f, "cannot read CLUSTER SLOTS: " + nodes_.lastError());
  }

  const RedisQuotaStats& stats() const noexcept override { return stats_; }

  void acquire(std::span<const LeaseRequest> requests, MonoTime now, std::span<LeaseReply> replies) noexcept override {
    try {
      now_ms_ = millis(now);
      run(requests, replies);
    } catch (const std::exception& e) {  // out of memory and the like: nothing granted
      quotaLog(options_).error("event=quota_error error=\"{}\"", e.what());
      for (std::size_t i = 0; i < replies.size(); ++i)
        if (replies[i].status != QuotaStatus::kOk) replies[i] = LeaseReply{};
    }
    // Grants are timed from when their replies arrived, not from `now`
    // (before the round trip): Redis's clock ran on meanwhile.
    const MonoTime answered = options_.clock ? std::max(now, options_.clock->now()) : now;
    for (LeaseReply& r : replies) r.answered_at = answered;
  }

 private:
  struct Work {
    std::size_t request;
    std::size_t node;
    bool asking;
  };

  static RedisQuotaOptions checked(RedisQuotaOptions o) {
    if (o.nodes.empty()) throw InvalidError("redis quota: no nodes configured");
    return o;
  }

  static void throwFault(NodeFault f, const std::string& why) {
    switch (f) {
      case NodeFault::kNone: return;
      case NodeFault::kTimeout: throw TimeoutError("redis quota: " + why);
      case NodeFault::kReply: throw ReplyError("redis quota: " + why);
      case NodeFault::kIo: throw IoError("redis quota: " + why);
    }
  }

  void buildArgs(const LeaseRequest& r, const std::string& sha, std::vector<std::string>& out) {
    out.clear();
    out.emplace_back("EVALSHA");
    out.push_back(sha);
    const bool adaptive = r.adaptive && r.adaptive->level < r.levels.size();
    const auto us = [](Nanos d) { return std::chrono::duration_cast<std::chrono::microseconds>(d).count(); };
    // Keys only when used (lease.lua): a missing key fails a call during a slot migration.
    const bool priority = r.priority && r.priority->level < r.levels.size();
    // The classes' hash, and this class's own bucket when a floor may apply.
    const int npk = !priority ? 0 : (r.priority->floor > 0 ? 2 : 1);
    out.push_back(fmt::format("{}", r.levels.size() + (adaptive ? 1 : 0) + npk + (r.worker != 0 ? 1 : 0)));
    for (const QuotaLevel& l : r.levels)
      out.push_back(fmt::format("{}:{{{}}}:{}", options_.key_prefix, r.scope, l.key));
    if (adaptive) out.push_back(fmt::format("{}:{{{}}}:a", options_.key_prefix, r.scope));
    if (npk > 0) out.push_back(fmt::format("{}:{{{}}}:cls", options_.key_prefix, r.scope));
    if (npk > 1) out.push_back(fmt::format("{}:{{{}}}:k{}", options_.key_prefix, r.scope, r.priority->rank));
    if (r.worker != 0) out.push_back(fmt::format("{}:{{{}}}:w", options_.key_prefix, r.scope));
    out.push_back(fmt::format("{}", r.want));
    out.emplace_back(r.fill_new ? "1" : "0");
    out.push_back(fmt::format("{}", us(r.lookahead)));
    out.push_back(fmt::format("{}", r.min_grant));
    out.push_back(fmt::format("{:x}", r.worker));
    out.push_back(fmt::format("{}", r.debt));
    out.push_back(fmt::format("{}", adaptive ? r.adaptive->level + 1 : 0));
    out.push_back(fmt::format("{}", npk));
    for (const QuotaLevel& l : r.levels) {
      out.push_back(fmt::format("{}", l.limit.rate_per_s));
      out.push_back(fmt::format("{}", l.limit.burst));
    }
    if (adaptive) {
      const AdaptiveRateOptions& o = r.adaptive->options;
      const BreakerOptions& b = r.adaptive->breaker;
      out.push_back(fmt::format("{}", o.floor));
      out.push_back(fmt::format("{}", o.decrease));
      out.push_back(fmt::format("{}", o.hold_fraction));
      out.push_back(fmt::format("{}", o.fast_climb_per_s));
      out.push_back(fmt::format("{}", us(o.probe_time)));
      out.push_back(fmt::format("{}", us(o.hold)));
      out.push_back(fmt::format("{}", r.adaptive->throttled < Nanos{0} ? -1 : us(r.adaptive->throttled)));
      out.push_back(fmt::format("{}", r.adaptive->ok));
      out.push_back(fmt::format("{}", r.adaptive->faults));
      out.push_back(fmt::format("{}", b.threshold));
      out.push_back(fmt::format("{}", b.min_requests));
      out.push_back(fmt::format("{}", us(b.window)));
      out.push_back(fmt::format("{}", us(b.cooldown)));
      out.push_back(fmt::format("{}", us(b.max_cooldown)));
      // A judged ceiling's keep and a judged noise's restore, in millionths (0: none).
      const auto millionths = [](double x) {
        x = std::clamp(x, 0.0, 1.0);
        return x > 0 ? std::max<long long>(1, std::llround(x * 1e6)) : 0;
      };
      out.push_back(fmt::format("{}", millionths(r.adaptive->keep)));
      out.push_back(fmt::format("{}", millionths(r.adaptive->restore)));
      out.push_back(fmt::format("{}", r.adaptive->noise < 0 ? -1 : millionths(r.adaptive->noise)));
      // This worker's answers per second (AcceptedMeter), in thousandths (-1: not known), and
      // its throttles of one recipient over the meter's recipient window (always known).
      const AcceptedRates& own = r.adaptive->rates;
      out.push_back(fmt::format("{}", own.known() ? std::llround(std::min(own.accepted, 1e12) * 1000) : -1));
      out.push_back(fmt::format("{}", own.known() ? std::llround(std::min(own.throttled, 1e12) * 1000) : -1));
      out.push_back(fmt::format("{}", std::llround(std::clamp(own.recipient, 0.0, 1e12) * 1000)));
    }
    if (priority) {
      const LeasePriority& p = *r.priority;
      out.push_back(fmt::format("{}", p.level + 1));
      out.push_back(fmt::format("{}", p.rank));
      out.push_back(fmt::format("{}", p.floor));
      out.push_back(fmt::format("{}", us(p.lower_lookahead)));
      out.push_back(fmt::format("{}", us(p.top_lookahead)));
      out.push_back(fmt::format("{}", std::max<long long>(1, us(p.active_window))));
      out.push_back(fmt::format("{}", us(p.memory)));
    }
  }

  bool appendEvalsha(ScriptNode& node, const Work& w, const LeaseRequest& r) {
    buildArgs(r, node.sha(), args_);
    argv_.clear();
    lens_.clear();
    if (w.asking && !redis_cluster::appendAsking(node.context())) return false;
    for (const std::string& a : args_) {
      argv_.push_back(a.data());
      lens_.push_back(a.size());
    }
    ++stats_.commands;
    return redisAppendCommandArgv(node.context(), static_cast<int>(argv_.size()), argv_.data(), lens_.data()) ==
           REDIS_OK;
  }

  // Every key of a request is "<prefix>:{scope}:...": the slot is the scope's.
  static std::uint16_t scopeSlot(const std::string& scope) {
    return static_cast<std::uint16_t>(crc16Xmodem(scope) & (kSlots - 1));
  }

  void run(std::span<const LeaseRequest> requests, std::span<LeaseReply> replies) {
    const std::size_t n = std::min(requests.size(), replies.size());
    for (std::size_t i = 0; i < n; ++i) replies[i] = LeaseReply{};
    // No slot map yet: all unavailable. A stale one still routes.
    if (nodes_.prepare(now_ms_) != NodeFault::kNone && !nodes_.known()) return;
    work_.clear();
    for (std::size_t i = 0; i < n; ++i) {
      const LeaseRequest& r = requests[i];
      if (r.levels.empty()) continue;
      const std::size_t node = nodes_.owner(scopeSlot(r.scope));
      work_.push_back(Work{i, node, false});
    }
    for (int attempt = 0; attempt < kMaxAttempts && !work_.empty(); ++attempt) {
      const Clock::time_point started = Clock::now();
      retry_.clear();
      reload_.assign(nodes_.size(), 0);
      // 1. Append everything, node by node; 2. read node by node. One round
      // trip per node that has work.
      sent_.assign(nodes_.size(), 0);
      for (std::size_t k = 0; k < nodes_.size(); ++k) {
        ScriptNode& node = nodes_.node(k);
        bool any = false;
        for (const Work& w : work_) any = any || w.node == k;
        if (!any) continue;
        if (node.ensure(now_ms_) != NodeFault::kNone) {  // its requests stay unavailable
          nodes_.lost();
          continue;
        }
        bool ok = true;
        for (const Work& w : work_)
          if (w.node == k && ok) ok = appendEvalsha(node, w, requests[w.request]);
        if (!ok) {
          node.fail(NodeFault::kIo, node.context()->errstr, now_ms_);
          nodes_.lost();
          continue;
        }
        sent_[k] = 1;
        ++stats_.round_trips;
      }
      bool reload = false;
      // Redirects may add nodes while replies are read: only the nodes that
      // were sent to are read from.
      for (std::size_t k = 0; k < sent_.size(); ++k) {
        if (!sent_[k]) continue;
        ScriptNode& node = nodes_.node(k);
        for (const Work& w : work_) {
          if (w.node != k) continue;
          if (node.context() == nullptr) break;  // lost mid-batch: the rest stay unavailable
          if (w.asking && !readOne(node)) break;
          void* raw = nullptr;
          if (redisGetReply(node.context(), &raw) != REDIS_OK || raw == nullptr) {
            node.failFromContext(now_ms_);
            nodes_.lost();
            break;
          }
          ReplyPtr reply(static_cast<redisReply*>(raw));
          if (handle(*reply, w, requests[w.request], replies[w.request])) reload = reload || needs_load_;
        }
      }
      if (std::find(sent_.begin(), sent_.end(), 1) != sent_.end()) observeRoundTrip(Clock::now() - started);
      if (reload) {
        for (std::size_t k = 0; k < reload_.size() && k < nodes_.size(); ++k) {
          if (!reload_[k] || !nodes_.node(k).connected()) continue;
          nodes_.node(k).loadScript(now_ms_);
        }
      }
      work_.swap(retry_);
    }
  }

  void observeRoundTrip(Clock::duration d) noexcept {
    const double s = std::chrono::duration<double>(d).count();
    std::size_t b = 0;
    while (b < kRedisRoundTripBounds.size() && s > kRedisRoundTripBounds[b]) ++b;
    ++stats_.round_trip_buckets[b];
    ++stats_.round_trip_count;
    stats_.round_trip_seconds += s;
  }

  // Reads and drops the reply to ASKING.
  bool readOne(ScriptNode& node) {
    void* raw = nullptr;
    if (redisGetReply(node.context(), &raw) != REDIS_OK || raw == nullptr) {
      node.failFromContext(now_ms_);
      nodes_.lost();
      return false;
    }
    freeReplyObject(raw);
    return true;
  }

  // Interprets one EVALSHA reply. Returns true when the request goes again
  // (needs_load_ says whether that needs a SCRIPT LOAD first).
  bool handle(const redisReply& r, const Work& w, const LeaseRequest& req, LeaseReply& out) {
    needs_load_ = false;
    if (parseLeaseReply(r, req, out)) {
      if (out.status == QuotaStatus::kRefusedLimit) {
        ++stats_.limits_refused;
        limited(spdlog::level::err, req.scope,
                fmt::format("event=quota_limit_refused scope={} level={} reason=\"{}\" action=\"nothing granted; "
                            "asked again in a second\"",
                            req.scope, out.binding, refusalText(out.refusal)));
      }
      return false;
    }
    if (r.type == REDIS_REPLY_ERROR) {
      const std::string_view msg(r.str, r.len);
      if (msg.starts_with("NOSCRIPT")) {
        ++stats_.noscript_retries;
        if (reload_.size() < nodes_.size()) reload_.resize(nodes_.size(), 0);
        reload_[w.node] = 1;
        needs_load_ = true;
        retry_.push_back(Work{w.request, w.node, w.asking});
        return true;
      }
      RedisAddress to;
      const redis_cluster::Redirect redirect = redis_cluster::parseRedirect(msg, to);
      if (redirect != redis_cluster::Redirect::kNone) {
        const bool ask = redirect == redis_cluster::Redirect::kAsk;
        const std::size_t target = nodes_.nodeFor(to);
        if (ask) {
          ++stats_.asked;
        } else {
          ++stats_.moved;
          nodes_.moved(scopeSlot(req.scope), target);  // and the map is reread before the next batch
        }
        retry_.push_back(Work{w.request, target, ask});
        return true;
      }
      ++stats_.reply_errors;
      limited(spdlog::level::err, req.scope,
              fmt::format("event=quota_error_reply scope={} error=\"{}\" action=\"treated as unavailable\"", req.scope,
                          msg));
      return false;
    }
    ++stats_.reply_errors;
    limited(spdlog::level::err, req.scope,
            fmt::format("event=quota_bad_reply scope={} type={} action=\"treated as unavailable\"", req.scope, r.type));
    return false;
  }

  // A line that can repeat every tick: at most one per scope per 10 s, the
  // next one saying how many were held back.
  void limited(spdlog::level::level_enum level, const std::string& scope, const std::string& line) {
    const MonoTime now = options_.clock ? options_.clock->now() : MonoTime{Clock::now().time_since_epoch()};
    const std::optional<std::uint64_t> held = log_limiter_.admit(scope, now);
    if (!held) return;
    quotaLog(options_).log(level, "{}{}", line, *held > 0 ? fmt::format(" suppressed={}", *held) : std::string());
    log_limiter_.forgetIdle(now, std::chrono::minutes(10));
  }

  RedisQuotaOptions options_;
  RedisQuotaStats stats_;
  redis_cluster::NodeOptions node_options_;
  redis_cluster::ClusterNodes nodes_;
  std::int64_t now_ms_ = 0;  // the caller's clock at the current call, for the nodes' backoff
  LogLimiter log_limiter_;
  bool needs_load_ = false;
  std::vector<Work> work_;
  std::vector<Work> retry_;
  std::vector<char> sent_;
  std::vector<char> reload_;
  std::vector<std::string> args_;
  std::vector<const char*> argv_;
  std::vector<std::size_t> lens_;
};

}  // namespace

RedisQuotaBackendPtr makeRedisQuotaBackend(RedisQuotaOptions options) {
  return std::make_unique<RedisQuotaBackendImpl>(std::move(options));
}

}  // namespace pacer
