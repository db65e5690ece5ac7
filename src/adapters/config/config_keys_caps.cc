// The frequency caps' keys: caps.* (docs/recipient-rules.md). Quiet hours
// and a campaign's own cap are columns of the campaigns table; these are the
// worker's: where the counts live and the caps of each priority class.
#include <fmt/format.h>

#include "config_keys.h"
#include "pacer/campaign_rules.h"

namespace pacer::config::detail {

namespace {

// "bulk=3/24h,transactional=10/1h": a cap per class, each parsed as the
// campaigns table's frequency_cap is.
std::vector<std::pair<std::string, FrequencyCapRule>> classCaps(const Raw& r) {
  std::vector<std::pair<std::string, FrequencyCapRule>> out;
  for (const std::string& entry : splitCommas(asString(r))) {
    const auto eq = entry.find('=');
    const std::string name = eq == std::string::npos ? "" : trim(entry.substr(0, eq));
    if (name.empty() || name.size() > 64)
      fail(r, "CLASS=CAP entries separated by commas, such as bulk=3/24h,transactional=10/1h");
    std::string why;
    const std::optional<FrequencyCapRule> rule = parseFrequencyCap(trim(entry.substr(eq + 1)), &why);
    if (!rule) fail(r, fmt::format("CLASS=CAP entries with a cap LIMIT/WINDOW such as 3/24h ({})", why));
    for (const auto& [known, unused] : out)
      if (known == name) fail(r, fmt::format("one cap per class (class '{}' is named twice)", name));
    out.emplace_back(name, *rule);
  }
  return out;
}

}  // namespace

std::vector<Key> capsKeys() {
  return {
      {"caps.redis", Shape::kScalar, "--caps-redis", FlagForm::kValue, false, false,
       "frequency caps' Redis, HOST:PORT (default: redis.nodes, a cluster with redis.cluster); none: counted in "
       "this process only, so each worker allows the full cap (logged as a warning)",
       [](const Raw& r, Ctx& c) {
         c.o.caps_redis = asString(r);
         if (!c.o.caps_redis.empty() && c.o.caps_redis != "none") checkHostPort(r, c.o.caps_redis);
       }},
      {"caps.cluster", Shape::kScalar, "--caps-cluster", FlagForm::kSetTrue, false, false,
       "caps.redis is a node of a Redis Cluster (the slot map is read from it; default false)",
       [](const Raw& r, Ctx& c) { c.o.caps_cluster = asBool(r); }},
      {"caps.classes", Shape::kScalar, "--caps-classes", FlagForm::kValue, false, false,
       "per-recipient cap of each priority class, CLASS=LIMIT/WINDOW separated by commas, e.g. bulk=3/24h "
       "(scope class:CLASS, across the class's campaigns; default: none)",
       [](const Raw& r, Ctx& c) { c.o.worker.class_caps = classCaps(r); }},
      {"caps.policy", Shape::kScalar, "--caps-policy", FlagForm::kValue, false, false,
       "a message only its class's cap refuses: suppress (a suppressed ledger row) or defer (it waits until "
       "allowed); a campaign's own cap follows its cap_policy column (default suppress)",
       [](const Raw& r, Ctx& c) {
         c.o.worker.class_cap_policy = *parseCapPolicy(asChoice(r, {"suppress", "defer"}));
       }},
      {"caps.batch", Shape::kScalar, "--caps-batch", FlagForm::kValue, false, false,
       "cap checks per Redis round trip at most (one batch per tick for every campaign; default 2000)",
       [](const Raw& r, Ctx& c) { c.o.worker.cap_batch = static_cast<std::size_t>(asInt(r, 1, 100000)); }},
  };
}

}  // namespace pacer::config::detail
