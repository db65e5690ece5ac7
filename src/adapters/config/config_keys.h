// pacerd's configuration keys (private to src/adapters/config): what a
// value looks like before it is checked (Raw), the checks every key's
// apply() uses, and the table of keys (config_keys.cc), one entry per
// setting with its flag, whether it is secret or live, and its help. The
// sinks' own keys come from the sink registry (pacer/sinks/sink_keys.h).
#pragma once

#include <chrono>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pacer/config/pacerd_config.h"
#include "pacer/sinks/sink_keys.h"

namespace pacer::config::detail {

using worker::DaemonOptions;

// What a key holds, and how its flag is given (pacer/sinks/sink_keys.h).
using Shape = sink::KeyShape;
using FlagForm = sink::KeyFlag;

// Later sources win: a value from the file loses to the environment, which
// loses to a flag.
enum class Rank { kFile = 1, kEnv = 2, kFlag = 3 };

// One key's value as given, before it is checked.
struct Raw {
  std::string path;
  bool secret = false;
  Shape shape = Shape::kScalar;  // what was given
  std::string scalar;
  std::vector<std::string> list;
  std::vector<std::pair<std::string, std::string>> map;
  std::string origin;  // "pacerd.yaml:12:3", "PACER_SCHEDULER_TICK_MS", "--tick-ms"
  Rank rank = Rank::kFile;
};

// Values that need more than one key before they reach DaemonOptions.
struct Pending {
  std::optional<Raw> password, password_file, token, token_file;
  // A sink key's map of NAME: FILE (SinkKey::files_for), read after the other keys.
  struct FileMap {
    const sink::SinkKey* key;
    Raw raw;
  };
  std::vector<FileMap> file_maps;
  std::map<std::string, std::map<std::string, Rank>> map_rank;  // a sink key's map entry: who gave it
};

struct Ctx {
  DaemonOptions& o;
  Pending& p;
};

// Throws ConfigError: "<origin>: <path>: expected <expected>, got <value>"
// (never the value of a secret).
[[noreturn]] void fail(const Raw& r, std::string_view expected);

std::string trim(std::string s);
std::vector<std::string> splitCommas(const std::string& s);
std::string asString(const Raw& r);
std::string asNonEmpty(const Raw& r);
long long asInt(const Raw& r, long long min, long long max = std::numeric_limits<int>::max());
double asDouble(const Raw& r, bool (*ok)(double), std::string_view expected);
bool asBool(const Raw& r, std::string_view expected = "true or false");
std::string asChoice(const Raw& r, std::initializer_list<const char*> choices);
std::vector<std::string> asList(const Raw& r);
const std::vector<std::pair<std::string, std::string>>& asMap(const Raw& r);
void checkHostPort(const Raw& r, const std::string& node, int min_port = 1);
std::optional<std::string> readTextFile(const std::string& path, std::string& why);
std::string readSecretFile(const Raw& r, const std::string& path);
std::string withPassword(const std::string& conninfo, const std::string& password);

using Apply = void (*)(const Raw&, Ctx&);

struct Key {
  const char* path;
  Shape shape;
  const char* flag;  // nullptr: no flag
  FlagForm form;
  bool secret;
  bool live;  // SIGHUP applies it
  const char* help;
  Apply apply;                              // nullptr for a sink's key
  const sink::SinkKey* sink_key = nullptr;  // a sink's key (sink::sinkKeys())
};

// Checks and applies `r`, the value of `k`: the table's apply, or a sink
// key's on the sink settings in c.o (DaemonOptions is one).
void applyKey(const Key& k, const Raw& r, Ctx& c);
// After every key: a sink key's map of NAME: FILE (sink.http.header_files)
// gives each file's contents to entry NAME of the key it is for
// (sink.http.headers), unless a later source gave that entry. `shown` goes
// before paths in errors ("providers.sms."). Returns what the files held.
std::string applyFileMaps(DaemonOptions& o, const Pending& pending, const std::string& shown);

inline std::chrono::milliseconds ms(long long v) { return std::chrono::milliseconds(v); }

// The table: every setting of pacerd. Order is the order of
// config/pacerd.example.yaml and of the checks.
const std::vector<Key>& keys();
std::vector<Key> deadTokenKeys();  // limits.dead_token_* (config_keys_push.cc)
// Priority classes (config_keys_priority.cc), and the check that needs
// more than one of their keys (the default class is one of the classes).
std::vector<Key> priorityKeys();
void checkPriority(const DaemonOptions& o);
// The frequency caps' section (config_keys_caps.cc).
std::vector<Key> capsKeys();
// The outcome events' section (config_keys_events.cc).
std::vector<Key> eventsKeys();
// The HTTP callbacks' section (config_keys_events.cc).
std::vector<Key> callbacksKeys();
// The key at `path` ("sink.http.url"); nullptr if there is none.
const Key* findKey(std::string_view path);

}  // namespace pacer::config::detail
