// An HTTP/2 client session without I/O: bytes in, bytes out, requests
// submitted, answers and stream failures out. It wraps nghttp2's client
// session (itself I/O-free), so the socket loop lives in the sink and this
// part can be driven by tests and fuzzers on a simulated clock. Time is an
// argument of every call that needs it; the session never reads a clock.
//
// What it guarantees:
// - A stream that completes (the server's END_STREAM after our END_STREAM)
//   ends without an RST_STREAM from our side.
// - At most min(options.max_streams, the server's SETTINGS_MAX_CONCURRENT_STREAMS)
//   streams are open; requests beyond that wait in a queue, in order. None
//   is sent before the server's first SETTINGS say what its limit is.
// - On GOAWAY, streams at or below its last_stream_id are left to finish;
//   those above it, and queued requests never sent, fail with
//   H2FailureKind::kNotProcessed (the server says it did not act on them:
//   safe to send again). No new request is sent on a session that got GOAWAY.
// - Liveness: after ping_interval without input it sends a PING; without its
//   ACK within ping_timeout the session is dead (dead() and why()).
// Not thread-safe: one owner.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pacer/time.h"

namespace pacer::push {

struct H2ClientOptions {
  std::string authority;              // ":authority" of every request (host[:port])
  std::string scheme = "https";       // ":scheme"
  std::uint32_t max_streams = 1000;   // our own cap on open streams (the server's applies too)
  std::int32_t connection_window = 16 * 1024 * 1024;  // bytes the server may send before we update
  std::int32_t stream_window = 1024 * 1024;           // the same per stream
  std::size_t max_body_bytes = 16 * 1024;             // answer body bytes kept; the rest is read and dropped
  Nanos ping_interval = std::chrono::seconds(30);     // input silence before a PING
  Nanos ping_timeout = std::chrono::seconds(10);      // PING without ACK for this long: dead
};

struct H2Request {
  std::uint64_t tag = 0;  // the caller's handle, returned with the answer or failure
  std::string method = "POST";
  std::string path;
  std::vector<std::pair<std::string, std::string>> headers;  // lowercase names; values may be secret
  std::string body;
};

struct H2Answer {
  std::uint64_t tag = 0;
  std::int32_t stream_id = 0;
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;  // without pseudo-headers
  std::string body;                                          // at most max_body_bytes
  // The value of header `name` (lowercase), empty when absent.
  std::string_view header(std::string_view name) const;
};

enum class H2FailureKind {
  kNotProcessed,  // GOAWAY above last_stream_id, REFUSED_STREAM, or never sent: safe to retry
  kReset,         // the server reset the stream (RST_STREAM other than REFUSED_STREAM)
  kLost,          // the connection ended with the stream open: the server may have acted on it
};

struct H2Failure {
  std::uint64_t tag = 0;
  std::int32_t stream_id = 0;  // 0: never sent
  H2FailureKind kind = H2FailureKind::kLost;
  std::uint32_t error_code = 0;  // HTTP/2 error code where one came
  std::string reason;
};

class H2ClientSession {
 public:
  // Queues the client preface and our SETTINGS (window sizes, no push).
  H2ClientSession(H2ClientOptions options, MonoTime now);
  ~H2ClientSession();
  H2ClientSession(const H2ClientSession&) = delete;
  H2ClientSession& operator=(const H2ClientSession&) = delete;

  // Sends `request` now or queues it (over the stream limit). False, without
  // taking it, once the session is dead or got GOAWAY.
  bool submit(H2Request&& request);
  // Bytes read from the server. A protocol error makes the session dead.
  void receive(std::string_view bytes, MonoTime now);
  // Appends the bytes to write to the server; also sends a liveness PING
  // when due and marks the session dead when one went unanswered.
  void send(std::string& out, MonoTime now);
  // The connection ended (EOF, TLS or socket error): every stream still
  // open fails kLost, every queued request kNotProcessed.
  void connectionLost(std::string_view why);
  // Sends RST_STREAM(CANCEL) for the stream carrying `tag`, or drops it from
  // the queue; it then fails kReset with `why`. False if unknown.
  bool cancel(std::uint64_t tag, std::string_view why);
  // Starts a graceful end: GOAWAY, open streams may finish.
  void shutdown();

  // Moves out what completed since the last call.
  void takeAnswers(std::vector<H2Answer>& out);
  void takeFailures(std::vector<H2Failure>& out);

  bool dead() const;              // no more I/O is useful; why() says why
  bool goingAway() const;         // GOAWAY received or sent, or dead: takes no new request
  bool goawayReceived() const;    // the server sent GOAWAY
  const std::string& why() const;
  std::size_t openStreams() const;  // sent, not finished
  std::size_t queued() const;       // waiting for a stream slot
  // The server's SETTINGS_MAX_CONCURRENT_STREAMS (100 until its SETTINGS arrive).
  std::uint32_t serverMaxStreams() const;
  // The tags of open streams and queued requests (the caller checks deadlines).
  std::vector<std::uint64_t> pendingTags() const;
  // Counters for tests and benches.
  std::uint64_t resetsSent() const;   // RST_STREAM frames we sent
  std::uint64_t pingsSent() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace pacer::push
