// One TLS connection (OpenSSL, ALPN h2) carrying one pure HTTP/2 client
// session (pacer/push/h2_client.h): the socket half of the push sink's h2
// transport. Non-blocking throughout: connect, handshake, reads and writes
// each go as far as the socket allows and resume at the next io().
// Not thread-safe: the sink's owner thread.
#pragma once

#include <openssl/ssl.h>

#include <cstdint>
#include <memory>
#include <string>

#include "pacer/push/h2_client.h"
#include "pacer/time.h"

namespace pacer::sink {

struct H2LinkOptions {
  std::string host;  // name or address; the certificate must match it
  std::string port;
  Nanos connect_timeout = std::chrono::seconds(5);  // TCP connect and TLS handshake together
  push::H2ClientOptions session;
};

class H2Link {
 public:
  // Starts the connect; a failure to start shows as a dead session.
  H2Link(const H2LinkOptions& options, SSL_CTX* tls, MonoTime now);
  ~H2Link();
  H2Link(const H2Link&) = delete;
  H2Link& operator=(const H2Link&) = delete;

  // Moves the connection on: connect, handshake, read into the session,
  // write what it has to say. When the session or socket ends, every stream
  // still open fails (the session's failures) and the socket is closed.
  void io(MonoTime now);
  push::H2ClientSession& session() { return session_; }
  // What poll(2) should wait for; fd -1 once closed.
  int fd() const { return fd_; }
  short events() const;
  bool closed() const { return fd_ < 0; }
  // Accepts new requests: not closed, no GOAWAY.
  bool usable() const { return fd_ >= 0 && !session_.goingAway(); }
  std::size_t load() const { return session_.openStreams() + session_.queued(); }

 private:
  enum class State { kConnecting, kHandshake, kOpen };
  void lose(std::string_view why);
  bool finishConnect(MonoTime now);
  bool handshake();
  bool readAll(MonoTime now);
  bool writeAll();
  std::string tlsError(int ret, const char* what);

  push::H2ClientSession session_;
  State state_ = State::kConnecting;
  int fd_ = -1;
  SSL* ssl_ = nullptr;
  MonoTime connect_deadline_{};
  bool want_write_ = false;  // TLS asked to wait for writability
  std::string out_;          // session bytes not yet taken by TLS
  std::size_t out_off_ = 0;
  std::string host_;
};

// A client TLS context: TLS 1.2+, ALPN h2, peer verification against
// `ca_file` (empty: the system's CAs) unless `verify` is false. Throws
// InvalidError for an unreadable CA file.
SSL_CTX* makeH2TlsContext(const std::string& ca_file, bool verify);

}  // namespace pacer::sink
