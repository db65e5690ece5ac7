// The shared server of both fake providers: TLS (OpenSSL, ALPN h2 only) and
// HTTP/2 (nghttp2) on non-blocking sockets under one epoll thread, the
// counters behind GET /_report, and the record file. Each fake brings a
// PushHandler with its own rules.
#pragma once

#include <openssl/ssl.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <unordered_map>

#include "h2_connection.h"
#include "push_handler.h"

namespace pacer::fake {

struct ServerConfig {
  std::string listen = "127.0.0.1:0";
  std::string cert_path;
  std::string key_path;
  std::uint32_t max_concurrent_streams = 100;
  int latency_ms = 0;
  int retry_after_s = 1;
  std::string record_path;
  std::uint32_t goaway_after = 0;
};

// The report's numbers. Requests are those handed to the handler (not
// /_report, not refused streams).
struct PushCounters {
  std::uint64_t requests = 0, accepted = 0, throttled = 0, invalid = 0, faults = 0, auth_failures = 0, bad_requests = 0,
                tokens_issued = 0, streams_refused = 0, streams_refused_before_ack = 0, connections = 0,
                max_concurrent_streams_seen = 0;
  std::uint64_t token_throttled = 0;  // of `throttled`, the hot token's per-token 429s
  std::uint64_t noise_throttled = 0;  // of `throttled`, those drawn at random (--throttle-rate)
  std::uint64_t resets_on_completed_streams = 0, resets_on_open_streams = 0;  // RST_STREAM received
  std::uint64_t goaways_sent = 0, refused_after_goaway = 0;                 // --goaway-after
};

// Appends one JSON line per accepted request through a large stdio buffer.
// Not thread-safe.
class RecordFile {
 public:
  // Empty path: records nothing. Throws FakePushConfigError if it cannot open.
  explicit RecordFile(const std::string& path);
  ~RecordFile();
  RecordFile(const RecordFile&) = delete;
  RecordFile& operator=(const RecordFile&) = delete;
  void write(const Decision& d, const char* scope_name, std::int64_t wall_us, std::size_t body_len);
  void flush();

 private:
  std::FILE* file_ = nullptr;
};

// Not thread-safe: listen() then run() on one thread.
class PushServer {
 public:
  PushServer(ServerConfig config, std::unique_ptr<PushHandler> handler);
  ~PushServer();
  PushServer(const PushServer&) = delete;
  PushServer& operator=(const PushServer&) = delete;

  // Loads the certificate, binds, blocks SIGTERM/SIGINT/SIGUSR1; returns the port.
  int listen();
  // Serves until SIGTERM/SIGINT; flushes the record before returning.
  void run();

  // From the HTTP/2 callbacks of a connection:
  std::uint32_t maxConcurrentStreams() const noexcept { return config_.max_concurrent_streams; }
  // A stream over the limit; before the client acknowledged our SETTINGS it
  // could not have known the limit, so those are counted apart too.
  void onStreamRefused(bool settings_acked) noexcept {
    ++counters_.streams_refused;
    if (!settings_acked) ++counters_.streams_refused_before_ack;
  }
  void onStreamOpened(std::uint32_t open) noexcept;
  // An RST_STREAM from the client: for a stream already complete on both
  // sides (answered and closed), which a well-behaved client never sends and
  // servers guarding against rapid resets count, or for one still open.
  void onResetReceived(bool completed) noexcept {
    ++(completed ? counters_.resets_on_completed_streams : counters_.resets_on_open_streams);
  }
  // A complete request: classify, count, record, answer now or after --latency-ms.
  void onRequest(Connection& c, Stream& s);

  std::string reportJson() const;

 private:
  void acceptAll();
  void serve(Connection& c, std::uint32_t events);
  bool handshake(Connection& c);
  bool readTls(Connection& c);
  bool writeTls(Connection& c);
  void watch(Connection& c);
  void close(int fd);
  void startDrain(Connection& c);
  void drain(Connection& c);
  void releaseDelayed();
  int nextTimeoutMs() const;
  bool readSignals();  // false on SIGTERM/SIGINT
  PushNow now() const;

  ServerConfig config_;
  std::unique_ptr<PushHandler> handler_;
  SSL_CTX* tls_ = nullptr;
  int listen_fd_ = -1, epoll_fd_ = -1, signal_fd_ = -1;
  std::unordered_map<int, std::unique_ptr<Connection>> conns_;
  PushCounters counters_;
  std::unique_ptr<RecordFile> record_;
};

}  // namespace pacer::fake
