#include "pacer/sim/scenario.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "pacer/scheduler.h"

namespace pacer::sim {
namespace {

constexpr double kMaxDurationS = 30 * 86400.0;

std::string where(const YAML::Node& n) {
  const YAML::Mark m = n.Mark();
  return m.line >= 0 ? fmt::format(" (line {})", m.line + 1) : std::string{};
}

[[noreturn]] void fail(const std::string& field, const YAML::Node& n, const std::string& what) {
  throw ScenarioError(fmt::format("{}{}: {}", field, where(n), what));
}

void checkKeys(const YAML::Node& map, const std::string& field, std::initializer_list<const char*> allowed) {
  if (!map.IsMap()) fail(field, map, "expected a mapping");
  for (const auto& kv : map) {
    const std::string key = kv.first.as<std::string>();
    bool ok = false;
    for (const char* a : allowed) ok = ok || key == a;
    if (!ok) {
      std::string list;
      for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      fail(field.empty() ? key : field + "." + key, kv.first, fmt::format("unknown key (expected one of: {})", list));
    }
  }
}

double number(const YAML::Node& n, const std::string& field) {
  if (!n.IsScalar()) fail(field, n, "expected a number");
  const std::string text = n.Scalar();
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end == nullptr || *end != '\0' || !std::isfinite(v)) {
    fail(field, n, fmt::format("expected a number, got '{}'", text));
  }
  return v;
}

double nonNegative(const YAML::Node& n, const std::string& field) {
  const double v = number(n, field);
  if (v < 0) fail(field, n, fmt::format("expected a number >= 0, got {}", v));
  return v;
}

double positive(const YAML::Node& n, const std::string& field) {
  const double v = number(n, field);
  if (v <= 0) fail(field, n, fmt::format("expected a number > 0, got {}", v));
  return v;
}

std::string text(const YAML::Node& n, const std::string& field) {
  if (!n.IsScalar() || n.Scalar().empty()) fail(field, n, "expected a non-empty string");
  return n.Scalar();
}

void checkRate(double rate, const YAML::Node& n, const std::string& field, const Scenario& s) {
  if (rate > 1e7) fail(field, n, "expected at most 10000000 messages/s");
  const double per_window = rate * s.window_s;
  if (rate > 0 && per_window < 1 &&
      (s.algorithm == Algorithm::kSlidingLog || s.algorithm == Algorithm::kSlidingWindow)) {
    fail(field, n,
         fmt::format("{} counts whole messages per window: rate x window_s must be >= 1 (it is {})",
                     algorithmName(s.algorithm), per_window));
  }
  if (s.algorithm == Algorithm::kSlidingLog && per_window > double(LimiterOptions{}.max_log_entries)) {
    fail(field, n,
         fmt::format("sliding_log keeps one timestamp per message in the window: rate x window_s must be <= {}",
                     LimiterOptions{}.max_log_entries));
  }
}

double burstFor(const YAML::Node& n, const std::string& field, std::optional<double> rate, double tick_ms) {
  if (!n) return defaultBurst(rate.value_or(0), tick_ms);
  const double b = number(n, field);
  if (b < 1) fail(field, n, fmt::format("expected a number >= 1 (messages), got {}", b));
  return b;
}

// duration_s, tick_ms, capacity_per_s, algorithm, window_s.
void readTiming(const YAML::Node& root, Scenario& s) {
  if (!root["duration_s"]) throw ScenarioError("duration_s: required (simulated seconds)");
  s.duration_s = positive(root["duration_s"], "duration_s");
  if (s.duration_s > kMaxDurationS)
    fail("duration_s", root["duration_s"], "expected at most 2592000 simulated seconds (30 days)");
  if (root["tick_ms"]) s.tick_ms = positive(root["tick_ms"], "tick_ms");
  if (s.tick_ms < 0.001 || s.tick_ms > 10000) fail("tick_ms", root["tick_ms"], "expected 0.001 to 10000 ms");
  if (root["capacity_per_s"]) {
    s.capacity_per_s = nonNegative(root["capacity_per_s"], "capacity_per_s");
    if (*s.capacity_per_s > 1e10)
      fail("capacity_per_s", root["capacity_per_s"], "expected at most 1e10 messages/s (omit it for unlimited)");
  }
  if (s.duration_s * 1000.0 < s.tick_ms) {
    fail("duration_s", root["duration_s"], fmt::format("shorter than one tick ({} ms)", s.tick_ms));
  }
  if (s.duration_s * 1000.0 / s.tick_ms > 1e8) {
    fail(
        "tick_ms", root["tick_ms"] ? root["tick_ms"] : root["duration_s"],
        fmt::format("duration_s / tick_ms gives {:.0f} ticks; at most 100,000,000", s.duration_s * 1000.0 / s.tick_ms));
  }
  if (root["algorithm"]) {
    const std::string name = text(root["algorithm"], "algorithm");
    if (!parseAlgorithm(name, s.algorithm)) {
      fail("algorithm", root["algorithm"],
           fmt::format("unknown algorithm '{}' (expected token_bucket, leaky_bucket, fixed_window, sliding_log or "
                       "sliding_window)",
                       name));
    }
  }
  if (root["window_s"]) {
    s.window_s = positive(root["window_s"], "window_s");
    if (s.window_s < 0.001 || s.window_s > 86400) fail("window_s", root["window_s"], "expected 0.001 to 86400 seconds");
  }
}

// A list of windows [{from_s, to_s}] (stalls, a provider's outages).
std::vector<Stall> readWindows(const YAML::Node& st, const std::string& field) {
  std::vector<Stall> out;
  if (!st) return out;
  if (!st.IsSequence()) fail(field, st, "expected a list of {from_s, to_s}");
  for (std::size_t i = 0; i < st.size(); ++i) {
    const std::string f = fmt::format("{}[{}]", field, i);
    checkKeys(st[i], f, {"from_s", "to_s"});
    if (!st[i]["from_s"] || !st[i]["to_s"]) fail(f, st[i], "needs from_s and to_s");
    Stall x{nonNegative(st[i]["from_s"], f + ".from_s"), nonNegative(st[i]["to_s"], f + ".to_s")};
    if (x.to_s < x.from_s) fail(f + ".to_s", st[i]["to_s"], "must not be before from_s");
    out.push_back(x);
  }
  return out;
}

// stalls: [{from_s, to_s}]: the sink takes nothing between them.
void readStalls(const YAML::Node& root, Scenario& s) { s.stalls = readWindows(root["stalls"], "stalls"); }

double share(const YAML::Node& n, const std::string& field) {
  const double v = number(n, field);
  if (!(v >= 0 && v < 1)) fail(field, n, fmt::format("expected a share in [0, 1), got {}", v));
  return v;
}

// A provider's bad day: capacity, throttle_noise, fault_noise, controller, retry_s, seed.
void readProviderModel(const YAML::Node& node, const std::string& f, ProviderScenario& p) {
  if (node["capacity"]) p.capacity = positive(node["capacity"], f + ".capacity");
  if (node["throttle_noise"]) p.throttle_noise = share(node["throttle_noise"], f + ".throttle_noise");
  if (node["fault_noise"]) p.fault_noise = share(node["fault_noise"], f + ".fault_noise");
  if (p.throttle_noise + p.fault_noise >= 1)
    fail(f + ".fault_noise", node["fault_noise"], "throttle_noise + fault_noise must be below 1");
  if (node["controller"]) {
    const std::string c = text(node["controller"], f + ".controller");
    if (c == "judged")
      p.controller = ProviderController::kJudged;
    else if (c == "per_throttle")
      p.controller = ProviderController::kPerThrottle;
    else if (c == "fixed")
      p.controller = ProviderController::kFixed;
    else
      fail(f + ".controller", node["controller"], fmt::format("expected judged, per_throttle or fixed, got '{}'", c));
  }
  if (node["retry_s"]) {
    p.retry_s = nonNegative(node["retry_s"], f + ".retry_s");
    if (p.retry_s > 3600) fail(f + ".retry_s", node["retry_s"], "at most 3600");
  }
  if (node["seed"]) p.seed = static_cast<std::uint64_t>(nonNegative(node["seed"], f + ".seed"));
  if (node["workers"]) {
    const double w = number(node["workers"], f + ".workers");
    if (!(w >= 1 && w <= 64 && w == std::floor(w))) fail(f + ".workers", node["workers"], "expected a whole number 1 to 64");
    p.workers = static_cast<std::uint32_t>(w);
  }
  const bool model_keys = node["controller"] || node["retry_s"] || node["seed"] || node["workers"];
  if (model_keys && !p.modelled())
    fail(f, node, "controller, retry_s, seed and workers need capacity, throttle_noise or fault_noise");
  if (p.modelled() && !p.rate) fail(f + ".rate", node, "a modelled provider needs a configured rate (its ceiling)");
}

// providers: [{id, rate, burst}]; returns their ids.
std::set<std::string> readProviders(const YAML::Node& root, Scenario& s) {
  std::set<std::string> provider_ids;
  if (const YAML::Node ps = root["providers"]) {
    if (!ps.IsSequence()) fail("providers", ps, "expected a list");
    for (std::size_t i = 0; i < ps.size(); ++i) {
      const std::string f = fmt::format("providers[{}]", i);
      checkKeys(ps[i], f,
                {"id", "rate", "burst", "capacity", "throttle_noise", "fault_noise", "controller", "retry_s", "seed",
                 "workers", "outages"});
      ProviderScenario p;
      if (!ps[i]["id"]) fail(f + ".id", ps[i], "required");
      p.id = text(ps[i]["id"], f + ".id");
      if (!provider_ids.insert(p.id).second)
        fail(f + ".id", ps[i]["id"], fmt::format("duplicate provider id '{}'", p.id));
      if (ps[i]["rate"]) {
        p.rate = nonNegative(ps[i]["rate"], f + ".rate");
        checkRate(*p.rate, ps[i]["rate"], f + ".rate", s);
      }
      p.burst = burstFor(ps[i]["burst"], f + ".burst", p.rate, s.tick_ms);
      readProviderModel(ps[i], f, p);
      p.outages = readWindows(ps[i]["outages"], f + ".outages");
      if (p.modelled() && !p.outages.empty())
        fail(f + ".outages", ps[i]["outages"], "outages of a modelled provider (capacity, noise) are not simulated");
      s.providers.push_back(p);
    }
  }
  return provider_ids;
}

// classes: [names], highest first; start_utc: "YYYY-MM-DDTHH:MM:SSZ".
void readClassesAndStart(const YAML::Node& root, Scenario& s) {
  if (const YAML::Node cl = root["classes"]) {
    if (!cl.IsSequence() || cl.size() == 0) fail("classes", cl, "expected a non-empty list of class names");
    if (cl.size() > kMaxPriorityRanks)
      fail("classes", cl, fmt::format("at most {} classes (the scheduler's priority ranks)", kMaxPriorityRanks));
    s.classes.clear();
    for (std::size_t i = 0; i < cl.size(); ++i) {
      const std::string name = text(cl[i], fmt::format("classes[{}]", i));
      if (std::find(s.classes.begin(), s.classes.end(), name) != s.classes.end())
        fail(fmt::format("classes[{}]", i), cl[i], fmt::format("duplicate class '{}'", name));
      s.classes.push_back(name);
    }
  }
  if (const YAML::Node st = root["start_utc"]) {
    const std::string t = text(st, "start_utc");
    int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0, used = 0;
    const bool shape = std::sscanf(t.c_str(), "%4d-%2d-%2dT%2d:%2d:%2dZ%n", &y, &mo, &d, &h, &mi, &sec, &used) == 6 &&
                       used == static_cast<int>(t.size()) && t.size() == 20;
    const std::chrono::year_month_day ymd{std::chrono::year{y}, std::chrono::month(static_cast<unsigned>(mo)),
                                          std::chrono::day(static_cast<unsigned>(d))};
    if (!shape || !ymd.ok() || y < 1970 || y > 9999 || h > 23 || mi > 59 || sec > 59)
      fail("start_utc", st, fmt::format("expected a UTC instant like 2024-03-09T12:00:00Z, got '{}'", t));
    s.start_utc = WallTime{std::chrono::sys_days{ymd}} + std::chrono::hours{h} + std::chrono::minutes{mi} +
                  std::chrono::seconds{sec};
  }
}

// class, arrival_per_s.
void readClass(const YAML::Node& node, const std::string& f, const Scenario& s, CampaignScenario& c) {
  const auto bulk = std::find(s.classes.begin(), s.classes.end(), "bulk");
  c.class_name = bulk != s.classes.end() ? *bulk : s.classes.back();
  if (node["class"]) {
    c.class_name = text(node["class"], f + ".class");
    if (std::find(s.classes.begin(), s.classes.end(), c.class_name) == s.classes.end()) {
      std::string list;
      for (const std::string& n : s.classes) list += (list.empty() ? "" : ", ") + n;
      fail(f + ".class", node["class"], fmt::format("unknown class '{}' (classes: {})", c.class_name, list));
    }
  }
  c.priority = static_cast<std::uint32_t>(std::find(s.classes.begin(), s.classes.end(), c.class_name) -
                                          s.classes.begin());
  if (node["arrival_per_s"]) {
    c.arrival_per_s = positive(node["arrival_per_s"], f + ".arrival_per_s");
    if (*c.arrival_per_s > 1e7) fail(f + ".arrival_per_s", node["arrival_per_s"], "expected at most 10000000 messages/s");
  }
}

// recipients, cap, cap_policy.
void readCap(const YAML::Node& node, const std::string& f, CampaignScenario& c) {
  if (node["recipients"]) {
    const double n = positive(node["recipients"], f + ".recipients");
    if (n != std::floor(n) || n > 1e9) fail(f + ".recipients", node["recipients"], "expected a whole number, 1 to 1e9");
    c.recipients = static_cast<std::uint64_t>(n);
  }
  if (node["cap"]) {
    std::string error;
    c.cap = parseFrequencyCap(text(node["cap"], f + ".cap"), &error);
    if (!c.cap) fail(f + ".cap", node["cap"], error);
    if (c.recipients == 0) fail(f + ".cap", node["cap"], "needs recipients (how many people the messages go to)");
  }
  if (node["cap_policy"]) {
    const std::string p = text(node["cap_policy"], f + ".cap_policy");
    const std::optional<CapPolicy> policy = parseCapPolicy(p);
    if (!policy) fail(f + ".cap_policy", node["cap_policy"], fmt::format("expected suppress or defer, got '{}'", p));
    if (!c.cap) fail(f + ".cap_policy", node["cap_policy"], "needs a cap");
    c.cap_policy = *policy;
  }
}

// quiet_hours, time_zones (checked against the system's tz database).
void readQuiet(const YAML::Node& node, const std::string& f, Scenario& s, CampaignScenario& c) {
  if (node["quiet_hours"]) {
    const QuietWindowParse q = parseQuietWindow(text(node["quiet_hours"], f + ".quiet_hours"));
    if (!q.window) fail(f + ".quiet_hours", node["quiet_hours"], q.error);
    if (!q.window->none()) c.quiet_hours = q.window;
  }
  if (const YAML::Node tz = node["time_zones"]) {
    if (!tz.IsSequence() || tz.size() == 0) fail(f + ".time_zones", tz, "expected a non-empty list of IANA zone names");
    for (std::size_t i = 0; i < tz.size(); ++i) c.time_zones.push_back(text(tz[i], fmt::format("{}.time_zones[{}]", f, i)));
  } else if (c.quiet_hours) {
    c.time_zones = {"UTC"};
  }
  if (c.time_zones.empty()) return;
  if (!s.zones) {
    try {
      s.zones = TimeZoneTable::loadSystem();
    } catch (const TimeZoneError& e) {
      fail(f + ".time_zones", node, e.what());
    }
  }
  for (std::size_t i = 0; i < c.time_zones.size(); ++i) {
    if (s.zones->find(c.time_zones[i])) continue;
    const YAML::Node at = node["time_zones"] ? node["time_zones"][i] : node;
    fail(fmt::format("{}.time_zones[{}]", f, i), at, fmt::format("unknown time zone '{}'", c.time_zones[i]));
  }
}

// provider: an id, or the ordered failover list [a, b, ...].
void readRoutes(const YAML::Node& node, const std::string& f, const Scenario& s,
                const std::set<std::string>& provider_ids, CampaignScenario& c) {
  std::vector<std::string> ids;
  if (node.IsSequence()) {
    if (node.size() == 0) fail(f, node, "expected a provider id or a non-empty list of them");
    for (std::size_t i = 0; i < node.size(); ++i) ids.push_back(text(node[i], fmt::format("{}[{}]", f, i)));
  } else {
    ids.push_back(text(node, f));
  }
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const YAML::Node at = node.IsSequence() ? node[i] : node;
    if (!provider_ids.count(ids[i])) fail(f, at, fmt::format("no provider with id '{}' in providers", ids[i]));
    if (std::count(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(i), ids[i]))
      fail(f, at, fmt::format("provider '{}' named twice", ids[i]));
    const auto p = std::find_if(s.providers.begin(), s.providers.end(), [&](const auto& x) { return x.id == ids[i]; });
    if (ids.size() > 1 && p->modelled())
      fail(f, at,
           fmt::format("failover to or from a modelled provider ('{}': capacity, noise) is not simulated", ids[i]));
  }
  c.provider = ids.front();
  c.fallbacks.assign(ids.begin() + 1, ids.end());
}

