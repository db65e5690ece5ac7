// The Redis FrequencyCapStore: hiredis, one pipelined round trip per batch
// (per node of a Redis Cluster), EVALSHA with NOSCRIPT reload, MOVED / ASK,
// backoff on the caller's clock. See include/pacer/frequency_cap_redis.h.
#include <hiredis/hiredis.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

#include "cluster_nodes.h"
#include "frequency_cap_redis/frequency_cap_lua.h"
#include "pacer/error.h"
#include "pacer/frequency_cap_redis.h"

namespace pacer {
namespace {

using redis_cluster::kMaxAttempts;
using redis_cluster::NodeFault;
using redis_cluster::ReplyPtr;
using Node = redis_cluster::ScriptNode;

// Worse faults win when a batch sees several.
CapFault worse(CapFault a, CapFault b) { return static_cast<int>(a) >= static_cast<int>(b) ? a : b; }

// The same kinds, worst last, in both enums.
CapFault toCap(NodeFault f) {
  switch (f) {
    case NodeFault::kNone: return CapFault::kNone;
    case NodeFault::kIo: return CapFault::kIo;
    case NodeFault::kTimeout: return CapFault::kTimeout;
    case NodeFault::kReply: return CapFault::kReply;
  }
  return CapFault::kIo;
}

void checkAddress(const RedisAddress& a) {
  if (a.host.empty()) throw InvalidError("redis frequency cap: empty host");
  if (a.port < 1 || a.port > 65535) throw InvalidError("redis frequency cap: port must be 1..65535");
}

std::vector<RedisAddress> seedsOf(const RedisFrequencyCapOptions& o) {
  if (!o.cluster_nodes.empty()) return o.cluster_nodes;
  return {RedisAddress{o.host, o.port}};
}

const RedisFrequencyCapOptions& checked(const RedisFrequencyCapOptions& o) {
  if (o.cluster_nodes.empty()) checkAddress(RedisAddress{o.host, o.port});
  for (const RedisAddress& a : o.cluster_nodes) checkAddress(a);
  if (o.key_prefix.find_first_of("{}") != std::string::npos)
    throw InvalidError("redis frequency cap: key_prefix must not hold '{' or '}'");
  return o;
}

redis_cluster::NodeCounters counters(RedisFrequencyCapStats& s) {
  return {&s.round_trips, &s.script_loads, &s.connects, &s.io_errors, &s.timeouts, &s.reply_errors};
}

class RedisFrequencyCapStoreImpl final : public RedisFrequencyCapStore {
 public:
  explicit RedisFrequencyCapStoreImpl(RedisFrequencyCapOptions options)
      : options_(checked(options)),
        node_options_(redis_cluster::makeNodeOptions("redis frequency cap", options_.link, rules::kFrequencyCapLua,
                                                     "frequency_cap", nullptr)),
        cluster_(!options_.cluster_nodes.empty()),
        nodes_(seedsOf(options_), cluster_, node_options_, counters(stats_), &stats_.slot_refreshes) {}

  CapFault connect(std::string& why) noexcept override {
    try {
      CapFault f = CapFault::kNone;
      if (cluster_) {
        f = toCap(nodes_.refresh(now_ms_, true));  // explicit: ignores the backoff
        if (f != CapFault::kNone) last_error_ = nodes_.lastError();
      }
      // Every master now, so a batch finds the script loaded everywhere.
      for (std::size_t k = 0; f == CapFault::kNone && k < nodes_.size(); ++k) {
        if (!nodes_.ownsAny(k)) continue;
        f = toCap(nodes_.node(k).open(now_ms_));
        if (f != CapFault::kNone) last_error_ = nodes_.node(k).error();
      }
      why = f == CapFault::kNone ? std::string() : last_error_;
      return f;
    } catch (const std::exception& e) {  // out of memory
      why = last_error_ = e.what();
      return CapFault::kIo;
    }
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
        now, [&](std::size_t i) -> std::string_view { return queries[i].recipient; },
        [&](Node& node, std::size_t i) { return appendDecide(node, queries[i]); },
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
        now, [&](std::size_t i) -> std::string_view { return releases[i].recipient; },
        [&](Node& node, std::size_t i) { return appendRelease(node, releases[i]); }, take);
    result.decided = removed;
    return result;
  }

