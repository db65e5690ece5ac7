#include "push_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "pacer/fakes/fake_push.h"

namespace pacer::fake {
namespace {

constexpr std::size_t kReadChunk = 64 * 1024;
constexpr std::size_t kReadBudget = 1 << 20;
// Stop reading a connection while this much of its answers waits to be written.
constexpr std::size_t kMaxPendingOut = 4 << 20;

std::string tlsError() {
  char buf[256];
  ERR_error_string_n(ERR_get_error(), buf, sizeof buf);
  return buf;
}

// Only HTTP/2: a client that does not offer h2 is refused in the handshake,
// as the providers do.
int selectAlpn(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in, unsigned int inlen,
               void*) {
  for (unsigned i = 0; i < inlen; i += 1u + in[i]) {
    if (in[i] == 2 && i + 3 <= inlen && std::memcmp(in + i + 1, "h2", 2) == 0) {
      *out = in + i + 1;
      *outlen = 2;
      return SSL_TLSEXT_ERR_OK;
    }
  }
  return SSL_TLSEXT_ERR_ALERT_FATAL;
}

sockaddr_in parseListen(const std::string& spec) {
  const auto colon = spec.rfind(':');
  sockaddr_in a{};
  a.sin_family = AF_INET;
  if (colon == std::string::npos) throw FakePushConfigError("--listen: expected HOST:PORT, got '" + spec + "'");
  const std::string host = spec.substr(0, colon), port = spec.substr(colon + 1);
  char* end = nullptr;
  const long p = std::strtol(port.c_str(), &end, 10);
  if (port.empty() || *end != '\0' || p < 0 || p > 65535)
    throw FakePushConfigError("--listen: bad port '" + port + "'");
  const std::string ip = host == "localhost" ? "127.0.0.1" : host;
  if (inet_pton(AF_INET, ip.c_str(), &a.sin_addr) != 1)
    throw FakePushConfigError("--listen: '" + host + "' is not an IPv4 address");
  a.sin_port = htons(static_cast<std::uint16_t>(p));
  return a;
}

}  // namespace

PushServer::PushServer(ServerConfig config, std::unique_ptr<PushHandler> handler)
    : config_(std::move(config)), handler_(std::move(handler)) {}

PushServer::~PushServer() {
  conns_.clear();
  if (tls_ != nullptr) SSL_CTX_free(tls_);
  for (int fd : {listen_fd_, epoll_fd_, signal_fd_})
    if (fd >= 0) ::close(fd);
}

int PushServer::listen() {
  tls_ = SSL_CTX_new(TLS_server_method());
  if (tls_ == nullptr) throw std::runtime_error("SSL_CTX_new: " + tlsError());
  SSL_CTX_set_min_proto_version(tls_, TLS1_2_VERSION);  // RFC 9113: TLS 1.2 or later
  SSL_CTX_set_mode(tls_, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_options(tls_, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  if (SSL_CTX_use_certificate_chain_file(tls_, config_.cert_path.c_str()) != 1)
    throw FakePushConfigError("--cert " + config_.cert_path + ": " + tlsError());
  if (SSL_CTX_use_PrivateKey_file(tls_, config_.key_path.c_str(), SSL_FILETYPE_PEM) != 1)
    throw FakePushConfigError("--key " + config_.key_path + ": " + tlsError());
  if (SSL_CTX_check_private_key(tls_) != 1) throw FakePushConfigError("--key does not match --cert");
  SSL_CTX_set_alpn_select_cb(tls_, selectAlpn, nullptr);
  record_ = std::make_unique<RecordFile>(config_.record_path);

  const sockaddr_in addr = parseListen(config_.listen);
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  const int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(listen_fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listen_fd_, 1024) != 0)
    throw std::runtime_error("cannot listen on " + config_.listen + ": " + std::strerror(errno));
  sockaddr_in bound{};
  socklen_t len = sizeof bound;
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &len);
  const int port = ntohs(bound.sin_port);

  std::signal(SIGPIPE, SIG_IGN);  // a peer gone mid-write is an error return, not the end of the fake
  sigset_t signals;
  sigemptyset(&signals);
  for (int s : {SIGTERM, SIGINT, SIGUSR1}) sigaddset(&signals, s);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal_fd_ = signalfd(-1, &signals, SFD_NONBLOCK | SFD_CLOEXEC);
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  for (int fd : {listen_fd_, signal_fd_}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
  }
  handler_->onListening(port);
  return port;
}

void PushServer::run() {
  std::vector<epoll_event> events(256);
  for (;;) {
    const int n = epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), nextTimeoutMs());
    if (n < 0 && errno != EINTR) throw std::runtime_error(std::string("epoll_wait: ") + std::strerror(errno));
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == signal_fd_) {
        if (!readSignals()) {
          record_->flush();
          return;
        }
      } else if (fd == listen_fd_) {
        acceptAll();
      } else if (auto it = conns_.find(fd); it != conns_.end()) {
        serve(*it->second, events[i].events);
      }
    }
    releaseDelayed();
  }
}

bool PushServer::readSignals() {
  signalfd_siginfo info{};
  bool keep_going = true;
  while (::read(signal_fd_, &info, sizeof info) == sizeof info) {
    if (info.ssi_signo == SIGUSR1)
      record_->flush();
    else
      keep_going = false;
  }
  return keep_going;
}