// ttl_s, message_ttl_s: lifetimes from each message's arrival, 1 ms to 30 days.
void readLifetimes(const YAML::Node& node, const std::string& f, CampaignScenario& c) {
  for (const char* key : {"ttl_s", "message_ttl_s"}) {
    if (!node[key]) continue;
    const double v = positive(node[key], f + "." + key);
    if (v < 0.001 || v > kMaxDurationS) fail(f + "." + key, node[key], "expected 0.001 to 2592000 seconds");
    (std::string(key) == "ttl_s" ? c.ttl_s : c.message_ttl_s) = v;
  }
  if (!c.lifetimeS()) return;
  if (!c.messages && !c.arrival_per_s)
    fail(f, node, "a lifetime needs messages or arrival_per_s (an endless backlog would all expire at once)");
}

// campaigns[i]: {id, provider, rate, burst, weight, messages, start_s}.
CampaignScenario readCampaign(const YAML::Node& node, const std::string& f, Scenario& s,
                              const std::set<std::string>& provider_ids, std::set<std::string>& campaign_ids) {
  checkKeys(node, f,
            {"id", "provider", "rate", "burst", "weight", "messages", "start_s", "class", "arrival_per_s", "recipients",
             "cap", "cap_policy", "quiet_hours", "time_zones", "ttl_s", "message_ttl_s"});
  CampaignScenario c;
  if (!node["id"]) fail(f + ".id", node, "required");
  c.id = text(node["id"], f + ".id");
  if (!campaign_ids.insert(c.id).second) fail(f + ".id", node["id"], fmt::format("duplicate campaign id '{}'", c.id));
  if (node["provider"]) readRoutes(node["provider"], f + ".provider", s, provider_ids, c);
  if (node["rate"]) {
    c.rate = nonNegative(node["rate"], f + ".rate");
    checkRate(*c.rate, node["rate"], f + ".rate", s);
  }
  c.burst = burstFor(node["burst"], f + ".burst", c.rate, s.tick_ms);
  if (node["weight"]) c.weight = positive(node["weight"], f + ".weight");
  if (node["messages"]) {
    const double m = nonNegative(node["messages"], f + ".messages");
    if (m != std::floor(m) || m > 1e15) fail(f + ".messages", node["messages"], "expected a whole number");
    c.messages = static_cast<std::uint64_t>(m);
  }
  if (node["start_s"]) {
    c.start_s = nonNegative(node["start_s"], f + ".start_s");
    if (c.start_s >= s.duration_s) {
      fail(f + ".start_s", node["start_s"], fmt::format("at or after the end of the simulation ({} s)", s.duration_s));
    }
  }
  readClass(node, f, s, c);
  readCap(node, f, c);
  readLifetimes(node, f, c);
  readQuiet(node, f, s, c);
  return c;
}

}  // namespace

