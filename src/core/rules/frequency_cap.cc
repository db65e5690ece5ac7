// The query checks shared by every store, and the in-memory store.
#include "pacer/frequency_cap.h"

#include <string>
#include <unordered_map>
#include <vector>

#include "cap_window.h"

namespace pacer {

bool validCapQuery(const CapQuery& q) noexcept {
  return !q.recipient.empty() && q.recipient.size() <= kMaxCapRecipientBytes &&
         q.recipient.find('}') == std::string_view::npos && !q.scope.empty() && q.scope.size() <= kMaxCapScopeBytes &&
         q.limit >= 1 && q.limit <= kMaxCapLimit && q.window.count() >= 1 && q.window <= kMaxCapWindow;
}

std::string_view toString(CapVerdict v) noexcept {
  switch (v) {
    case CapVerdict::kAllowed: return "allowed";
    case CapVerdict::kCapped: return "capped";
    case CapVerdict::kInvalid: return "invalid";
    case CapVerdict::kUnavailable: return "unavailable";
  }
  return "?";
}

std::string_view toString(CapFault f) noexcept {
  switch (f) {
    case CapFault::kNone: return "none";
    case CapFault::kIo: return "io";
    case CapFault::kTimeout: return "timeout";
    case CapFault::kReply: return "reply";
  }
  return "?";
}

namespace {

// A hash that accepts string_view, so finding an existing pair does not
// build a std::string.
struct KeyHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

class MemoryFrequencyCapStore final : public FrequencyCapStore {
 public:
  CapBatchResult decide(std::span<const CapQuery> queries, WallTime now, std::span<CapDecision> out) noexcept override {
    CapBatchResult result;
    const std::int64_t now_ms = now.time_since_epoch().count();
    try {
      maybePurge(now_ms);
    } catch (const std::exception&) {
    }
    const std::size_t n = std::min(queries.size(), out.size());
    for (std::size_t i = 0; i < n; ++i) {
      const CapQuery& q = queries[i];
      if (!validCapQuery(q) || !validCapTime(now)) {
        out[i] = CapDecision{CapVerdict::kInvalid, now, 0};
        continue;
      }
      try {
        Entry& e = entry(q.recipient, q.scope);
        const rules::CapStep step = rules::applyCap(e.stamps, now_ms, q.limit, q.window.count());
        if (step.allowed) e.expires_ms = e.stamps.back() + q.window.count();
        out[i] = CapDecision{step.allowed ? CapVerdict::kAllowed : CapVerdict::kCapped,
                             WallTime(std::chrono::milliseconds(step.at_ms)), step.in_window};
        ++result.decided;
      } catch (const std::exception&) {  // out of memory: nothing counted, the caller defers
        out[i] = CapDecision{CapVerdict::kUnavailable, now, 0};
        result.fault = CapFault::kIo;
      }
    }
    return result;
  }

  CapBatchResult release(std::span<const CapRelease> releases, WallTime /*now*/) noexcept override {
    CapBatchResult result;
    for (const CapRelease& r : releases) {
      setKey(r.recipient, r.scope);
      const auto it = map_.find(std::string_view(key_));
      if (it == map_.end()) continue;
      if (rules::releaseStamp(it->second.stamps, r.counted_at.time_since_epoch().count())) ++result.decided;
      if (it->second.stamps.empty()) map_.erase(it);
    }
    return result;
  }

 private:
  struct Entry {
    std::vector<std::int64_t> stamps;
    std::int64_t expires_ms = 0;  // newest stamp + window: then nothing counts
  };

  // recipient '}' scope: a recipient never holds '}', so no two pairs share a key.
  void setKey(std::string_view recipient, std::string_view scope) {
    key_.assign(recipient).push_back('}');
    key_.append(scope);
  }

  Entry& entry(std::string_view recipient, std::string_view scope) {
    setKey(recipient, scope);
    const auto it = map_.find(std::string_view(key_));
    if (it != map_.end()) return it->second;
    return map_.emplace(key_, Entry{}).first->second;
  }

  // Drops pairs whose window has passed whenever the map has doubled since
  // the last sweep: amortised O(1) per query, memory bounded by the live pairs.
  void maybePurge(std::int64_t now_ms) {
    if (map_.size() < purge_at_) return;
    std::erase_if(map_, [now_ms](const auto& kv) { return kv.second.expires_ms <= now_ms; });
    purge_at_ = std::max<std::size_t>(kMinPurge, map_.size() * 2);
  }

  static constexpr std::size_t kMinPurge = 4096;
  std::unordered_map<std::string, Entry, KeyHash, std::equal_to<>> map_;
  std::string key_;
  std::size_t purge_at_ = kMinPurge;
};

}  // namespace

FrequencyCapStorePtr makeMemoryFrequencyCapStore() { return std::make_unique<MemoryFrequencyCapStore>(); }

}  // namespace pacer
