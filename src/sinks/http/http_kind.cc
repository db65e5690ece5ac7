// The registry's entry for the generic HTTP sink (sink.http.*).
#include <fmt/format.h>

#include "pacer/error.h"
#include "pacer/sinks/sink_registry.h"

namespace pacer::sink {

SinkKind httpSinkKind() {
  return {"http", false, [](const SinkBuild& b) {
            HttpSinkOptions h = b.settings.http;
            h.max_in_flight = b.settings.sink_in_flight;
            try {
              return makeHttpSink(std::move(h));
            } catch (const InvalidError& e) {
              throw InvalidError(fmt::format("{} http: {}", b.where, e.what()));
            }
          }};
}

}  // namespace pacer::sink