double defaultBurst(double rate_per_s, double tick_ms) {
  return std::max(1.0, std::ceil(rate_per_s * tick_ms / 1000.0) + 1.0);
}

Scenario parseScenario(const std::string& yaml_text) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw ScenarioError(fmt::format("not valid YAML: {}", e.what()));
  }
  if (!root || !root.IsMap()) throw ScenarioError("scenario: expected a mapping at the top level");
  checkKeys(root, "",
            {"duration_s", "tick_ms", "capacity_per_s", "algorithm", "window_s", "stalls", "providers", "campaigns",
             "classes", "start_utc"});
  Scenario s;
  readTiming(root, s);
  readClassesAndStart(root, s);
  readStalls(root, s);
  const std::set<std::string> provider_ids = readProviders(root, s);
  const YAML::Node cs = root["campaigns"];
  if (!cs || !cs.IsSequence() || cs.size() == 0) throw ScenarioError("campaigns: required, a non-empty list");
  std::set<std::string> campaign_ids;
  for (std::size_t i = 0; i < cs.size(); ++i)
    s.campaigns.push_back(readCampaign(cs[i], fmt::format("campaigns[{}]", i), s, provider_ids, campaign_ids));
  return s;
}

Scenario loadScenario(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ScenarioError(fmt::format("{}: cannot open the scenario file", path));
  std::stringstream buf;
  buf << in.rdbuf();
  try {
    return parseScenario(buf.str());
  } catch (const ScenarioError& e) {
    throw ScenarioError(fmt::format("{}: {}", path, e.what()));
  }
}

}  // namespace pacer::sim
