// The list of sink kinds. Each folder under src/sinks/ defines
// `SinkKind <name>SinkKind()` and names its kinds in its CMakeLists.txt
// (pacer_sink_kinds); sink_kinds.inc is generated from those, in the order
// of src/sinks/CMakeLists.txt, so nothing here changes when a sink is added.
#include "pacer/sinks/sink_registry.h"

#include <set>

namespace pacer::sink {

#define PACER_SINK_KIND(name) SinkKind name##SinkKind();
#include "sink_kinds.inc"
#undef PACER_SINK_KIND

const std::vector<SinkKind>& sinkKinds() {
  static const std::vector<SinkKind> kinds{
#define PACER_SINK_KIND(name) name##SinkKind(),
#include "sink_kinds.inc"
#undef PACER_SINK_KIND
  };
  return kinds;
}

const SinkKind* findSinkKind(std::string_view name) {
  for (const SinkKind& k : sinkKinds())
    if (name == k.name) return &k;
  return nullptr;
}

std::string sinkKindNames() {
  std::string out;
  for (const SinkKind& k : sinkKinds()) out += (out.empty() ? "" : ", ") + std::string(k.name);
  return out;
}

const std::vector<SinkKey>& sinkKeys() {
  static const std::vector<SinkKey> keys = [] {
    std::vector<SinkKey> all;
    std::set<std::string_view> seen;
    for (const SinkKind& k : sinkKinds())
      for (const SinkKey& key : k.keys)
        if (seen.insert(key.path).second) all.push_back(key);
    return all;
  }();
  return keys;
}

}  // namespace pacer::sink
