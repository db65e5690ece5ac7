// The admin listener in-process on a loopback port, with real sockets: the
// slow-client guard (/healthz answers while silent clients hold connections),
// event streams (many open, each gets the newest frame, none blocks
// /healthz), replies completed from another thread, request bodies, and the
// refused-request log throttle.
#include <arpa/inet.h>
#include <curl/curl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "pacer/admin/admin_server.h"
#include "pacer/time.h"

namespace pacer::admin {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

struct HttpAnswer {
  long status = 0;  // 0: no answer
  std::string body;
  double seconds = 0;
};

std::size_t collect(char* data, std::size_t size, std::size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

HttpAnswer http(const std::string& method, const std::string& url, const std::string& body = "",
                const std::string& authorization = "", long timeout_ms = 3000) {
  HttpAnswer a;
  CURL* c = curl_easy_init();
  curl_slist* headers = nullptr;
  if (!authorization.empty()) headers = curl_slist_append(headers, ("Authorization: " + authorization).c_str());
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method.c_str());
  if (method == "POST") {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  }
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &a.body);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
  const auto t0 = Clock::now();
  if (curl_easy_perform(c) == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &a.status);
  a.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  curl_slist_free_all(headers);
  curl_easy_cleanup(c);
  return a;
}

// A raw TCP connection to the listener; -1 when refused.
int connectTo(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

void sendAll(int fd, const std::string& text) { (void)!::send(fd, text.data(), text.size(), MSG_NOSIGNAL); }

// Reads what `fd` has until `until` is in it or `limit` passes.
std::string readUntil(int fd, const std::string& until, milliseconds limit) {
  std::string got;
  const auto end = Clock::now() + limit;
  char buf[8192];
  while (got.find(until) == std::string::npos && Clock::now() < end) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, static_cast<std::size_t>(n));
  }
  return got;
}

// Routes for the test: /events streams, /later answers from another thread,
// /echo returns the raw path and the body.
class TestRoutes final : public AdminRoutes {
 public:
  Answer route(const AdminRequest& r, const std::function<PendingReplyPtr()>& later) override {
    if (r.path == "/events") return Answer{Kind::kEvents, {}};
    if (r.path == "/later") {
      std::lock_guard<std::mutex> lock(mutex_);
      pending_.push_back(later());
      return Answer{Kind::kLater, {}};
    }
    if (r.path.starts_with("/echo"))
      return Answer{Kind::kNow, AdminResponse{200, "text/plain", std::string(r.path) + "|" + std::string(r.body), {}}};
    return Answer{};
  }
  std::vector<PendingReplyPtr> takePending() {
    std::lock_guard<std::mutex> lock(mutex_);
    return std::exchange(pending_, {});
  }

 private:
  std::mutex mutex_;
  std::vector<PendingReplyPtr> pending_;
};

class AdminListenerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { curl_global_init(CURL_GLOBAL_DEFAULT); }

  void start(AdminServerOptions o = {}) {
    o.address = ListenAddress{"127.0.0.1", 0};
    o.routes = &routes_;
    o.events = hub_;
    o.log = [this](const char* level, const std::string& text) {
      std::lock_guard<std::mutex> lock(log_mutex_);
      log_.push_back(std::string(level) + " " + text);
    };
    server_ = std::make_unique<AdminServer>(std::move(o), state_, *clock_);
    state_.heartbeat(clock_->now());
    base_ = "http://" + server_->boundAddress();
    port_ = std::stoi(server_->boundAddress().substr(server_->boundAddress().rfind(':') + 1));
  }
  void TearDown() override {
    server_.reset();
    for (int fd : fds_) ::close(fd);
  }
  std::vector<std::string> log() {
    std::lock_guard<std::mutex> lock(log_mutex_);
    return log_;
  }

  TimeSourcePtr clock_ = makeSteadyTimeSource();
  AdminState state_;
  TestRoutes routes_;
  std::shared_ptr<EventHub> hub_ = std::make_shared<EventHub>();
  std::unique_ptr<AdminServer> server_;
  std::string base_;
  int port_ = 0;
  std::vector<int> fds_;
  std::mutex log_mutex_;
  std::vector<std::string> log_;
};

TEST_F(AdminListenerTest, SixtyFourSilentClientsDoNotBlockHealthz) {
  start();
  for (int i = 0; i < 64; ++i) {
    const int fd = connectTo(port_);
    ASSERT_GE(fd, 0);
    sendAll(fd, "GET /healthz HTTP/1.1\r\nHost: slow\r\n");  // headers never finished
    fds_.push_back(fd);
  }
  std::this_thread::sleep_for(milliseconds(200));
  const HttpAnswer a = http("GET", base_ + "/healthz");
  EXPECT_EQ(a.status, 200) << "the old listener (64 connections at most, 10 s timeout) gave none";
  EXPECT_LT(a.seconds, 1.0);
}

