#include "console_redis.h"

#include <fmt/format.h>
#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <cstdlib>

namespace pacer::console {

std::string quotaScope(const std::string& provider) {
  std::string out;
  out.reserve(provider.size());
  for (char ch : provider) {
    if (ch == '{')
      out += "%7B";
    else if (ch == '}')
      out += "%7D";
    else if (ch == '%')
      out += "%25";
    else
      out += ch;
  }
  return out;
}

struct ProviderStateReader::Node {
  redisContext* context = nullptr;
  ~Node() {
    if (context) redisFree(context);
  }
};

namespace {

struct Reply {
  redisReply* r = nullptr;
  ~Reply() {
    if (r) freeReplyObject(r);
  }
};

timeval toTimeval(std::chrono::milliseconds ms) {
  return timeval{static_cast<time_t>(ms.count() / 1000), static_cast<suseconds_t>((ms.count() % 1000) * 1000)};
}

std::optional<double> number(const redisReply* r) {
  if (r == nullptr || r->type != REDIS_REPLY_STRING) return std::nullopt;
  char* end = nullptr;
  const std::string text(r->str, r->len);
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str()) return std::nullopt;
  return v;
}

}  // namespace

ProviderStateReader::ProviderStateReader(std::vector<std::string> nodes, std::chrono::milliseconds timeout,
                                         std::string key_prefix)
    : nodes_(std::move(nodes)), timeout_(timeout), prefix_(std::move(key_prefix)) {}

ProviderStateReader::~ProviderStateReader() = default;

ProviderStateReader::Node& ProviderStateReader::node(const std::string& address) {
  auto& slot = connections_[address];
  if (slot && slot->context && slot->context->err == 0) return *slot;
  slot = std::make_unique<Node>();
  const std::size_t colon = address.rfind(':');
  const std::string host = address.substr(0, colon);
  const int port = colon == std::string::npos ? 6379 : std::atoi(address.c_str() + colon + 1);
  slot->context = redisConnectWithTimeout(host.c_str(), port, toTimeval(timeout_));
  if (slot->context == nullptr || slot->context->err != 0) {
    const std::string why = slot->context ? slot->context->errstr : "out of memory";
    slot.reset();
    throw ProviderStateError(fmt::format("Redis {}: {}", address, why));
  }
  redisSetTimeout(slot->context, toTimeval(timeout_));
  return *slot;
}

std::map<std::string, SharedProviderState> ProviderStateReader::read(const std::vector<std::string>& providers) {
  std::map<std::string, SharedProviderState> out;
  if (nodes_.empty() || providers.empty()) return out;
  const std::string& first = nodes_.front();
  const auto fail = [&](const std::string& address, Node& n) {
    const std::string why = n.context->errstr;
    connections_.erase(address);
    return ProviderStateError(fmt::format("Redis {}: {}", address, why));
  };
  Node& n = node(first);
  redisAppendCommand(n.context, "TIME");
  std::vector<std::string> keys;
  for (const std::string& p : providers) {
    keys.push_back(fmt::format("{}:{{{}}}:a", prefix_, quotaScope(p)));
    const char* argv[] = {"HMGET", keys.back().c_str(), "r", "pu"};
    const std::size_t lens[] = {5, keys.back().size(), 1, 2};
    redisAppendCommandArgv(n.context, 4, argv, lens);
  }
  Reply time;
  if (redisGetReply(n.context, reinterpret_cast<void**>(&time.r)) != REDIS_OK) throw fail(first, n);
  if (time.r->type != REDIS_REPLY_ARRAY || time.r->elements != 2)
    throw ProviderStateError(fmt::format("Redis {}: TIME: unexpected reply", first));
  const double now_us =
      std::strtod(time.r->element[0]->str, nullptr) * 1e6 + std::strtod(time.r->element[1]->str, nullptr);
  std::vector<std::pair<std::size_t, std::string>> moved;  // provider index, node
  std::vector<Reply> replies(providers.size());
  for (std::size_t i = 0; i < providers.size(); ++i) {
    if (redisGetReply(n.context, reinterpret_cast<void**>(&replies[i].r)) != REDIS_OK) throw fail(first, n);
    const redisReply* r = replies[i].r;
    if (r->type == REDIS_REPLY_ERROR && std::string(r->str, r->len).rfind("MOVED ", 0) == 0) {
      const std::string text(r->str, r->len);
      moved.emplace_back(i, text.substr(text.rfind(' ') + 1));
    }
  }
  // A cluster: ask where each key lives, one command each (rare: the console
  // refreshes once a second).
  for (const auto& [i, address] : moved) {
    Node& m = node(address);
    const char* argv[] = {"HMGET", keys[i].c_str(), "r", "pu"};
    const std::size_t lens[] = {5, keys[i].size(), 1, 2};
    Reply again;
    again.r = static_cast<redisReply*>(redisCommandArgv(m.context, 4, argv, lens));
    if (again.r == nullptr) throw fail(address, m);
    std::swap(replies[i].r, again.r);
  }
  for (std::size_t i = 0; i < providers.size(); ++i) {
    const redisReply* r = replies[i].r;
    SharedProviderState s;
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 2) {
      s.effective = number(r->element[0]);
      if (const auto pu = number(r->element[1]); pu && *pu > now_us) s.paused_s = (*pu - now_us) / 1e6;
    }
    out[providers[i]] = s;
  }
  return out;
}

