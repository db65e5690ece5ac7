// A tiny HTTP/1.1 server on loopback for integration tests that check what
// pacer POSTs (callbacks): one thread, one connection at a time, each answered
// with `Connection: close`. Every request is recorded; the status of each
// answer is decided by a function the test gives.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace pacer::testing {

struct ReceivedRequest {
  std::string method;
  std::string target;                          // "/hook?x=1"
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  int status = 0;  // what it was answered
};

class HttpReceiver {
 public:
  using Decide = std::function<int(const ReceivedRequest&)>;
  // Listens on a free loopback port at once; throws std::runtime_error if it cannot.
  explicit HttpReceiver(Decide decide);
  ~HttpReceiver();  // stops and joins
  HttpReceiver(const HttpReceiver&) = delete;
  HttpReceiver& operator=(const HttpReceiver&) = delete;

  int port() const { return port_; }
  std::string url(const std::string& path) const;  // "http://127.0.0.1:<port><path>"
  std::vector<ReceivedRequest> requests() const;
  std::size_t count() const;

 private:
  void serve();
  void handle(int fd);
  Decide decide_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::vector<ReceivedRequest> requests_;
  std::thread thread_;
};

}  // namespace pacer::testing
