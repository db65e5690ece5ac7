// pacerd's configuration: defaults < file < environment < flags, each key
// checked by its entry in the table (config_keys.cc), unknown keys named
// with a suggestion, secrets never shown; and what a reload may change.
#include "pacer/config/pacerd_config.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "config_keys.h"
#include "pacer/sinks/sink_registry.h"

namespace pacer::config {
namespace {

using namespace detail;  // NOLINT: the keys' types and checks, private to this folder

bool isSection(std::string_view prefix) {
  for (const Key& k : keys()) {
    const std::string_view p = k.path;
    if (p.size() > prefix.size() && p.substr(0, prefix.size()) == prefix && p[prefix.size()] == '.') return true;
  }
  return false;
}

std::size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// The closest known key or section to `path`, if close enough to be a typo,
// or a key elsewhere with the same last name ("tick_ms" -> scheduler.tick_ms).
std::string suggest(const std::string& path) {
  std::set<std::string> candidates{"providers"};
  for (const Key& k : keys()) {
    std::string p = k.path;
    candidates.insert(p);
    for (std::size_t dot = p.find('.'); dot != std::string::npos; dot = p.find('.', dot + 1))
      candidates.insert(p.substr(0, dot));
  }
  const std::string last = path.substr(path.rfind('.') == std::string::npos ? 0 : path.rfind('.') + 1);
  std::string best;
  std::size_t best_d = std::max<std::size_t>(2, last.size() / 4) + 1;
  for (const std::string& c : candidates) {
    const std::size_t d = editDistance(path, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  if (!best.empty()) return best;
  for (const std::string& c : candidates)
    if (c.size() > last.size() && c.compare(c.size() - last.size(), last.size(), last) == 0 &&
        c[c.size() - last.size() - 1] == '.')
      return c;
  return {};
}

using Merged = std::map<std::string, Raw>;

// Keyed by the table's path (for a provider's sink too: "sink.http.url").
void put(Merged& m, const std::string& key, Raw r) {
  auto it = m.find(key);
  if (it != m.end() && it->second.shape == Shape::kMap && r.shape == Shape::kMap) {
    // Maps merge by entry: a later source overrides one name, not the map.
    Raw merged = std::move(r);
    for (const auto& [k, v] : it->second.map) {
      const bool replaced =
          std::any_of(merged.map.begin(), merged.map.end(), [&key = k](const auto& e) { return e.first == key; });
      if (!replaced) merged.map.emplace_back(k, v);
    }
    it->second = std::move(merged);
    return;
  }
  m[key] = std::move(r);
}

using ProviderMerged = std::map<std::string, Merged>;  // provider id -> its sink keys

std::string position(const std::string& file, const YAML::Mark& mark) {
  if (mark.line < 0) return file;
  return fmt::format("{}:{}:{}", file, mark.line + 1, mark.column + 1);
}

void readProviders(const YAML::Node& node, const std::string& where, const std::string& file, ProviderMerged& out);

// `shown` goes before a path in messages ("providers.sms."); with
// `providers` null the section reads only the sink keys (a provider's).
void readYamlSection(const YAML::Node& node, const std::string& prefix, const std::string& file, Merged& out,
                     ProviderMerged* providers, const std::string& shown = "") {
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string name = it->first.as<std::string>();
    const std::string path = prefix.empty() ? name : prefix + "." + name;
    const std::string where = position(file, it->first.Mark());
    const YAML::Node v = it->second;  // a copy: the iterator hands out a temporary
    const bool allowed = providers || path == "sink" || path.rfind("sink.", 0) == 0;
    if (path == "providers" && providers) {
      readProviders(v, where, file, *providers);
    } else if (const Key* k = allowed ? findKey(path) : nullptr) {
      // `key:` with no value keeps the default. YAML reads `kind: null` as
      // no value too, but for the sink it means the null sink.
      const bool null_sink = path == "sink.kind" && v.IsNull();
      if (v.IsNull() && !null_sink) continue;
      Raw r;
      r.path = shown + path;
      r.secret = k->secret;
      r.origin = where;
      r.rank = Rank::kFile;
      if (null_sink) {
        r.scalar = "null";
      } else if (v.IsScalar()) {
        r.shape = Shape::kScalar;
        r.scalar = v.Scalar();
      } else if (v.IsSequence()) {
        r.shape = Shape::kList;
        for (const YAML::Node& e : v) {
          if (!e.IsScalar()) {
            r.origin = position(file, e.Mark());
            fail(r, "a list of strings");
          }
          r.list.push_back(e.Scalar());
        }
      } else if (v.IsMap()) {
        r.shape = Shape::kMap;
        for (auto e = v.begin(); e != v.end(); ++e) {
          if (!e->second.IsScalar()) {
            r.origin = position(file, e->first.Mark());
            fail(r, "a map of NAME: VALUE (each value a string)");
          }
          r.map.emplace_back(e->first.as<std::string>(), e->second.Scalar());
        }
      }
      put(out, path, std::move(r));
    } else if (allowed && isSection(path)) {
      if (v.IsNull()) continue;
      if (!v.IsMap())
        throw ConfigError(fmt::format("{}: {}{}: expected a section (a map of keys)", where, shown, path));
      readYamlSection(v, path, file, out, providers, shown);
    } else {
      std::string hint = providers ? suggest(path) : (suggest(path).rfind("sink", 0) == 0 ? suggest(path) : "");
      throw ConfigError(fmt::format("{}: {}{}: unknown key{}", where, shown, path,
                                    hint.empty() ? "" : fmt::format(" (did you mean {}{}?)", shown, hint)));
    }
  }
}

// providers: {<id>: {sink: {...the keys of `sink`...}}}
void readProviders(const YAML::Node& node, const std::string& where, const std::string& file, ProviderMerged& out) {
  if (node.IsNull()) return;
  if (!node.IsMap())
    throw ConfigError(fmt::format("{}: providers: expected a map of provider ids, each with a sink section", where));
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string id = it->first.as<std::string>();
    const YAML::Node v = it->second;
    const std::string at = position(file, it->first.Mark());
    if (id.empty() || !v.IsMap())
      throw ConfigError(fmt::format("{}: providers.{}: expected a section with a sink section", at, id));
    readYamlSection(v, "", file, out[id], nullptr, "providers." + id + ".");
  }
}

void readYaml(const Sources& s, Merged& out, ProviderMerged& providers) {
  std::string text;
  if (s.text) {
    text = *s.text;
  } else {
    std::string why;
    std::optional<std::string> read = readTextFile(s.file, why);
    if (!read) throw ConfigError(fmt::format("{}: cannot read the configuration: {}", s.file, why));
    text = std::move(*read);
  }
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw ConfigError(fmt::format("{}: YAML syntax error: {}", position(s.file, e.mark), e.msg));
  }
  if (root.IsNull()) return;  // an empty file
  if (!root.IsMap())
    throw ConfigError(fmt::format("{}: expected a map of sections at the top", position(s.file, root.Mark())));
  try {
    readYamlSection(root, "", s.file, out, &providers);
  } catch (const YAML::Exception& e) {
    throw ConfigError(fmt::format("{}: {}", position(s.file, e.mark), e.msg));
  }
}

// NAME=VALUE; the value of a secret map never appears in the message.
std::pair<std::string, std::string> nameValue(const Raw& r, const std::string& item) {
  const auto eq = item.find('=');
  if (eq == std::string::npos || eq == 0) {
    Raw one = r;
    one.shape = Shape::kScalar;
    one.scalar = item;
    fail(one, "NAME=VALUE");
  }
  return {item.substr(0, eq), item.substr(eq + 1)};
}

// One environment variable's value for key `k` at `path`: a map's entries
// are split at commas (a value with a comma goes in the file); a list stays
// one comma-separated scalar, split later like a flag's.
Raw envRaw(const Key& k, std::string path, const std::string& name, const char* v) {
  Raw r;
  r.path = std::move(path);
  r.secret = k.secret;
  r.origin = name;
  r.rank = Rank::kEnv;
  if (k.shape == Shape::kMap) {
    r.shape = Shape::kMap;
    std::string item;
    std::istringstream in(v);
    while (std::getline(in, item, ','))
      if (!trim(item).empty()) r.map.push_back(nameValue(r, trim(item)));
  } else {
    r.shape = Shape::kScalar;
    r.scalar = v;
  }
  return r;
}

void readEnv(const Sources& s, Merged& out) {
  if (!s.getenv) return;
  for (const Key& k : keys()) {
    std::string name = envName(k.path);
    const char* v = s.getenv(name.c_str());
    // PACER_POSTGRES (as pacerctl reads it) stands for postgres.url when
    // PACER_POSTGRES_URL is not set.
    if (!v && std::string_view(k.path) == "postgres.url") {
      name = "PACER_POSTGRES";
      v = s.getenv(name.c_str());
    }
    if (!v) continue;
    put(out, k.path, envRaw(k, k.path, name, v));
  }
}

// PACER_PROVIDERS_<ID>_SINK_...: the id upper-cased, other than letters and
// digits as '_'; for the providers the file names.
std::string providerEnvName(const std::string& id, std::string_view path) {
  std::string s = "PACER_PROVIDERS_";
  for (unsigned char c : id) s += std::isalnum(c) ? static_cast<char>(std::toupper(c)) : '_';
  return s + "_" + envName(path).substr(6);
}

void readProviderEnv(const Sources& s, const std::string& id, Merged& out) {
  if (!s.getenv) return;
  for (const Key& k : keys()) {
    if (std::string_view(k.path).rfind("sink.", 0) != 0) continue;
    const std::string name = providerEnvName(id, k.path);
    const char* v = s.getenv(name.c_str());
    if (!v) continue;
    put(out, k.path, envRaw(k, "providers." + id + "." + k.path, name, v));
  }
}

void readFlags(const Sources& s, Merged& out) {
  for (const Key& k : keys()) {
    auto it = s.flags.find(k.path);
    if (it == s.flags.end() || it->second.empty() || !k.flag) continue;
    Raw r;
    r.path = k.path;
    r.secret = k.secret;
    r.origin = k.flag;
    r.rank = Rank::kFlag;
    if (k.form == FlagForm::kSetTrue || k.form == FlagForm::kSetFalse) {
      r.scalar = k.form == FlagForm::kSetTrue ? "true" : "false";
    } else if (k.shape == Shape::kMap) {
      r.shape = Shape::kMap;
      for (const std::string& item : it->second) r.map.push_back(nameValue(r, item));
    } else if (k.shape == Shape::kList && k.form == FlagForm::kRepeat) {
      r.shape = Shape::kList;
      r.list = it->second;
    } else {
      r.scalar = it->second.back();
    }
    put(out, k.path, std::move(r));
  }
}

std::string canonical(const Raw& r) {
  switch (r.shape) {
    case Shape::kScalar: return "s:" + r.scalar;
    case Shape::kList: {
      std::string s = "l:";
      for (const std::string& e : r.list) s += e + "\n";
      return s;
    }
    case Shape::kMap: {
      auto sorted = r.map;
      std::sort(sorted.begin(), sorted.end());
      std::string s = "m:";
      for (const auto& [k, v] : sorted) s += k + "=" + v + "\n";
      return s;
    }
  }
  return {};
}

// One of two keys giving the same secret: the one from the later source.
std::optional<std::string> secretFrom(const std::optional<Raw>& value, const std::optional<Raw>& file) {
  if (value && file && value->rank == file->rank)
    throw ConfigError(fmt::format("{}: {} and {}: give one of them, not both", file->origin, value->path, file->path));
  if (file && (!value || file->rank > value->rank)) return readSecretFile(*file, file->scalar);
  if (value) return value->scalar;
  return std::nullopt;
}

}  // namespace

