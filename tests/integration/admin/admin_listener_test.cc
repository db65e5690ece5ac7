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
#include "support/http_request.h"

namespace pacer::admin {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

using testing::HttpAnswer;

HttpAnswer http(const std::string& method, const std::string& url, const std::string& body = "",
                const std::string& authorization = "", long timeout_ms = 3000, const std::string& host = "") {
  return testing::httpRequest(method, url, {body, authorization, timeout_ms, host});
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

// A raw TCP connection to the listener from another loopback address
// (Linux answers all of 127.0.0.0/8): another client as the listener sees it.
int connectFrom(const char* source, int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in from{};
  from.sin_family = AF_INET;
  ::inet_pton(AF_INET, source, &from.sin_addr);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<std::uint16_t>(port));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
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

// A clock the test moves by hand and the listener's thread reads: the log
// throttle's second passes when the test says so, not by waiting for it.
class SteppedClock final : public TimeSource {
 public:
  MonoTime now() const noexcept override { return monoAt(Nanos{now_.load()}); }
  void advance(Nanos d) noexcept { now_ += d.count(); }

 private:
  std::atomic<Nanos::rep> now_{std::chrono::duration_cast<Nanos>(std::chrono::seconds(1000)).count()};
};

// Routes for the test: /events streams, /later answers from another thread,
// /echo returns the raw path and the body.
class TestRoutes final : public AdminRoutes {
 public:
  Answer route(const AdminRequest& r, const std::function<PendingReplyPtr()>& later) override {
    if (r.path == "/events" || r.path == "/api/v1/events") return Answer{Kind::kEvents, {}};
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
    server_ = std::make_unique<AdminServer>(std::move(o), state_, clock_);
    state_.heartbeat(clock_.now());
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

  SteppedClock clock_;
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
  // A window on purpose: the listener has no count of accepted connections to
  // wait on, and the probe proves something only once the 64 hold their slots.
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
    sendAll(fd, "GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
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
      sendAll(streams.back(), "GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
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
  o.console_streams = 0;
  start(std::move(o));
  for (int i = 0; i < 2; ++i) {
    fds_.push_back(connectTo(port_));
    sendAll(fds_.back(), "GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    ASSERT_THAT(readUntil(fds_.back(), "retry:", milliseconds(3000)), HasSubstr("200 OK"));
  }
  EXPECT_EQ(http("GET", base_ + "/events", "", "", 1000).status, 503);
}

// A crowd of scripts takes every stream it may; a console page still gets
// one, and once a slot frees, a script that was answered 503 gets one too.
TEST_F(AdminListenerTest, ACrowdOfScriptsLeavesTheStreamsKeptForConsoles) {
  AdminServerOptions o;
  o.max_streams = 6;
  o.console_streams = 2;
  start(std::move(o));
  const auto open = [&](const std::string& path) {
    const int fd = connectTo(port_);
    fds_.push_back(fd);
    sendAll(fd, "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    return readUntil(fd, "\r\n\r\n", milliseconds(3000));
  };
  int scripts_ok = 0, scripts_refused = 0;
  for (int i = 0; i < 10; ++i) {
    const std::string head = open("/events");
    if (head.find("200 OK") != std::string::npos) ++scripts_ok;
    if (head.find("503") != std::string::npos) {
      ++scripts_refused;
      EXPECT_THAT(head, HasSubstr("Retry-After: 5"));
    }
  }
  EXPECT_EQ(scripts_ok, 4) << "max_streams - console_streams";
  EXPECT_EQ(scripts_refused, 6);
  EXPECT_THAT(open("/events?client=console"), HasSubstr("200 OK")) << "a console after the crowd";
  EXPECT_THAT(open("/events?client=console"), HasSubstr("200 OK"));
  EXPECT_THAT(open("/events?client=console"), HasSubstr("503")) << "every slot taken";
  EXPECT_EQ(hub_->streams(), 6u);
  // A script leaves: the next script is answered 200 again (recovered).
  ::close(fds_.front());
  fds_.erase(fds_.begin());
  std::string again;
  for (int i = 0; i < 100 && again.find("200 OK") == std::string::npos; ++i) {
    hub_->publish("event: state\ndata: {}\n\n");  // a suspended stream notices its client left when woken
    std::this_thread::sleep_for(milliseconds(20));
    again = open("/events");
  }
  EXPECT_THAT(again, HasSubstr("200 OK")) << "a refused client gets a stream once one frees";
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
  o.wrong_token_burst = 0;  // the log throttle alone: every wrong token answered 401
  start(std::move(o));
  for (int i = 0; i < 50; ++i) ASSERT_EQ(http("POST", base_ + "/admin/drain", "", "Bearer wrong").status, 401);
  std::vector<std::string> lines = log();
  ASSERT_GE(lines.size(), 1u);
  EXPECT_EQ(lines.size(), 1u) << "50 refusals within the same second";
  clock_.advance(milliseconds(1100));
  ASSERT_EQ(http("POST", base_ + "/admin/drain", "", "Bearer wrong").status, 401);
  lines = log();
  ASSERT_EQ(lines.size(), 2u) << "a second later, the next refusal is logged";
  EXPECT_THAT(lines.back(), HasSubstr("status=401"));
  EXPECT_THAT(lines.back(), HasSubstr("suppressed=49"));
  EXPECT_EQ(http("POST", base_ + "/admin/drain", "", "Bearer right").status, 200);
  EXPECT_THAT(log().back(), HasSubstr("INFO event=admin_request method=POST path=/admin/drain status=200"))
      << "accepted state changes are always logged";
}

TEST_F(AdminListenerTest, WrongTokensFromOneAddressGet429AfterTheBurstWhileRightTokensAndOthersPass) {
  AdminServerOptions o;
  o.token = "right";
  o.wrong_token_burst = 10;
  o.wrong_token_refill = std::chrono::seconds(6);
  o.wrong_token_delay_first = milliseconds(1);  // the delay has a test of its own
  o.wrong_token_delay_max = milliseconds(1);
  start(std::move(o));
  int refused = 0;
  int slowed = 0;
  for (int i = 0; i < 50; ++i) {
    const long status = http("POST", base_ + "/admin/drain", "", "Bearer guess-" + std::to_string(i)).status;
    refused += status == 401;
    slowed += status == 429;
  }
  EXPECT_EQ(refused, 10) << "the burst is answered 401";
  EXPECT_EQ(slowed, 40) << "then 429 until the bucket refills";
  // Counted in the log at once: the first 401 and the first 429 each have a line.
  bool logged_429 = false;
  for (const std::string& line : log())
    logged_429 = logged_429 || (line.find("status=429") != std::string::npos &&
                                line.find("refused_total=1") != std::string::npos);
  EXPECT_TRUE(logged_429) << "the first 429 is logged when it is answered";
  // The guesser's own right token is not held back.
  EXPECT_EQ(http("POST", base_ + "/admin/drain", "", "Bearer right").status, 200);
  // Another client (another address) still gets a plain 401, with no wait.
  const int other = connectFrom("127.0.0.2", port_);
  ASSERT_GE(other, 0);
  fds_.push_back(other);
  sendAll(other, "POST /admin/drain HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer nope\r\n"
                 "Content-Length: 0\r\n\r\n");
  EXPECT_THAT(readUntil(other, "\r\n\r\n", milliseconds(3000)), HasSubstr("HTTP/1.1 401"));
  // The 429 says when to come back; one refill later, one more 401.
  const int again = connectTo(port_);
  ASSERT_GE(again, 0);
  fds_.push_back(again);
  sendAll(again, "POST /admin/drain HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer nope\r\n"
                 "Content-Length: 0\r\n\r\n");
  const std::string head = readUntil(again, "\r\n\r\n", milliseconds(3000));
  EXPECT_THAT(head, HasSubstr("HTTP/1.1 429"));
  EXPECT_THAT(head, HasSubstr("Retry-After: 6"));
  clock_.advance(std::chrono::seconds(6));
  EXPECT_EQ(http("POST", base_ + "/admin/drain", "", "Bearer guess-50").status, 401);
  EXPECT_EQ(http("POST", base_ + "/admin/drain", "", "Bearer guess-51").status, 429);
  // Without a token there is nothing to guess: still 401, not counted.
  EXPECT_EQ(http("POST", base_ + "/admin/drain").status, 401);
}

// A guesser that ignores the 429 and keeps sending: each 429 in a row is
// held back longer (here 1 ms, 2 ms, then 3 ms each, small for the test's
// sake; 100 ms doubling to 2 s by default), so 2,000 wrong tokens take at
// least the sum of those delays. Without it they took 0.59 s.
TEST_F(AdminListenerTest, AGuesserIgnoring429IsHeldBackLongerForEachOneInARow) {
  AdminServerOptions o;
  o.token = "right";
  o.wrong_token_burst = 10;
  o.wrong_token_refill = std::chrono::seconds(6);  // the stepped clock stands still: no refill
  o.wrong_token_delay_first = milliseconds(1);
  o.wrong_token_delay_max = milliseconds(3);
  start(std::move(o));
  const auto t0 = Clock::now();
  int refused = 0, slowed = 0;
  for (int i = 0; i < 2000; ++i) {
    const long status = http("POST", base_ + "/admin/drain", "", "Bearer guess-" + std::to_string(i)).status;
    refused += status == 401;
    slowed += status == 429;
  }
  const double took_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  EXPECT_EQ(refused, 10);
  EXPECT_EQ(slowed, 1990);
  // 1 + 2 + 3 * 1988 ms: the designed least, whatever the machine's speed.
  EXPECT_GE(took_ms, 1.0 + 2.0 + 3.0 * 1988) << "each 429 is answered only after its delay";
  // Counted in the log at once: the first 429 has its line when it is answered.
  bool logged_429 = false;
  for (const std::string& line : log())
    logged_429 = logged_429 ||
                 (line.find("status=429") != std::string::npos && line.find("refused_total=1") != std::string::npos);
  EXPECT_TRUE(logged_429);
}

// While a guesser's 429 is held back, the listener goes on: a right token on
// another connection of the same address, and /healthz, are answered before
// it, and the held one is still answered (429, on its own connection) later.
TEST_F(AdminListenerTest, AHeld429BlocksNeitherTheListenerNorARightTokenOnAnotherConnection) {
  AdminServerOptions o;
  o.token = "right";
  o.wrong_token_burst = 1;
  o.wrong_token_refill = std::chrono::seconds(6);
  o.wrong_token_delay_first = milliseconds(2500);
  o.wrong_token_delay_max = milliseconds(2500);
  start(std::move(o));
  ASSERT_EQ(http("POST", base_ + "/admin/drain", "", "Bearer guess-0").status, 401);
  const int guesser = connectTo(port_);
  ASSERT_GE(guesser, 0);
  fds_.push_back(guesser);
  sendAll(guesser,
          "POST /admin/drain HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer guess-1\r\n"
          "Content-Length: 0\r\n\r\n");
  // The guesser's request is in once its 429 is counted (the log line comes
  // when the answer is decided, before it is held).
  const auto until = Clock::now() + std::chrono::seconds(3);
  const auto counted = [&] {
    for (const std::string& line : log())
      if (line.find("status=429") != std::string::npos) return true;
    return false;
  };
  while (!counted() && Clock::now() < until) std::this_thread::sleep_for(milliseconds(5));
  ASSERT_TRUE(counted());
  EXPECT_EQ(http("GET", base_ + "/healthz").status, 200);
  EXPECT_EQ(http("POST", base_ + "/admin/drain", "", "Bearer right").status, 200) << "a right token is never held";
  EXPECT_EQ(readUntil(guesser, "\r\n\r\n", milliseconds(300)), "") << "the 429 is still held meanwhile";
  EXPECT_THAT(readUntil(guesser, "\r\n\r\n", milliseconds(5000)), HasSubstr("HTTP/1.1 429"))
      << "and answered after its delay, the connection kept";
}

TEST_F(AdminListenerTest, EveryAnswerCarriesAContentSecurityPolicy) {
  start();
  const int fd = connectTo(port_);
  fds_.push_back(fd);
  sendAll(fd, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  const std::string got = readUntil(fd, "ok\n", milliseconds(2000));
  EXPECT_THAT(got, HasSubstr("Content-Security-Policy: default-src 'none'; script-src 'self'"));
  EXPECT_THAT(got, HasSubstr("X-Content-Type-Options: nosniff"));
  EXPECT_THAT(got, HasSubstr("Referrer-Policy: no-referrer"));
  // The event stream's answer too (its headers are written by another path).
  const int stream = connectTo(port_);
  fds_.push_back(stream);
  sendAll(stream, "GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  const std::string head = readUntil(stream, "\r\n\r\n", milliseconds(2000));
  EXPECT_THAT(head, HasSubstr("text/event-stream"));
  EXPECT_THAT(head, HasSubstr("Content-Security-Policy: default-src 'none'; script-src 'self'"));
  EXPECT_THAT(head, HasSubstr("X-Content-Type-Options: nosniff"));
  EXPECT_THAT(head, HasSubstr("Referrer-Policy: no-referrer"));
}

TEST_F(AdminListenerTest, AHostThatDoesNotNameTheListenerIsRefused) {
  AdminServerOptions o;
  o.allowed_hosts = {"pacer.internal"};
  start(std::move(o));
  const std::string port = std::to_string(port_);
  EXPECT_EQ(http("GET", base_ + "/healthz", "", "", 3000, "attacker.example:" + port).status, 403)
      << "a rebinding page's name";
  EXPECT_EQ(http("GET", base_ + "/metrics", "", "", 3000, "attacker.example:" + port).status, 403);
  EXPECT_EQ(http("GET", base_ + "/events", "", "", 3000, "attacker.example").status, 403);
  EXPECT_EQ(http("GET", base_ + "/healthz", "", "", 3000, "127.0.0.1:" + port).status, 200);
  EXPECT_EQ(http("GET", base_ + "/healthz", "", "", 3000, "localhost:" + port).status, 200);
  EXPECT_EQ(http("GET", base_ + "/healthz", "", "", 3000, "[::1]:" + port).status, 200);
  EXPECT_EQ(http("GET", base_ + "/healthz", "", "", 3000, "PACER.internal:" + port).status, 200) << "configured";
  bool logged = false;
  for (const std::string& line : log()) logged = logged || line.find("status=403") != std::string::npos;
  EXPECT_TRUE(logged) << "a refused Host is logged";
}

TEST_F(AdminListenerTest, ReadsNeedTheTokenWhenAskedAndTheScrapeTokenReadsOnlyMetrics) {
  AdminServerOptions o;
  o.token = "admin-secret";
  o.scrape_token = "scrape-secret";
  o.reads_need_token = true;
  start(std::move(o));
  EXPECT_EQ(http("GET", base_ + "/metrics").status, 401);
  EXPECT_EQ(http("GET", base_ + "/metrics", "", "Bearer wrong").status, 401);
  // Past the token (no snapshot published here: 503 from /metrics itself).
  EXPECT_NE(http("GET", base_ + "/metrics", "", "Bearer scrape-secret").status, 401);
  EXPECT_NE(http("GET", base_ + "/metrics", "", "Bearer admin-secret").status, 401);
  EXPECT_EQ(http("GET", base_ + "/api/v1/state").status, 401);
  EXPECT_EQ(http("GET", base_ + "/api/v1/state", "", "Bearer scrape-secret").status, 401)
      << "the scrape token reads /metrics only";
  EXPECT_EQ(http("GET", base_ + "/healthz").status, 200) << "probes stay open";
  EXPECT_EQ(http("GET", base_ + "/readyz").status, http("GET", base_ + "/readyz", "", "Bearer admin-secret").status);
  // The stream too: refused without, open with the token.
  const int fd = connectTo(port_);
  fds_.push_back(fd);
  sendAll(fd, "GET /api/v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  EXPECT_THAT(readUntil(fd, "\r\n\r\n", milliseconds(3000)), HasSubstr("401"));
  const int ok = connectTo(port_);
  fds_.push_back(ok);
  sendAll(ok, "GET /api/v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer admin-secret\r\n\r\n");
  EXPECT_THAT(readUntil(ok, "retry:", milliseconds(3000)), HasSubstr("200 OK"));
  // Refused reads are counted in the log (one line a second per status).
  const std::vector<std::string> lines = log();
  ASSERT_FALSE(lines.empty());
  EXPECT_THAT(lines.front(), HasSubstr("event=admin_request method=GET path=/metrics status=401"));
  EXPECT_THAT(lines.front(), HasSubstr("refused_total=1"));
  clock_.advance(milliseconds(1100));
  EXPECT_EQ(http("GET", base_ + "/api/v1/top").status, 401);
  EXPECT_THAT(log().back(), HasSubstr("refused_total=6")) << "every refusal counted, logged or not";
}

TEST_F(AdminListenerTest, WithoutTheOptionReadsNeedNoToken) {
  AdminServerOptions o;
  o.token = "admin-secret";
  start(std::move(o));
  EXPECT_NE(http("GET", base_ + "/metrics").status, 401);
}

}  // namespace
}  // namespace pacer::admin
