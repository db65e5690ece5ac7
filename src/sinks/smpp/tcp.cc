#include "tcp.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "pacer/error.h"

namespace pacer::sink::tcp {

Endpoint resolve(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  const int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &res);
  if (rc != 0 || res == nullptr) {
    throw InvalidError("smpp: cannot resolve host '" + host + "': " + gai_strerror(rc));
  }
  Endpoint e;
  std::memcpy(&e.addr, res->ai_addr, res->ai_addrlen);
  e.len = static_cast<socklen_t>(res->ai_addrlen);
  e.text = host + ":" + service;
  freeaddrinfo(res);
  return e;
}

int startConnect(const Endpoint& to, std::string& error) {
  const int fd = ::socket(to.addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    error = errorText(errno);
    return -1;
  }
  const int one = 1;
  // PDUs are small and answered one by one: Nagle would hold them back.
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&to.addr), to.len) != 0 && errno != EINPROGRESS) {
    error = errorText(errno);
    ::close(fd);
    return -1;
  }
  return fd;
}

int connectError(int fd) {
  int err = 0;
  socklen_t len = sizeof err;
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return errno;
  return err;
}

std::string errorText(int err) { return std::strerror(err); }

}  // namespace pacer::sink::tcp
