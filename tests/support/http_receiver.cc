#include "support/http_receiver.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace pacer::testing {

HttpReceiver::HttpReceiver(Decide decide) : decide_(std::move(decide)) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  if (listen_fd_ < 0) throw std::runtime_error("http receiver: socket failed");
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listen_fd_, 64) != 0 ||
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(listen_fd_);
    throw std::runtime_error("http receiver: bind/listen failed");
  }
  port_ = ntohs(addr.sin_port);
  thread_ = std::thread([this] { serve(); });
}

HttpReceiver::~HttpReceiver() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  ::close(listen_fd_);
}

std::string HttpReceiver::url(const std::string& path) const {
  return "http://127.0.0.1:" + std::to_string(port_) + path;
}

std::vector<ReceivedRequest> HttpReceiver::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

std::size_t HttpReceiver::count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_.size();
}

void HttpReceiver::serve() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    const int fd = ::accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) continue;
    handle(fd);
    ::close(fd);
  }
}

namespace {

// Reads until `pred` holds for the buffer, the peer closes or 2 s pass.
bool readUntil(int fd, std::string& buf, const std::function<bool()>& pred) {
  char chunk[4096];
  while (!pred()) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 2000) <= 0) return false;
    const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0) return false;
    buf.append(chunk, static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace

void HttpReceiver::handle(int fd) {
  std::string buf;
  if (!readUntil(fd, buf, [&] { return buf.find("\r\n\r\n") != std::string::npos; })) return;
  const std::size_t head_end = buf.find("\r\n\r\n");
  ReceivedRequest r;
  std::size_t line_end = buf.find("\r\n");
  const std::string first = buf.substr(0, line_end);
  const std::size_t sp1 = first.find(' '), sp2 = first.rfind(' ');
  r.method = first.substr(0, sp1);
  r.target = first.substr(sp1 + 1, sp2 - sp1 - 1);
  for (std::size_t at = line_end + 2; at < head_end;) {
    const std::size_t end = buf.find("\r\n", at);
    const std::string line = buf.substr(at, end - at);
    const std::size_t colon = line.find(':');
    if (colon != std::string::npos) {
      std::string name = line.substr(0, colon);
      std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
      std::string value = line.substr(colon + 1);
      value.erase(0, value.find_first_not_of(' '));
      r.headers[name] = value;
    }
    at = end + 2;
  }
  const std::size_t length = r.headers.contains("content-length") ? std::stoul(r.headers["content-length"]) : 0;
  if (!readUntil(fd, buf, [&] { return buf.size() >= head_end + 4 + length; })) return;
  r.body = buf.substr(head_end + 4, length);
  r.status = decide_(r);
  {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back(r);
  }
  const std::string answer =
      "HTTP/1.1 " + std::to_string(r.status) + " X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
  ::send(fd, answer.data(), answer.size(), MSG_NOSIGNAL);
}

}  // namespace pacer::testing