void PushServer::acceptAll() {
  for (;;) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    SSL* ssl = SSL_new(tls_);
    if (ssl == nullptr) {
      ::close(fd);
      continue;
    }
    SSL_set_fd(ssl, fd);
    SSL_set_accept_state(ssl);
    auto c = std::make_unique<Connection>(*this, fd, ssl);
    c->events = EPOLLIN;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
    conns_[fd] = std::move(c);
    ++counters_.connections;
  }
}

bool PushServer::handshake(Connection& c) {
  ERR_clear_error();  // SSL_get_error reads the queue: only this call's errors may be on it
  const int rc = SSL_do_handshake(c.ssl);
  if (rc != 1) {
    const int err = SSL_get_error(c.ssl, rc);
    return err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE;
  }
  c.handshake_done = true;
  return startSession(c, config_.max_concurrent_streams);
}

void PushServer::serve(Connection& c, std::uint32_t events) {
  if (c.draining) return drain(c);
  bool ok = (events & (EPOLLERR)) == 0;
  if (ok && !c.handshake_done) ok = handshake(c);
  if (ok && c.handshake_done) {
    if (events & (EPOLLIN | EPOLLHUP)) ok = readTls(c);
    if (ok) ok = writeTls(c);
    // Bytes TLS already took off the socket raise no epoll event: serve them now.
    while (ok && SSL_pending(c.ssl) > 0 && c.out.size() - c.out_off < kMaxPendingOut) {
      ok = readTls(c);
      if (ok) ok = writeTls(c);
    }
  }
  const bool finished = c.handshake_done && !nghttp2_session_want_read(c.session) &&
                        !nghttp2_session_want_write(c.session) && c.out_off == c.out.size();
  if (!ok || c.broken) {
    close(c.fd);
    return;
  }
  if (finished) return startDrain(c);
  watch(c);
}

void PushServer::startDrain(Connection& c) {
  ERR_clear_error();
  SSL_shutdown(c.ssl);  // close_notify, best effort
  ::shutdown(c.fd, SHUT_WR);
  c.draining = true;
  c.events = EPOLLIN;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = c.fd;
  epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &ev);
  drain(c);
}

void PushServer::drain(Connection& c) {
  char buf[16384];
  for (;;) {
    const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
    if (n > 0) continue;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    close(c.fd);  // the client closed (or failed): nothing of ours is left unread
    return;
  }
}

bool PushServer::readTls(Connection& c) {
  unsigned char buf[kReadChunk];
  // A budget per turn so a client that never stops sending still gets its
  // answers written; epoll (level-triggered) calls again for the rest.
  for (std::size_t budget = kReadBudget; budget > 0 && c.out.size() - c.out_off < kMaxPendingOut;
       budget -= std::min(budget, kReadChunk)) {
    ERR_clear_error();
    const int n = SSL_read(c.ssl, buf, sizeof buf);
    if (n <= 0) {
      const int err = SSL_get_error(c.ssl, n);
      return err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE;
    }
    if (nghttp2_session_mem_recv(c.session, buf, static_cast<std::size_t>(n)) < 0) return false;
  }
  return true;
}

bool PushServer::writeTls(Connection& c) {
  for (;;) {
    const std::uint8_t* data = nullptr;
    const ssize_t n = nghttp2_session_mem_send(c.session, &data);
    if (n < 0) return false;
    if (n == 0) break;
    c.out.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n));
  }
  if (!c.settings_patched) c.settings_patched = patchMaxConcurrentStreams(c.out, config_.max_concurrent_streams);
  while (c.out_off < c.out.size()) {
    ERR_clear_error();
    const int n = SSL_write(c.ssl, c.out.data() + c.out_off, static_cast<int>(c.out.size() - c.out_off));
    if (n <= 0) {
      const int err = SSL_get_error(c.ssl, n);
      return err == SSL_ERROR_WANT_WRITE || err == SSL_ERROR_WANT_READ;
    }
    c.out_off += static_cast<std::size_t>(n);
  }
  c.out.clear();
  c.out_off = 0;
  return true;
}

void PushServer::watch(Connection& c) {
  std::uint32_t want = 0;
  if (c.out.size() - c.out_off < kMaxPendingOut) want |= EPOLLIN;
  if (c.out_off < c.out.size()) want |= EPOLLOUT;
  if (want == c.events) return;
  c.events = want;
  epoll_event ev{};
  ev.events = want;
  ev.data.fd = c.fd;
  epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &ev);
}

void PushServer::close(int fd) {
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  conns_.erase(fd);
}

void PushServer::onStreamOpened(std::uint32_t open) noexcept {
  if (open > counters_.max_concurrent_streams_seen) counters_.max_concurrent_streams_seen = open;
}

PushNow PushServer::now() const {
  const auto wall = std::chrono::system_clock::now().time_since_epoch();
  return PushNow{MonoTime{std::chrono::steady_clock::now().time_since_epoch()},
                 std::chrono::duration_cast<std::chrono::microseconds>(wall).count()};
}

}  // namespace pacer::fake
