// The registry's entry for the generic HTTP sink, and its keys (sink.http.*).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "pacer/error.h"
#include "pacer/sinks/sink_registry.h"

namespace pacer::sink {
namespace {

std::vector<SinkKey> httpKeys() {
  return {
      {"sink.http.url", KeyShape::kScalar, "--http-url", KeyFlag::kValue, false,
       "sink http: URL template; may contain {recipient} and {campaign}",
       [](const KeyValue& v, SinkSettings& s) { s.http.url = v.asString(); }},
      {"sink.http.method", KeyShape::kScalar, "--http-method", KeyFlag::kValue, false,
       "sink http: method (default POST)", [](const KeyValue& v, SinkSettings& s) { s.http.method = v.asNonEmpty(); }},
      {"sink.http.content_type", KeyShape::kScalar, "--http-content-type", KeyFlag::kValue, false,
       "sink http: Content-Type (default application/json)",
       [](const KeyValue& v, SinkSettings& s) { s.http.content_type = v.asString(); }},
      // A provider's sink usually talks to another host: it does not take
      // the default sink's headers, which carry that host's credentials.
      {"sink.http.headers", KeyShape::kMap, "--http-header", KeyFlag::kRepeat, true,
       "sink http: static header NAME=VALUE (repeatable; never logged)",
       [](const KeyValue& v, SinkSettings& s) {
         auto& hs = s.http.headers;
         for (const auto& [k, value] : v.asMap()) {
           const std::string& key = k;  // (Clang 14 cannot capture a structured binding)
           hs.erase(std::remove_if(hs.begin(), hs.end(), [&](const auto& h) { return h.first == key; }), hs.end());
           hs.emplace_back(k, value);
         }
       },
       nullptr, [](SinkSettings& s) { s.http.headers.clear(); }},
      {"sink.http.header_files", KeyShape::kMap, nullptr, KeyFlag::kNone, false, "",
       [](const KeyValue& v, SinkSettings&) { v.asMap(); }, "sink.http.headers"},
      {"sink.http.timeout_ms", KeyShape::kScalar, "--http-timeout-ms", KeyFlag::kValue, false,
       "sink http: total timeout per request (default 10000)",
       [](const KeyValue& v, SinkSettings& s) { s.http.total_timeout = std::chrono::milliseconds(v.asInt(1)); }},
  };
}

}  // namespace

SinkKind httpSinkKind() {
  return {"http", false,
          [](const SinkBuild& b) {
            HttpSinkOptions h = b.settings.http;
            h.max_in_flight = b.settings.sink_in_flight;
            try {
              return makeHttpSink(std::move(h));
            } catch (const InvalidError& e) {
              throw InvalidError(fmt::format("{} http: {}", b.where, e.what()));
            }
          },
          httpKeys()};
}

}  // namespace pacer::sink
