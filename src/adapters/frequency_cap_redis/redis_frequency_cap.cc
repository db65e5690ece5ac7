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

#include "cap_node.h"
#include "cluster_routing.h"
#include "pacer/error.h"
#include "pacer/frequency_cap_redis.h"

namespace pacer {
namespace {

using cap_redis::Node;
using cap_redis::classify;
using cap_redis::ReplyPtr;
using redis_cluster::kMaxAttempts;

// Worse faults win when a batch sees several.
CapFault worse(CapFault a, CapFault b) { return static_cast<int>(a) >= static_cast<int>(b) ? a : b; }

void checkAddress(const RedisAddress& a) {
  if (a.host.empty()) throw InvalidError("redis frequency cap: empty host");
  if (a.port < 1 || a.port > 65535) throw InvalidError("redis frequency cap: port must be 1..65535");
}

std::vector<RedisAddress> seedsOf(const RedisFrequencyCapOptions& o) {
  if (!o.cluster_nodes.empty()) return o.cluster_nodes;
  return {RedisAddress{o.host, o.port}};
}

class RedisFrequencyCapStoreImpl final : public RedisFrequencyCapStore {
 public:
  explicit RedisFrequencyCapStoreImpl(RedisFrequencyCapOptions options)
      : options_(std::move(options)), map_(seedsOf(options_)) {
    if (options_.cluster_nodes.empty()) checkAddress(RedisAddress{options_.host, options_.port});
    for (const RedisAddress& a : options_.cluster_nodes) checkAddress(a);
    if (options_.connect_timeout.count() <= 0 || options_.command_timeout.count() <= 0)
      throw InvalidError("redis frequency cap: timeouts must be > 0 ms");
    if (options_.backoff_min.count() <= 0 || options_.backoff_max < options_.backoff_min)
      throw InvalidError("redis frequency cap: need 0 < backoff_min <= backoff_max");
    if (options_.key_prefix.find_first_of("{}") != std::string::npos)
      throw InvalidError("redis frequency cap: key_prefix must not hold '{' or '}'");
    syncNodes();
    cluster_ = !options_.cluster_nodes.empty();
    need_slots_ = cluster_;
  }

