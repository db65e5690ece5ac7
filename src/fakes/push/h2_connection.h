// One TLS connection's HTTP/2 side: an nghttp2 server session driven by
// callbacks, its streams, and the bytes waiting to be written. The event
// loop (push_server.cc) owns the socket and TLS; this part is told bytes.
#pragma once

#include <nghttp2/nghttp2.h>
#include <openssl/ssl.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>

#include "pacer/time.h"
#include "push_handler.h"

namespace pacer::fake {

class PushServer;

struct Stream {
  std::int32_t id = 0;
  PushRequest request;
  PushResponse response;
  std::size_t sent = 0;    // bytes of response.body handed to nghttp2
  bool refused = false;    // over the advertised concurrency: RST_STREAM REFUSED_STREAM
  bool too_large = false;  // body beyond kMaxRequestBody: answered 413
  bool answered = false;
};

// Not thread-safe: the event-loop thread owns every connection.
struct Connection {
  Connection(PushServer& s, int socket, SSL* tls) : server(s), fd(socket), ssl(tls) {}
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  PushServer& server;
  int fd;
  SSL* ssl;
  nghttp2_session* session = nullptr;
  bool handshake_done = false;
  bool settings_patched = false;
  bool settings_acked = false;  // the client has taken our SETTINGS (and so knows the limit)
  bool broken = false;          // a TLS or HTTP/2 error: close without more I/O
  // The session is over (GOAWAY sent and answered): our side is shut and what
  // the client still sends is read and dropped until it closes, so that a
  // close with unread input (a TCP reset) cannot destroy answers in flight.
  bool draining = false;
  std::string out;  // bytes from nghttp2 not yet written to TLS
  std::size_t out_off = 0;
  std::uint32_t events = 0;  // what epoll watches for now
  std::unordered_map<std::int32_t, std::unique_ptr<Stream>> streams;
  std::uint32_t open_streams = 0;                         // not refused, not closed
  std::uint32_t requests = 0;      // handed to the provider's rules on this connection
  std::int32_t goaway_last = 0;    // --goaway-after: the last stream id our GOAWAY named; 0: none sent
  std::deque<std::pair<MonoTime, std::int32_t>> delayed;  // answers held back by --latency-ms
};

constexpr std::size_t kMaxRequestBody = 1 << 20;

// Makes the nghttp2 server session and queues the server's SETTINGS.
// False when nghttp2 fails (out of memory).
bool startSession(Connection& c, std::uint32_t max_concurrent_streams);
// Queues the stream's response (headers and body from stream.response).
void submitResponse(Connection& c, Stream& s);
// nghttp2 keeps its own limit on concurrent streams and answers a client
// over it with GOAWAY, a connection error; the fake must refuse the extra
// stream alone (RST_STREAM REFUSED_STREAM) like the providers do. So nghttp2
// is given a high limit and the first SETTINGS frame on the wire is rewritten
// to advertise `advertised`; the fake then enforces it itself. Returns false
// if `out` does not start with a complete SETTINGS frame yet.
bool patchMaxConcurrentStreams(std::string& out, std::uint32_t advertised);
// The limit nghttp2 itself is given (above any sensible --max-concurrent-streams).
constexpr std::uint32_t kSessionStreamLimit = 1u << 20;

}  // namespace pacer::fake
