// The registry's entries for stdout (demos) and null (benchmarks).
#include <cstdio>

#include "pacer/sinks/sink_registry.h"

namespace pacer::sink {

SinkKind stdoutSinkKind() {
  return {"stdout", false, [](const SinkBuild& b) { return makeStdoutSink(stdout, b.settings.sink_in_flight); }};
}

SinkKind nullSinkKind() {
  return {"null", false, [](const SinkBuild& b) { return makeNullSink(b.settings.sink_in_flight); }};
}

}  // namespace pacer::sink
