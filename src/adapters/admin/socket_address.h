// Client and bound socket addresses as the admin listener names them: for
// the log ("HOST:PORT"), for the loopback check, and as the key of the
// wrong-token table (TokenGuard).
#pragma once

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <string>

namespace pacer::admin {

inline bool isLoopback(const sockaddr* sa) {
  if (sa->sa_family == AF_INET) return (ntohl(reinterpret_cast<const sockaddr_in*>(sa)->sin_addr.s_addr) >> 24) == 127;
  if (sa->sa_family == AF_INET6) {
    const in6_addr& a = reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(&a)) return true;
    if (IN6_IS_ADDR_V4MAPPED(&a)) return a.s6_addr[12] == 127;
  }
  return false;
}

inline std::string formatAddress(const sockaddr* sa) {
  char host[INET6_ADDRSTRLEN] = "?";
  if (sa->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    ::inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    return fmt::format("{}:{}", host, ntohs(in->sin_port));
  }
  const auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
  ::inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
  return fmt::format("[{}]:{}", host, ntohs(in6->sin6_port));
}

// The part of a client's address that names it: the IPv4 address, or the
// /64 prefix of an IPv6 one (one host usually holds a whole /64, so counting
// each address apart would let it start afresh 2^64 times). No port.
inline std::string addressKey(const sockaddr* sa) {
  if (sa == nullptr) return {};
  if (sa->sa_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in*>(sa)->sin_addr;
    return std::string(reinterpret_cast<const char*>(&a), 4);
  }
  if (sa->sa_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr;
    if (IN6_IS_ADDR_V4MAPPED(&a)) return std::string(reinterpret_cast<const char*>(a.s6_addr) + 12, 4);
    return "6" + std::string(reinterpret_cast<const char*>(a.s6_addr), 8);
  }
  return {};
}

}  // namespace pacer::admin