TEST_F(AdminListenerTest, SilentClientsBeyondTheConnectionLimitAreClosedSoHealthzGetsAnAnswer) {
  AdminServerOptions o;
  o.connection_limit = 64;
  o.idle_reserve = 8;
  start(std::move(o));
  for (int i = 0; i < 100; ++i) {
    const int fd = connectTo(port_);
    if (fd >= 0) {
      sendAll(fd, "GET /metrics HTTP/1.1\r\n");
      fds_.push_back(fd);
    }
  }
  // The guard closes the oldest silent ones after 1 s; without it they hold
  // every slot for the 10 s timeout.
  const auto t0 = Clock::now();
  HttpAnswer a;
  while (Clock::now() - t0 < std::chrono::seconds(5) && a.status != 200)
    a = http("GET", base_ + "/healthz", "", "", 500);
  EXPECT_EQ(a.status, 200);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 4.0);
}

TEST_F(AdminListenerTest, EveryEventStreamGetsTheNewestFrameAndHealthzStillAnswers) {
  start();
  hub_->publish("event: state\ndata: {\"n\":0}\n\n");
  constexpr int kStreams = 100;
  for (int i = 0; i < kStreams; ++i) {
    const int fd = connectTo(port_);
    ASSERT_GE(fd, 0);
    sendAll(fd, "GET /events HTTP/1.1\r\nHost: x\r\n\r\n");
    fds_.push_back(fd);
  }
  for (int fd : fds_) {
    const std::string first = readUntil(fd, "{\"n\":0}", milliseconds(3000));
    ASSERT_THAT(first, HasSubstr("text/event-stream"));
    ASSERT_THAT(first, HasSubstr("retry: 3000"));
    ASSERT_THAT(first, HasSubstr("data: {\"n\":0}"));
  }
  EXPECT_EQ(hub_->streams(), static_cast<std::size_t>(kStreams));
  for (int n = 1; n <= 3; ++n) {
    const std::string data = "data: {\"n\":" + std::to_string(n) + "}";
    hub_->publish("event: state\n" + data + "\n\n");
    const HttpAnswer h = http("GET", base_ + "/healthz");
    EXPECT_EQ(h.status, 200);
    EXPECT_LT(h.seconds, 0.5);
    for (int fd : fds_) ASSERT_THAT(readUntil(fd, data, milliseconds(3000)), HasSubstr(data));
  }
  // A stream whose client left is gone after the next frame.
  ::close(fds_.back());
  fds_.pop_back();
  hub_->publish("event: state\ndata: {}\n\n");
  const auto t0 = Clock::now();
  while (hub_->streams() != kStreams - 1 && Clock::now() - t0 < std::chrono::seconds(3)) {
    std::this_thread::sleep_for(milliseconds(20));
    hub_->publish("event: state\ndata: {}\n\n");
  }
  EXPECT_EQ(hub_->streams(), static_cast<std::size_t>(kStreams - 1));
  server_.reset();  // with open streams: ends them, does not hang
  EXPECT_EQ(hub_->streams(), 0u);
}

