// Thin non-blocking TCP helpers for the SMPP sink (POSIX sockets).
#pragma once

#include <sys/socket.h>

#include <string>

namespace pacer::sink::tcp {

struct Endpoint {
  sockaddr_storage addr{};
  socklen_t len = 0;
  std::string text;  // "host:port" for messages
};

// Resolves host:port (numeric or by name). Throws InvalidError.
Endpoint resolve(const std::string& host, int port);

// Starts a non-blocking connect with TCP_NODELAY; returns the fd, or -1 with
// `error` set. A connect still in progress is not an error.
int startConnect(const Endpoint& to, std::string& error);

// After the socket became writable: 0 when connected, else the errno.
int connectError(int fd);

// "connection refused", ...
std::string errorText(int err);

}  // namespace pacer::sink::tcp
