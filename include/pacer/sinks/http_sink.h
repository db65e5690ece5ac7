// The HTTP provider sink: libcurl's multi interface, one thread, many
// requests in flight over kept-alive connections (HTTP/2 multiplexing where
// the server offers it). See README "HTTP sink" for the request contract.
// Not thread-safe: one owner thread calls submit() and poll().
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pacer/sink.h"
#include "pacer/sinks/http_codec.h"

namespace pacer::sink {

struct HttpSinkOptions {
  // May contain {recipient} and {campaign}, filled in URL-encoded.
  std::string url;
  std::string method = "POST";
  std::string content_type = "application/json";
  // Static headers, e.g. {"Authorization", "Bearer ..."}; values are never logged.
  std::vector<std::pair<std::string, std::string>> headers;
  std::chrono::milliseconds connect_timeout{2000};
  std::chrono::milliseconds total_timeout{10000};
  std::size_t max_in_flight = 64;
  bool verify_tls = true;
  std::string ca_file;  // empty: the system's
  bool http2 = true;    // offer HTTP/2 (over TLS, negotiated; plain HTTP stays 1.1)
  // Connections to the provider: 0 = as many as requests in flight (HTTP/1.1
  // style); push providers want few connections with many streams each.
  std::size_t max_connections = 0;
  // Streams per HTTP/2 connection Pacer opens at most; libcurl also keeps to
  // the server's SETTINGS_MAX_CONCURRENT_STREAMS, whichever is lower.
  std::size_t max_streams = 100;
  // A provider protocol (APNs, FCM): builds each request and reads each
  // answer instead of the generic POST of the payload. Null: the generic sink.
  std::shared_ptr<HttpCodec> codec;
  // Where the sink says why it is waiting (a credential missing); may be empty.
  std::function<void(std::string_view)> log;
  // The wall clock handed to the codec; empty: the system clock.
  std::function<WallTime()> wall_clock;
};

// Throws InvalidError for an unusable URL template or method.
SinkInterfacePtr makeHttpSink(HttpSinkOptions options);

// Classifies an HTTP answer (pure; exposed for tests and the fuzzer):
//   2xx                          delivered
//   429                          throttled (Retry-After honoured when present)
//   503 with a usable Retry-After throttled
//   503 without one, 408, 5xx    fault
//   other 4xx                    permanent
//   anything else (1xx, 3xx)     fault
// `retry_after` is the Retry-After header's value (empty: none), `body` the
// answer's body (kept in the reason, cut to kMaxReasonBody bytes), and
// `now_unix_s` the wall clock, for an HTTP-date Retry-After.
SendResult classifyHttpAnswer(int status, std::string_view retry_after, std::string_view body, std::int64_t now_unix_s);
inline constexpr std::size_t kMaxReasonBody = 200;

// Parses a Retry-After value: delta-seconds, or an HTTP-date measured
// against `now_unix_s`. Returns 0 when absent or unparsable.
Nanos parseRetryAfter(const std::string& value, std::int64_t now_unix_s) noexcept;
// The same, nullopt when absent or unparsable (so "0" and nonsense differ).
std::optional<Nanos> retryAfterValue(std::string_view value, std::int64_t now_unix_s) noexcept;

// Fills {recipient} and {campaign} in `url_template`, URL-encoding the values.
std::string expandUrl(const std::string& url_template, const Message& m);

}  // namespace pacer::sink