namespace {

std::string countsKey(const std::string& prefix) { return prefix + ":{counts}"; }

std::string movedTo(const redisReply* r) {
  if (r == nullptr || r->type != REDIS_REPLY_ERROR) return "";
  const std::string text(r->str, r->len);
  return text.rfind("MOVED ", 0) == 0 ? text.substr(text.rfind(' ') + 1) : "";
}

}  // namespace

// The counts live in one key: ask where it lives once (EXISTS is cheap) and
// keep asking that node.
redisContext* ProviderStateReader::contextFor(const std::string& key) {
  std::string address = nodes_.front();
  for (int hop = 0; hop < 2; ++hop) {
    Node& n = node(address);
    Reply r;
    r.r = static_cast<redisReply*>(redisCommand(n.context, "EXISTS %b", key.data(), key.size()));
    if (r.r == nullptr) {
      const std::string why = n.context->errstr;
      connections_.erase(address);
      throw ProviderStateError(fmt::format("Redis {}: {}", address, why));
    }
    const std::string moved = movedTo(r.r);
    if (moved.empty()) return n.context;
    address = moved;
  }
  throw ProviderStateError(fmt::format("Redis: {} moved more than once", key));
}

void ProviderStateReader::addCounts(const std::map<std::string, std::uint64_t>& deltas) {
  if (nodes_.empty() || deltas.empty()) return;
  const std::string key = countsKey(prefix_);
  redisContext* c = contextFor(key);
  for (const auto& [field, delta] : deltas) {
    const std::string by = std::to_string(delta);
    const char* argv[] = {"HINCRBY", key.c_str(), field.c_str(), by.c_str()};
    const std::size_t lens[] = {7, key.size(), field.size(), by.size()};
    redisAppendCommandArgv(c, 4, argv, lens);
  }
  std::string error;
  for (std::size_t i = 0; i < deltas.size(); ++i) {
    Reply r;
    if (redisGetReply(c, reinterpret_cast<void**>(&r.r)) != REDIS_OK) {
      const std::string why = c->errstr;
      connections_.clear();
      throw ProviderStateError(fmt::format("Redis: HINCRBY {}: {}", key, why));
    }
    if (r.r->type == REDIS_REPLY_ERROR && error.empty()) error.assign(r.r->str, r.r->len);
  }
  if (!error.empty()) throw ProviderStateError(fmt::format("Redis: HINCRBY {}: {}", key, error));
}

std::map<std::string, std::uint64_t> ProviderStateReader::readCounts(const std::vector<std::string>& fields) {
  std::map<std::string, std::uint64_t> out;
  if (nodes_.empty() || fields.empty()) return out;
  const std::string key = countsKey(prefix_);
  redisContext* c = contextFor(key);
  std::vector<const char*> argv{"HMGET", key.c_str()};
  std::vector<std::size_t> lens{5, key.size()};
  for (const std::string& f : fields) argv.push_back(f.c_str()), lens.push_back(f.size());
  Reply r;
  r.r = static_cast<redisReply*>(redisCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lens.data()));
  if (r.r == nullptr) {
    const std::string why = c->errstr;
    connections_.clear();
    throw ProviderStateError(fmt::format("Redis: HMGET {}: {}", key, why));
  }
  if (r.r->type != REDIS_REPLY_ARRAY || r.r->elements != fields.size())
    throw ProviderStateError(fmt::format("Redis: HMGET {}: unexpected reply", key));
  for (std::size_t i = 0; i < fields.size(); ++i) {
    const std::optional<double> v = number(r.r->element[i]);
    out[fields[i]] = v && *v > 0 ? static_cast<std::uint64_t>(*v) : 0;
  }
  return out;
}

}  // namespace pacer::console
