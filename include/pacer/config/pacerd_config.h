// pacerd's configuration: built-in defaults < one YAML file (--config) <
// environment variables (PACER_<SECTION>_<KEY>) < command-line flags, all
// checked by one set of rules into a DaemonOptions. Every setting is a key in
// one table (pacerd_config.cc): its YAML path, its environment variable, its
// flag, its check, whether it is secret and whether SIGHUP applies it live.
//
// Errors name where the value came from (`file:line:column`, the environment
// variable, or the flag), the key, what was expected and what was given,
// except for secrets (postgres password, admin token, HTTP header values),
// whose values never appear in a message. See README "Configuration".
//
// Thread-safety: none needed; pure functions of their arguments, apart from
// reading the *_file keys' files and the environment through the given getter.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pacer/daemon/daemon.h"

namespace CLI {
class App;
}

namespace pacer::config {

// A configuration pacerd cannot use. Exit 2, like any bad option.
class ConfigError : public worker::DaemonConfigError {
 public:
  using worker::DaemonConfigError::DaemonConfigError;
};

// The values given on the command line, by key path ("scheduler.tick_ms"),
// as the user typed them (a repeatable flag has one entry per use).
using FlagValues = std::map<std::string, std::vector<std::string>>;

// Registers one flag per key that has one on `app`; after parsing, the given
// ones are in `out` (which must outlive the parse).
void addFlags(CLI::App& app, FlagValues& out);

// Where the configuration comes from.
struct Sources {
  std::string file;                 // a YAML file; empty: none
  std::optional<std::string> text;  // the file's text instead of reading `file` (tests); `file` names it
  // The environment; unset variables return nullptr. Tests pass their own.
  std::function<const char*(const char*)> getenv;
  FlagValues flags;
};

// A loaded configuration: the options and, per key set anywhere, a canonical
// text of its value (to tell what a reload changed; never printed).
struct Config {
  worker::DaemonOptions options;
  std::map<std::string, std::string> values;
};

// Loads and checks. Throws ConfigError.
Config load(const Sources& sources);

// A reload: `current` with the keys SIGHUP can apply taken from `next`.
// `changed` lists the live keys that changed; `needs_restart` the changed
// keys that are kept as they were until a restart.
struct ReloadPlan {
  Config config;
  std::vector<std::string> changed;
  std::vector<std::string> needs_restart;
};
ReloadPlan planReload(const Config& current, const Config& next);

// Every key path, in table order (docs and tests).
std::vector<std::string> keyPaths();
// PACER_SCHEDULER_TICK_MS for scheduler.tick_ms.
std::string envName(std::string_view path);
// Whether SIGHUP applies the key without a restart.
bool isLive(std::string_view path);

}  // namespace pacer::config
