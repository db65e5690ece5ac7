#include "h2_link.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "pacer/error.h"

namespace pacer::sink {
namespace {

constexpr std::size_t kReadChunk = 64 * 1024;

bool isAddress(const std::string& host) {
  in6_addr a6;
  in_addr a4;
  return inet_pton(AF_INET, host.c_str(), &a4) == 1 || inet_pton(AF_INET6, host.c_str(), &a6) == 1;
}

// A non-blocking socket with its connect started; -1 and `why` on failure.
int startConnect(const std::string& host, const std::string& port, std::string& why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rv = getaddrinfo(host.c_str(), port.c_str(), &hints, &found);
  if (rv != 0) {
    why = fmt::format("cannot resolve {}: {}", host, gai_strerror(rv));
    return -1;
  }
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
      why = fmt::format("connect to {}:{}: {}", host, port, std::strerror(errno));
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  return fd;
}

}  // namespace

SSL_CTX* makeH2TlsContext(const std::string& ca_file, bool verify) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) throw Error(ErrorKind::kUnavailable, "SSL_CTX_new failed");
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  static const unsigned char kAlpn[] = {2, 'h', '2'};
  SSL_CTX_set_alpn_protos(ctx, kAlpn, sizeof kAlpn);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  if (verify) {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
    const int ok =
        ca_file.empty() ? SSL_CTX_set_default_verify_paths(ctx) : SSL_CTX_load_verify_locations(ctx, ca_file.c_str(), nullptr);
    if (ok != 1) {
      SSL_CTX_free(ctx);
      throw InvalidError(fmt::format("sink.push.ca_file: cannot load CA certificates from '{}'", ca_file));
    }
  }
  return ctx;
}

H2Link::H2Link(const H2LinkOptions& options, SSL_CTX* tls, MonoTime now)
    : session_(options.session, now), host_(options.host) {
  connect_deadline_ = now + options.connect_timeout;
  std::string why;
  fd_ = startConnect(options.host, options.port, why);
  if (fd_ < 0) {
    session_.connectionLost(why);
    return;
  }
  ssl_ = SSL_new(tls);
  if (ssl_ == nullptr) {
    lose("SSL_new failed");
    return;
  }
  SSL_set_fd(ssl_, fd_);
  if (isAddress(host_)) {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), host_.c_str());
  } else {
    SSL_set_tlsext_host_name(ssl_, host_.c_str());
    SSL_set1_host(ssl_, host_.c_str());
  }
}

H2Link::~H2Link() {
  if (ssl_ != nullptr) SSL_free(ssl_);
  if (fd_ >= 0) close(fd_);
}

short H2Link::events() const {
  if (fd_ < 0) return 0;
  if (state_ == State::kConnecting) return POLLOUT;
  return static_cast<short>(POLLIN | (want_write_ || out_off_ < out_.size() ? POLLOUT : 0));
}

void H2Link::lose(std::string_view why) {
  session_.connectionLost(why);
  if (ssl_ != nullptr) SSL_free(ssl_);
  ssl_ = nullptr;
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

std::string H2Link::tlsError(int ret, const char* what) {
  const int err = SSL_get_error(ssl_, ret);
  const unsigned long e = ERR_get_error();
  std::string text = e != 0 ? ERR_error_string(e, nullptr) : (err == SSL_ERROR_SYSCALL ? std::strerror(errno) : "");
  ERR_clear_error();
  const long verify = SSL_get_verify_result(ssl_);
  if (verify != X509_V_OK) text += fmt::format(" (certificate: {})", X509_verify_cert_error_string(verify));
  return fmt::format("TLS {} with {}: {}", what, host_, text.empty() ? "connection closed" : text);
}

bool H2Link::finishConnect(MonoTime now) {
  pollfd p{fd_, POLLOUT, 0};
  if (::poll(&p, 1, 0) <= 0) {
    if (now >= connect_deadline_) lose(fmt::format("connect to {}: timeout", host_));
    return false;
  }
  int err = 0;
  socklen_t len = sizeof err;
  getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
  if (err != 0) {
    lose(fmt::format("connect to {}: {}", host_, std::strerror(err)));
    return false;
  }
  state_ = State::kHandshake;
  return true;
}

bool H2Link::handshake() {
  const int ret = SSL_connect(ssl_);
  if (ret == 1) {
    const unsigned char* proto = nullptr;
    unsigned int len = 0;
    SSL_get0_alpn_selected(ssl_, &proto, &len);
    if (len != 2 || std::memcmp(proto, "h2", 2) != 0) {
      lose(fmt::format("{} did not agree to HTTP/2 (ALPN h2)", host_));
      return false;
    }
    state_ = State::kOpen;
    want_write_ = false;
    return true;
  }
  const int err = SSL_get_error(ssl_, ret);
  if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
    want_write_ = err == SSL_ERROR_WANT_WRITE;
    return false;
  }
  lose(tlsError(ret, "handshake"));
  return false;
}

bool H2Link::readAll(MonoTime now) {
  char buf[kReadChunk];
  for (;;) {
    const int n = SSL_read(ssl_, buf, sizeof buf);
    if (n > 0) {
      session_.receive(std::string_view(buf, static_cast<std::size_t>(n)), now);
      continue;
    }
    const int err = SSL_get_error(ssl_, n);
    if (err == SSL_ERROR_WANT_READ) return true;
    if (err == SSL_ERROR_WANT_WRITE) {
      want_write_ = true;
      return true;
    }
    lose(err == SSL_ERROR_ZERO_RETURN ? "the server closed the connection" : tlsError(n, "read"));
    return false;
  }
}

bool H2Link::writeAll() {
  want_write_ = false;
  while (out_off_ < out_.size()) {
    const int n = SSL_write(ssl_, out_.data() + out_off_, static_cast<int>(out_.size() - out_off_));
    if (n > 0) {
      out_off_ += static_cast<std::size_t>(n);
      continue;
    }
    const int err = SSL_get_error(ssl_, n);
    if (err == SSL_ERROR_WANT_WRITE || err == SSL_ERROR_WANT_READ) {
      want_write_ = err == SSL_ERROR_WANT_WRITE;
      return true;
    }
    lose(tlsError(n, "write"));
    return false;
  }
  out_.clear();
  out_off_ = 0;
  return true;
}

void H2Link::io(MonoTime now) {
  if (fd_ < 0) return;
  if (state_ == State::kConnecting && !finishConnect(now)) return;
  if (state_ == State::kHandshake && !handshake()) {
    if (fd_ >= 0 && now >= connect_deadline_) lose("TLS handshake timeout");
    return;
  }
  if (!readAll(now)) return;
  // Bytes are taken from the session only when TLS has room for them, so
  // that a slow socket holds them back in nghttp2 rather than here.
  if (out_off_ == out_.size()) session_.send(out_, now);
  if (!writeAll()) return;
  if (session_.dead()) {
    // Sent what it had (a GOAWAY, a last WINDOW_UPDATE): close.
    lose(session_.why());
    return;
  }
}

}  // namespace pacer::sink
