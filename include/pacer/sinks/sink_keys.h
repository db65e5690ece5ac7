// A sink's own configuration keys (sink.<kind>.*), declared by its folder
// beside its SinkKind (pacer/sinks/sink_registry.h). pacerd's configuration
// takes them from the registry: they are read from the file, PACER_* and
// flags like every other key, for the default sink and for each provider's
// own (providers.<id>.sink.*), and shown in --help. Adding a sink: docs/sinks.md.
#pragma once

#include <climits>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pacer::sink {

struct SinkSettings;

// What a key holds.
enum class KeyShape { kScalar, kList, kMap };
// How its flag is given: --x VALUE (the last wins), --x VALUE repeatable (a
// list, or NAME=VALUE entries of a map), or a bare flag that sets true/false.
enum class KeyFlag { kNone, kValue, kRepeat, kSetTrue, kSetFalse };

// One key's value as given, with the checks a key applies to it. A check
// that fails throws the configuration's error, which names where the value
// came from, the key and what was expected, never the value of a secret:
// `pacerd.yaml:3:5: sink.smpp.port: expected an integer from 1 to 65535, got "0"`.
class KeyValue {
 public:
  virtual ~KeyValue() = default;
  virtual std::string asString() const = 0;
  virtual std::string asNonEmpty() const = 0;
  // An integer in [min, max].
  virtual long long asInt(long long min, long long max = INT_MAX) const = 0;
  // A finite number that `ok` accepts; `expected` says which ("a rate >= 0").
  virtual double asDouble(bool (*ok)(double), std::string_view expected) const = 0;
  // true/yes/on/1 or false/no/off/0, any case.
  virtual bool asBool(std::string_view expected = "true or false") const = 0;
  virtual std::string asChoice(std::initializer_list<const char*> choices) const = 0;
  // A YAML sequence or one comma-separated string, items trimmed.
  virtual std::vector<std::string> asList() const = 0;
  virtual const std::vector<std::pair<std::string, std::string>>& asMap() const = 0;
  // For a check of the key's own: "<origin>: <path>: expected <expected>, got <value>".
  [[noreturn]] virtual void fail(std::string_view expected) const = 0;
};

// One key. Its default is the default of the field it sets (a member
// initializer of the sink's settings) and --help states it in `help`,
// "(default N)", which scripts/check-docs compares with docs/configuration.md
// and config/pacerd.example.yaml. A sink's keys need a restart to change.
struct SinkKey {
  const char* path;  // "sink.http.url"; a provider's own: providers.<id>.sink.http.url
  KeyShape shape;
  const char* flag;  // "--http-url"; nullptr: none (the file and PACER_* only)
  KeyFlag form;
  bool secret;       // its value never appears in errors or logs
  const char* help;  // --help's text, its default included
  // Checks the value (its bounds are the checks it calls) and sets it; a map
  // key's entries override the entries of the same name already set.
  void (*apply)(const KeyValue& value, SinkSettings& settings);
  // A map of NAME: FILE whose files' contents (trailing newlines cut) are
  // given to the key at `files_for` as its entry NAME, after every other key
  // (sink.http.header_files for sink.http.headers). Its own apply only
  // checks the map; `files_for` names a map key of the same sink.
  const char* files_for = nullptr;
  // For a provider's own sink: clears what it does not take from the default
  // sink's settings (credentials for another host), before its own keys.
  void (*provider_reset)(SinkSettings& settings) = nullptr;
};

}  // namespace pacer::sink