TEST_F(AdminListenerTest, ManyStreamsLeavingAtOnceLeaveTheListenerWhole) {
  start();
  hub_->publish("event: state\ndata: {}\n\n");
  for (int round = 0; round < 3; ++round) {
    std::vector<int> streams;
    for (int i = 0; i < 60; ++i) {  // more than the guard's reserve of waiting connections
      streams.push_back(connectTo(port_));
      sendAll(streams.back(), "GET /events HTTP/1.1\r\nHost: x\r\n\r\n");
    }
    for (int fd : streams) ASSERT_THAT(readUntil(fd, "data: {}", milliseconds(3000)), HasSubstr("data: {}"));
    for (int fd : streams) ::close(fd);
    for (int i = 0; i < 20; ++i) {
      hub_->publish("event: state\ndata: {}\n\n");
      std::this_thread::sleep_for(milliseconds(10));
    }
    EXPECT_EQ(http("GET", base_ + "/healthz").status, 200);
  }
  const auto t0 = Clock::now();
  while (hub_->streams() != 0 && Clock::now() - t0 < std::chrono::seconds(3)) {
    hub_->publish("event: state\ndata: {}\n\n");
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_EQ(hub_->streams(), 0u);
}

TEST_F(AdminListenerTest, MoreStreamsThanTheLimitGet503) {
  AdminServerOptions o;
  o.max_streams = 2;
  start(std::move(o));
  for (int i = 0; i < 2; ++i) {
    fds_.push_back(connectTo(port_));
    sendAll(fds_.back(), "GET /events HTTP/1.1\r\nHost: x\r\n\r\n");
    ASSERT_THAT(readUntil(fds_.back(), "retry:", milliseconds(3000)), HasSubstr("200 OK"));
  }
  EXPECT_EQ(http("GET", base_ + "/events", "", "", 1000).status, 503);
}

TEST_F(AdminListenerTest, ALaterReplyDoesNotHoldUpOthersAndArrivesWhenCompleted) {
  start();
  HttpAnswer slow;
  std::thread client([&] { slow = http("GET", base_ + "/later"); });
  std::vector<PendingReplyPtr> pending;
  const auto t0 = Clock::now();
  while (pending.empty() && Clock::now() - t0 < std::chrono::seconds(3)) {
    pending = routes_.takePending();
    std::this_thread::sleep_for(milliseconds(10));
  }
  ASSERT_EQ(pending.size(), 1u);
  const HttpAnswer h = http("GET", base_ + "/healthz");
  EXPECT_EQ(h.status, 200) << "the listener's thread is free while a reply is pending";
  EXPECT_LT(h.seconds, 0.5);
  std::thread other([p = pending[0]] { p->complete(AdminResponse{202, "text/plain", "done later", {}}); });
  other.join();
  pending[0]->complete(AdminResponse{500, "text/plain", "second call ignored", {}});
  client.join();
  EXPECT_EQ(slow.status, 202);
  EXPECT_EQ(slow.body, "done later");
}

TEST_F(AdminListenerTest, StoppingAnswersPendingReplies) {
  start();
  HttpAnswer slow;
  std::thread client([&] { slow = http("GET", base_ + "/later"); });
  const auto t0 = Clock::now();
  std::vector<PendingReplyPtr> pending;
  while (pending.empty() && Clock::now() - t0 < std::chrono::seconds(3)) {
    pending = routes_.takePending();
    std::this_thread::sleep_for(milliseconds(10));
  }
  ASSERT_EQ(pending.size(), 1u);
  server_.reset();
  client.join();
  EXPECT_EQ(slow.status, 503);
  pending[0]->complete(AdminResponse{});  // after the listener is gone: nothing happens
}

TEST_F(AdminListenerTest, BodiesAndRawPathsReachTheRoutes) {
  start();
  const HttpAnswer a = http("POST", base_ + "/echo/a%2Fb%3Cc", "{\"rate\":5}");
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(a.body, "/echo/a%2Fb%3Cc|{\"rate\":5}") << "percent-escapes are left for the route to decode";
  EXPECT_EQ(http("POST", base_ + "/echo", std::string(20000, 'x')).status, 413);
}

TEST_F(AdminListenerTest, RefusedRequestsAreLoggedAtMostOncePerSecondWithTheCountLeftOut) {
  AdminServerOptions o;
  o.token = "right";
  start(std::move(o));
  for (int i = 0; i < 50; ++i) ASSERT_EQ(http("POST", base_ + "/admin/drain", "", "Bearer wrong").status, 401);
  std::vector<std::string> lines = log();
  ASSERT_GE(lines.size(), 1u);
  EXPECT_LE(lines.size(), 3u) << "50 refusals within a second or two";
  std::this_thread::sleep_for(milliseconds(1100));
  ASSERT_EQ(http("POST", base_ + "/admin/drain", "", "Bearer wrong").status, 401);
  lines = log();
  EXPECT_THAT(lines.back(), HasSubstr("status=401"));
  EXPECT_THAT(lines.back(), HasSubstr("suppressed="));
  EXPECT_EQ(http("POST", base_ + "/admin/drain", "", "Bearer right").status, 200);
  EXPECT_THAT(log().back(), HasSubstr("INFO event=admin_request method=POST path=/admin/drain status=200"))
      << "accepted state changes are always logged";
}

TEST_F(AdminListenerTest, EveryAnswerCarriesAContentSecurityPolicy) {
  start();
  const int fd = connectTo(port_);
  fds_.push_back(fd);
  sendAll(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  const std::string got = readUntil(fd, "ok\n", milliseconds(2000));
  EXPECT_THAT(got, HasSubstr("Content-Security-Policy: default-src 'none'; script-src 'self'"));
  EXPECT_THAT(got, HasSubstr("X-Content-Type-Options: nosniff"));
}

}  // namespace
}  // namespace pacer::admin