 private:
  // One query on its way: its index, the node it goes to, and whether that
  // node answered ASK (ASKING goes first).
  struct Work {
    std::size_t query;
    std::size_t node;
    bool asking;
  };

  static void setNumber(std::string& out, std::int64_t v) {
    char buf[24];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.assign(buf, r.ptr);
  }

  // Every key of a query is "<prefix>:{recipient}:<scope>" with a non-empty
  // recipient holding no '}': the slot is the recipient's.
  static std::uint16_t slotOf(std::string_view recipient) {
    return static_cast<std::uint16_t>(crc16Xmodem(recipient) & (redis_cluster::kSlots - 1));
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

  bool appendArgs(Node& node) {
    argv_.clear();
    lens_.clear();
    for (const auto& [at, len] : offsets_) {
      argv_.push_back(args_.data() + at);
      lens_.push_back(len);
    }
    ++stats_.commands;
    return redisAppendCommandArgv(node.context(), static_cast<int>(argv_.size()), argv_.data(), lens_.data()) ==
           REDIS_OK;
  }

  void startEval(const Node& node, std::string_view recipient, std::string_view scope, std::string_view op) {
    args_.clear();
    offsets_.clear();
    arg("EVALSHA");
    arg(node.sha());
    arg("1");
    keyArg(recipient, scope);
    arg(op);
  }

  bool appendDecide(Node& node, const CapQuery& q) {
    startEval(node, q.recipient, q.scope, "d");
    arg(now_text_);
    setNumber(number_, q.limit);
    arg(number_);
    setNumber(number_, q.window.count());
    arg(number_);
    return appendArgs(node);
  }

  bool appendRelease(Node& node, const CapRelease& r) {
    startEval(node, r.recipient, r.scope, "r");
    setNumber(number_, r.counted_at.time_since_epoch().count());
    arg(number_);
    return appendArgs(node);
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

  // Reads and drops the reply to ASKING.
  bool readAsking(Node& node) {
    void* raw = nullptr;
    if (redisGetReply(node.context(), &raw) != REDIS_OK || raw == nullptr) return false;
    freeReplyObject(raw);
    return true;
  }

  // Sends pending_ (indexes), grouped by node, as one pipeline per node, then
  // reads every node's replies: one round trip per node per attempt. A query
  // answered NOSCRIPT goes again after SCRIPT LOAD on that node; MOVED and
  // ASK send it to the node named (MOVED also rereads the slot map before
  // the next batch); at most kMaxAttempts sends per query. A query whose node
  // is down, or without a usable reply, is left as the caller initialised it
  // (kUnavailable) while the other nodes' queries are decided.
  template <class Recipient, class Send, class Take>
  CapBatchResult run(WallTime now, const Recipient& recipient, const Send& send, const Take& take) noexcept {
    CapBatchResult result;
    try {
      now_ms_ = now.time_since_epoch().count();
      if (pending_.empty()) return result;
      const CapFault f = slotsForBatch();
      if (f != CapFault::kNone) return CapBatchResult{f, 0};
      work_.clear();
      for (const std::size_t i : pending_) work_.push_back(Work{i, nodes_.owner(slotOf(recipient(i))), false});
      for (int attempt = 0; attempt < kMaxAttempts && !work_.empty(); ++attempt) {
        retry_.clear();
        reload_.assign(nodes_.size(), 0);
        sent_.assign(nodes_.size(), 0);
        // 1. Append every node's queries; 2. read node by node.
        for (std::size_t k = 0; k < sent_.size(); ++k) {
          Node& node = nodes_.node(k);
          bool any = false;
          for (const Work& w : work_) any = any || w.node == k;
          if (!any) continue;
          const CapFault f = toCap(node.ensure(now_ms_));
          if (f != CapFault::kNone) {  // its queries stay kUnavailable
            lost(node, f, result);
            continue;
          }
          bool ok = true;
          for (const Work& w : work_)
            if (w.node == k && ok)
              ok = (!w.asking || redis_cluster::appendAsking(node.context())) && send(node, w.query);
          if (!ok) {
            lost(node, toCap(node.fail(NodeFault::kIo, node.context()->errstr, now_ms_)), result);
            continue;
          }
          sent_[k] = 1;
          ++stats_.round_trips;
        }
        for (std::size_t k = 0; k < sent_.size(); ++k) {
          if (!sent_[k]) continue;
          Node& node = nodes_.node(k);
          for (const Work& w : work_) {
            if (w.node != k) continue;
            void* raw = nullptr;
            if ((w.asking && !readAsking(node)) || redisGetReply(node.context(), &raw) != REDIS_OK || raw == nullptr) {
              // Lost mid-batch: the rest of this node's queries stay kUnavailable.
              lost(node, toCap(node.failFromContext(now_ms_)), result);
              break;
            }
            const ReplyPtr reply(static_cast<redisReply*>(raw));
            handle(*reply, w, recipient(w.query), take, result);
          }
        }
        reloadScripts(result);
        work_.swap(retry_);
      }
      if (!work_.empty()) {  // still redirected or NOSCRIPT after every attempt
        last_error_ = "redis frequency cap: no answer after " + std::to_string(kMaxAttempts) + " attempts";
        result.fault = worse(result.fault, CapFault::kReply);
      }
    } catch (const std::exception& e) {  // out of memory while building arguments
      last_error_ = e.what();
      result.fault = worse(result.fault, CapFault::kIo);
    }
    return result;
  }

  // Before a batch: the slot map reread when a MOVED asked for it, or when a
  // node lost since may have failed over (cluster_nodes.h).
  CapFault slotsForBatch() {
    const CapFault f = toCap(nodes_.prepare(now_ms_));
    if (f != CapFault::kNone) last_error_ = nodes_.lastError();
    return f;
  }

  // A node that could not be reached or was lost mid-batch: its fault joins
  // the batch's, and on a cluster the slot map becomes suspect.
  void lost(const Node& node, CapFault f, CapBatchResult& result) {
    result.fault = worse(result.fault, f);
    last_error_ = node.error();
    nodes_.lost();
  }

  // Not run by Redis (NOSCRIPT): the script loaded where it was missing; its
  // queries go again in the next attempt.
  void reloadScripts(CapBatchResult& result) {
    for (std::size_t k = 0; k < reload_.size(); ++k) {
      Node& node = nodes_.node(k);
      if (!reload_[k] || !node.connected()) continue;
      if (node.loadScript(now_ms_) != NodeFault::kNone) {
        result.fault = worse(result.fault, toCap(node.fault()));
        last_error_ = node.error();
      }
    }
  }

  // One reply: taken, or queued again (NOSCRIPT, MOVED, ASK), or a reply fault.
  template <class Take>
  void handle(const redisReply& reply, const Work& w, std::string_view recipient, const Take& take,
              CapBatchResult& result) {
    if (reply.type == REDIS_REPLY_ERROR) {
      const std::string_view msg(reply.str, reply.len);
      if (msg.starts_with("NOSCRIPT")) {
        ++stats_.noscript_retries;
        reload_[w.node] = 1;
        retry_.push_back(w);
        return;
      }
      RedisAddress to;
      const redis_cluster::Redirect redirect =
          cluster_ ? redis_cluster::parseRedirect(msg, to) : redis_cluster::Redirect::kNone;
      if (redirect != redis_cluster::Redirect::kNone) {
        const std::size_t target = nodes_.nodeFor(to);
        if (redirect == redis_cluster::Redirect::kAsk) {
          ++stats_.asked;
        } else {
          ++stats_.moved;
          nodes_.moved(slotOf(recipient), target);  // and the map is reread before the next batch
        }
        retry_.push_back(Work{w.query, target, redirect == redis_cluster::Redirect::kAsk});
        return;
      }
    }
    if (!take(w.query, reply)) {
      ++stats_.reply_errors;
      last_error_ = reply.type == REDIS_REPLY_ERROR
                        ? std::string(reply.str, reply.len)
                        : "reply of unexpected shape (type " + std::to_string(reply.type) + ")";
      result.fault = worse(result.fault, CapFault::kReply);
    }
  }

  RedisFrequencyCapOptions options_;
  RedisFrequencyCapStats stats_;
  redis_cluster::NodeOptions node_options_;
  bool cluster_ = false;
  redis_cluster::ClusterNodes nodes_;
  std::string last_error_;
  std::int64_t now_ms_ = 0;  // the caller's clock at the current call
  std::vector<std::size_t> pending_;
  std::vector<Work> work_;
  std::vector<Work> retry_;
  std::vector<char> sent_;
  std::vector<char> reload_;
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
