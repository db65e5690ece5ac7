// The push sinks' h2 transport (private to pacer::sink_push): nghttp2's
// client session over OpenSSL, few connections per origin, many streams each,
// and a codec (pacer/sinks/http_codec.h) for the protocol. Completed streams
// end without RST_STREAM; GOAWAY moves the requests the server did not
// process to a new connection. Not thread-safe: one owner thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "pacer/sink.h"
#include "pacer/sinks/http_codec.h"

namespace pacer::sink {

struct H2SinkOptions {
  std::size_t max_in_flight = 500;
  std::size_t connections = 1;    // per origin (scheme, host, port)
  std::size_t max_streams = 1000;  // per connection; the server's limit applies too
  std::string ca_file;
  bool verify_tls = true;
  std::chrono::milliseconds timeout{10000};          // per request; then RST_STREAM(CANCEL) and a fault
  std::chrono::milliseconds connect_timeout{5000};   // TCP and TLS together
  std::chrono::milliseconds ping_interval{30000};    // input silence before a PING
  std::int32_t connection_window = 16 * 1024 * 1024;
  std::shared_ptr<HttpCodec> codec;  // required
  std::function<void(std::string_view)> log;
};

// Counters of one sink since it was made (benches read them through the log line at close).
struct H2SinkStats {
  std::uint64_t connections_opened = 0;
  std::uint64_t resets_sent = 0;
  std::uint64_t goaways = 0;          // connections that ended by GOAWAY
  std::uint64_t moved_not_processed = 0;  // requests sent again because the server did not process them
};

// Throws InvalidError for an unusable CA file.
SinkInterfacePtr makeH2PushSink(H2SinkOptions options);

}  // namespace pacer::sink