std::string envName(std::string_view path) {
  std::string s = "PACER_";
  for (char c : path) s += c == '.' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::vector<std::string> keyPaths() {
  std::vector<std::string> out;
  for (const Key& k : keys()) out.emplace_back(k.path);
  return out;
}

bool isLive(std::string_view path) {
  const Key* k = findKey(path);
  return k && k->live;
}

void addFlags(CLI::App& app, FlagValues& out) {
  for (const Key& k : keys()) {
    if (!k.flag) continue;
    std::vector<std::string>& dest = out[k.path];
    const std::string help = fmt::format("{} [{}, {}]", k.help, k.path, envName(k.path));
    CLI::Option* opt = nullptr;
    if (k.form == FlagForm::kSetTrue || k.form == FlagForm::kSetFalse) {
      opt = app.add_flag_callback(
          k.flag, [&dest] { dest.push_back("1"); }, help);
    } else if (k.form == FlagForm::kRepeat) {
      opt = app.add_option(k.flag, dest, help);
    } else {
      opt = app.add_option_function<std::string>(
          k.flag, [&dest](const std::string& v) { dest.push_back(v); }, help);
    }
    (void)opt;
  }
}

Config load(const Sources& sources) {
  Merged merged;
  ProviderMerged providers;
  if (!sources.file.empty() || sources.text) readYaml(sources, merged, providers);
  readEnv(sources, merged);
  readFlags(sources, merged);
  for (auto& [id, m] : providers) readProviderEnv(sources, id, m);

  Config config;
  DaemonOptions& o = config.options;
  Pending pending;
  Ctx ctx{o, pending};
  for (const Key& k : keys()) {
    auto it = merged.find(k.path);
    if (it == merged.end()) continue;
    applyKey(k, it->second, ctx);
    config.values[k.path] = canonical(it->second);
  }

  // Secrets that may come from a file.
  // A password without a connection string is left out: "postgres: empty" says what is missing.
  if (auto pw = secretFrom(pending.password, pending.password_file); pw && !o.postgres.empty())
    o.postgres = withPassword(o.postgres, *pw);
  if (auto token = secretFrom(pending.token, pending.token_file)) o.admin_token = *token;
  const std::string files_held = applyFileMaps(o, pending, "");
  // What the secret files held, as fingerprints (never the secrets): a reload
  // that reads a rotated file says it needs a restart instead of saying nothing.
  const auto fingerprint = [](const std::string& s) { return fmt::format("{:016x}", std::hash<std::string>{}(s)); };
  if (pending.password_file) config.values["postgres.password_file (contents)"] = fingerprint(o.postgres);
  if (pending.token_file) config.values["admin.token_file (contents)"] = fingerprint(o.admin_token);
  for (const Pending::FileMap& f : pending.file_maps)
    config.values[std::string(f.key->path) + " (contents)"] = fingerprint(files_held);

  // Each provider's sink: the default sink's settings with its own on top,
  // except what a sink key resets for a provider (the HTTP headers: they
  // carry one host's credentials, and a provider's sink usually talks to
  // another host).
  for (const auto& [id, m] : providers) {
    DaemonOptions p = o;
    for (const sink::SinkKey& k : sink::sinkKeys())
      if (k.provider_reset) k.provider_reset(p);
    Pending pp;
    Ctx pctx{p, pp};
    for (const Key& k : keys()) {
      auto it = m.find(k.path);
      if (it == m.end()) continue;
      applyKey(k, it->second, pctx);
      config.values["providers." + id + "." + k.path] = canonical(it->second);
    }
    applyFileMaps(p, pp, "providers." + id + ".");
    config.values["providers." + id] = "provider";  // a provider added or removed is a change too
    o.provider_sinks[id] = worker::defaultSinkOptions(p);
  }

  // Checks across keys, and settings derived from others.
  if (o.redis_cluster && o.redis.empty())
    throw ConfigError("redis.cluster: give the cluster's nodes (redis.nodes, --redis HOST:PORT)");
  checkPriority(o);
  o.worker.lease.tick = o.tick;
  o.worker.lease.lookahead = std::max(o.worker.lease.lookahead, o.worker.lease.horizon);
  o.worker.lease.ttl = std::max(o.worker.lease.ttl, o.worker.lease.lookahead + 2 * o.worker.lease.horizon);
  return config;
}

ReloadPlan planReload(const Config& current, const Config& next) {
  ReloadPlan plan;
  plan.config = current;
  for (const Key& k : keys()) {
    auto a = current.values.find(k.path);
    auto b = next.values.find(k.path);
    const bool same = (a == current.values.end()) == (b == next.values.end()) &&
                      (a == current.values.end() || a->second == b->second);
    if (same) continue;
    if (!k.live) {
      plan.needs_restart.emplace_back(k.path);
      continue;
    }
    plan.changed.emplace_back(k.path);
    if (b == next.values.end())
      plan.config.values.erase(k.path);
    else
      plan.config.values[k.path] = b->second;
  }
  // Keys outside the table (providers.<id>.sink...) need a restart.
  std::set<std::string> other;
  for (const auto& [key, v] : current.values)
    if (!findKey(key)) other.insert(key);
  for (const auto& [key, v] : next.values)
    if (!findKey(key)) other.insert(key);
  for (const std::string& key : other) {
    auto a = current.values.find(key);
    auto b = next.values.find(key);
    if (a == current.values.end() || b == next.values.end() || a->second != b->second)
      plan.needs_restart.push_back(key);
  }
  // The live keys' fields, from the new options.
  DaemonOptions& o = plan.config.options;
  const DaemonOptions& n = next.options;
  o.worker.retry.max_attempts = n.worker.retry.max_attempts;
  o.worker.retry.max_throttled = n.worker.retry.max_throttled;
  o.worker.retry.max_age = n.worker.retry.max_age;
  o.worker.adaptive.decrease = n.worker.adaptive.decrease;
  o.worker.adaptive.hold_fraction = n.worker.adaptive.hold_fraction;
  o.worker.adaptive.probe_time = n.worker.adaptive.probe_time;
  o.worker.adaptive.floor = n.worker.adaptive.floor;
  o.worker.adaptive.latency_threshold = n.worker.adaptive.latency_threshold;
  o.commit_interval = n.commit_interval;
  o.refresh_interval = n.refresh_interval;
  o.stats_interval = n.stats_interval;
  o.shutdown_deadline = n.shutdown_deadline;
  o.summary_file = n.summary_file;
  return plan;
}

}  // namespace pacer::config