  CapFault connect(std::string& why) noexcept override {
    try {
      CapFault f = CapFault::kNone;
      if (!cluster_) {
        f = nodes_[0]->open(now_ms_);  // explicit: ignores the backoff
        if (f != CapFault::kNone) last_error_ = nodes_[0]->error();
      } else {
        f = refreshSlots(true);
        // Every master now, so a batch finds the script loaded everywhere.
        for (std::size_t k = 0; f == CapFault::kNone && k < nodes_.size(); ++k) {
          if (!owns(k)) continue;
          f = nodes_[k]->open(now_ms_);
          if (f != CapFault::kNone) last_error_ = nodes_[k]->error();
        }
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

  // A connection for every node the map has met (nodes_[i] is map_.nodes()[i]).
  void syncNodes() {
    while (nodes_.size() < map_.nodes().size())
      nodes_.push_back(std::make_unique<Node>(map_.nodes()[nodes_.size()], options_, stats_));
  }

  bool owns(std::size_t node) const {
    for (std::size_t s = 0; s < redis_cluster::kSlots; ++s)
      if (map_.owner(static_cast<std::uint16_t>(s)) == node) return true;
    return false;
  }

  // Every key of a query is "<prefix>:{recipient}:<scope>" with a non-empty
  // recipient holding no '}': the slot is the recipient's.
  static std::uint16_t slotOf(std::string_view recipient) {
    return static_cast<std::uint16_t>(crc16Xmodem(recipient) & (redis_cluster::kSlots - 1));
  }

  // Reads CLUSTER SLOTS from the first node that answers; kNone once the map
  // is known. `now` ignores the nodes' backoff (connect()).
  CapFault refreshSlots(bool now) {
    CapFault worst = CapFault::kNone;
    const std::size_t known = nodes_.size();
    for (std::size_t k = 0; k < known; ++k) {
      Node& node = *nodes_[k];
      const CapFault f = now ? node.open(now_ms_) : node.ensure(now_ms_);
      if (f != CapFault::kNone) {
        worst = worse(worst, f);
        last_error_ = node.error();
        continue;
      }
      ++stats_.round_trips;
      ReplyPtr r(static_cast<redisReply*>(redisCommand(node.context(), "CLUSTER SLOTS")));
      if (!r) {
        worst = worse(worst, node.fail(classify(node.context()), node.context()->errstr, now_ms_));
        last_error_ = node.error();
        continue;
      }
      const bool ok = map_.apply(*r, k);
      syncNodes();
      if (!ok) {
        ++stats_.reply_errors;
        last_error_ = r->type == REDIS_REPLY_ERROR ? std::string(r->str, r->len) : "CLUSTER SLOTS: malformed reply";
        worst = worse(worst, CapFault::kReply);
        continue;
      }
      ++stats_.slot_refreshes;
      need_slots_ = false;
      return CapFault::kNone;
    }
    if (map_.known()) return CapFault::kNone;  // a stale map still routes; MOVED corrects it
    return worst == CapFault::kNone ? CapFault::kIo : worst;
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
      for (const std::size_t i : pending_)
        work_.push_back(Work{i, cluster_ ? map_.owner(slotOf(recipient(i))) : 0, false});
      for (int attempt = 0; attempt < kMaxAttempts && !work_.empty(); ++attempt) {
        retry_.clear();
        reload_.assign(nodes_.size(), 0);
        sent_.assign(nodes_.size(), 0);
        // 1. Append every node's queries; 2. read node by node.
        for (std::size_t k = 0; k < sent_.size(); ++k) {
          Node& node = *nodes_[k];
          bool any = false;
          for (const Work& w : work_) any = any || w.node == k;
          if (!any) continue;
          const CapFault f = node.ensure(now_ms_);
          if (f != CapFault::kNone) {  // its queries stay kUnavailable
            lost(node, f, result);
            continue;
          }
          bool ok = true;
          for (const Work& w : work_)
            if (w.node == k && ok)
              ok = (!w.asking || redis_cluster::appendAsking(node.context())) && send(node, w.query);
          if (!ok) {
            lost(node, node.fail(CapFault::kIo, node.context()->errstr, now_ms_), result);
            continue;
          }
          sent_[k] = 1;
          ++stats_.round_trips;
        }
        for (std::size_t k = 0; k < sent_.size(); ++k) {
          if (!sent_[k]) continue;
          Node& node = *nodes_[k];
          for (const Work& w : work_) {
            if (w.node != k) continue;
            void* raw = nullptr;
            if ((w.asking && !readAsking(node)) || redisGetReply(node.context(), &raw) != REDIS_OK || raw == nullptr) {
              // Lost mid-batch: the rest of this node's queries stay kUnavailable.
              lost(node, node.fail(classify(node.context()), node.context()->errstr, now_ms_), result);
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
  // node lost since the last batch may have failed over (at most once per
  // backoff_max; a clock that went back allows it at once).
  CapFault slotsForBatch() {
    if (suspect_slots_ && (now_ms_ >= next_suspect_refresh_ms_ ||
                           now_ms_ < next_suspect_refresh_ms_ - options_.backoff_max.count() * 2)) {
      need_slots_ = true;
      next_suspect_refresh_ms_ = now_ms_ + options_.backoff_max.count();
    }
    if (!need_slots_) return CapFault::kNone;
    suspect_slots_ = false;
    return refreshSlots(false);
  }

  // A node that could not be reached or was lost mid-batch: its fault joins
  // the batch's, and on a cluster the slot map becomes suspect.
  void lost(const Node& node, CapFault f, CapBatchResult& result) {
    result.fault = worse(result.fault, f);
    last_error_ = node.error();
    suspect_slots_ = cluster_;
  }

  // Not run by Redis (NOSCRIPT): the script loaded where it was missing; its
  // queries go again in the next attempt.
  void reloadScripts(CapBatchResult& result) {
    for (std::size_t k = 0; k < reload_.size(); ++k) {
      if (!reload_[k] || nodes_[k]->context() == nullptr) continue;
      if (nodes_[k]->loadScript(now_ms_) != CapFault::kNone) {
        result.fault = worse(result.fault, nodes_[k]->fault());
        last_error_ = nodes_[k]->error();
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
        const std::size_t target = map_.nodeFor(to);
        syncNodes();
        if (redirect == redis_cluster::Redirect::kAsk) {
          ++stats_.asked;
        } else {
          ++stats_.moved;
          map_.setOwner(slotOf(recipient), target);
          need_slots_ = true;  // the map is stale: reread it before the next batch
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
  redis_cluster::SlotMap map_;
  std::vector<std::unique_ptr<Node>> nodes_;
  bool cluster_ = false;
  bool need_slots_ = false;     // reread CLUSTER SLOTS before the next batch (MOVED)
  bool suspect_slots_ = false;  // a node was lost: reread it soon (a failover moves its slots)
  std::int64_t next_suspect_refresh_ms_ = INT64_MIN;
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
