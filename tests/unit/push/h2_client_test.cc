// H2ClientSession against an nghttp2 server session, both in memory: bytes
// pass between them through strings, time is simulated, nothing sleeps.
#include "pacer/push/h2_client.h"

#include <gtest/gtest.h>
#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace pacer::push {
namespace {

// A server that records requests, answers those it is told to, and counts
// the RST_STREAM frames it receives.
class TestServer {
 public:
  explicit TestServer(std::uint32_t max_streams) {
    nghttp2_session_callbacks* cb = nullptr;
    nghttp2_session_callbacks_new(&cb);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, onFrame);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, onClose);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, onData);
    nghttp2_session_server_new(&session_, cb, this);
    nghttp2_session_callbacks_del(cb);
    const nghttp2_settings_entry e[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, max_streams}};
    nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, e, 1);
  }
  ~TestServer() { nghttp2_session_del(session_); }

  void receive(const std::string& bytes) {
    ASSERT_GE(nghttp2_session_mem_recv(session_, reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()),
              0);
  }
  void send(std::string& out) {
    const std::uint8_t* data = nullptr;
    for (ssize_t n; (n = nghttp2_session_mem_send(session_, &data)) > 0;)
      out.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n));
  }
  // Answers stream `id` with `status` and `body` (no DATA frame when empty).
  void answer(std::int32_t id, int status, const std::string& body = {}) {
    bodies_[id] = body;
    status_text_[id] = std::to_string(status);
    static const std::string kStatus = ":status";
    nghttp2_nv nv{reinterpret_cast<std::uint8_t*>(const_cast<char*>(kStatus.data())),
                  reinterpret_cast<std::uint8_t*>(status_text_[id].data()), kStatus.size(), status_text_[id].size(),
                  NGHTTP2_NV_FLAG_NONE};
    nghttp2_data_provider dp;
    dp.source.ptr = this;
    dp.read_callback = readBody;
    nghttp2_submit_response(session_, id, &nv, 1, body.empty() ? nullptr : &dp);
  }
  void goaway(std::int32_t last_stream_id) {
    nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE, last_stream_id, NGHTTP2_NO_ERROR, nullptr, 0);
  }
  // Streams whose request arrived whole and that are not answered yet.
  std::vector<std::int32_t> takeReady() {
    std::vector<std::int32_t> r(ready_.begin(), ready_.end());
    ready_.clear();
    return r;
  }
  std::size_t resetsReceived() const { return resets_; }
  std::size_t maxOpen() const { return max_open_; }
  const std::map<std::int32_t, std::string>& requestBodies() const { return request_bodies_; }

 private:
  static int onFrame(nghttp2_session*, const nghttp2_frame* f, void* user) {
    auto* s = static_cast<TestServer*>(user);
    if (f->hd.type == NGHTTP2_RST_STREAM) ++s->resets_;
    if (f->hd.type == NGHTTP2_HEADERS && f->headers.cat == NGHTTP2_HCAT_REQUEST) {
      ++s->open_;
      s->max_open_ = std::max(s->max_open_, s->open_);
    }
    if ((f->hd.type == NGHTTP2_HEADERS || f->hd.type == NGHTTP2_DATA) && (f->hd.flags & NGHTTP2_FLAG_END_STREAM))
      s->ready_.insert(f->hd.stream_id);
    return 0;
  }
  static int onClose(nghttp2_session*, std::int32_t id, std::uint32_t, void* user) {
    auto* s = static_cast<TestServer*>(user);
    --s->open_;
    s->ready_.erase(id);
    return 0;
  }
  static int onData(nghttp2_session*, std::uint8_t, std::int32_t id, const std::uint8_t* d, std::size_t n,
                    void* user) {
    static_cast<TestServer*>(user)->request_bodies_[id].append(reinterpret_cast<const char*>(d), n);
    return 0;
  }
  static ssize_t readBody(nghttp2_session*, std::int32_t id, std::uint8_t* buf, std::size_t len, std::uint32_t* flags,
                          nghttp2_data_source* src, void*) {
    auto* s = static_cast<TestServer*>(src->ptr);
    std::string& b = s->bodies_[id];
    const std::size_t n = std::min(len, b.size());
    std::copy_n(b.data(), n, buf);
    b.erase(0, n);
    if (b.empty()) *flags |= NGHTTP2_DATA_FLAG_EOF;
    return static_cast<ssize_t>(n);
  }

  nghttp2_session* session_ = nullptr;
  std::set<std::int32_t> ready_;
  std::map<std::int32_t, std::string> bodies_;
  std::map<std::int32_t, std::string> status_text_;
  std::map<std::int32_t, std::string> request_bodies_;
  std::size_t resets_ = 0;
  std::size_t open_ = 0;
  std::size_t max_open_ = 0;
};

struct Pair {
  MonoTime now{std::chrono::seconds(1000)};
  H2ClientSession client;
  TestServer server;
  Pair(std::uint32_t server_streams, std::uint32_t client_streams = 1000)
      : client(options(client_streams), MonoTime{std::chrono::seconds(1000)}), server(server_streams) {}
  static H2ClientOptions options(std::uint32_t max_streams) {
    H2ClientOptions o;
    o.authority = "push.test";
    o.max_streams = max_streams;
    return o;
  }
  // Moves bytes both ways until neither side has any.
  void pump() {
    for (int i = 0; i < 1000; ++i) {
      std::string up, down;
      client.send(up, now);
      server.receive(up);
      server.send(down);
      client.receive(down, now);
      if (up.empty() && down.empty()) return;
    }
    FAIL() << "no quiescence";
  }
  H2Request request(std::uint64_t tag) {
    H2Request r;
    r.tag = tag;
    r.path = "/3/device/" + std::to_string(tag);
    r.headers = {{"apns-topic", "com.example"}};
    r.body = R"({"aps":{"alert":"hi"}})";
    return r;
  }
};

TEST(H2ClientSession, CompletedStreamsEndWithoutAnyReset) {
  Pair p(1000);
  for (std::uint64_t t = 1; t <= 3000; ++t) ASSERT_TRUE(p.client.submit(p.request(t)));
  std::vector<H2Answer> answers;
  std::vector<H2Failure> failures;
  for (int round = 0; round < 100 && answers.size() < 3000; ++round) {
    p.pump();
    // Mostly empty 200s (APNs' success), some 410s with a body.
    for (std::int32_t id : p.server.takeReady())
      p.server.answer(id, id % 7 == 0 ? 410 : 200, id % 7 == 0 ? R"({"reason":"Unregistered"})" : "");
    p.pump();
    p.client.takeAnswers(answers);
    p.client.takeFailures(failures);
  }
  EXPECT_TRUE(failures.empty());
  ASSERT_EQ(answers.size(), 3000u);
  std::set<std::uint64_t> tags;
  for (const H2Answer& a : answers) {
    tags.insert(a.tag);
    EXPECT_EQ(a.status, a.stream_id % 7 == 0 ? 410 : 200);
    EXPECT_EQ(a.body.empty(), a.stream_id % 7 != 0);
  }
  EXPECT_EQ(tags.size(), 3000u);
  EXPECT_EQ(p.server.resetsReceived(), 0u);
  EXPECT_EQ(p.client.resetsSent(), 0u);
  EXPECT_EQ(p.server.requestBodies().begin()->second, R"({"aps":{"alert":"hi"}})");
}

TEST(H2ClientSession, QueuesBeyondTheServersConcurrentStreams) {
  Pair p(10);
  for (std::uint64_t t = 1; t <= 95; ++t) ASSERT_TRUE(p.client.submit(p.request(t)));
  std::vector<H2Answer> answers;
  for (int round = 0; round < 50 && answers.size() < 95; ++round) {
    p.pump();
    EXPECT_LE(p.client.openStreams(), 10u);
    for (std::int32_t id : p.server.takeReady()) p.server.answer(id, 200);
    p.pump();
    p.client.takeAnswers(answers);
  }
  EXPECT_EQ(p.client.serverMaxStreams(), 10u);
  EXPECT_EQ(answers.size(), 95u);
  EXPECT_EQ(p.server.maxOpen(), 10u);  // used, and never above
  EXPECT_EQ(p.server.resetsReceived(), 0u);
}

TEST(H2ClientSession, OurOwnStreamCapAppliesWhenLower) {
  Pair p(1000, 4);
  for (std::uint64_t t = 1; t <= 20; ++t) ASSERT_TRUE(p.client.submit(p.request(t)));
  p.pump();
  EXPECT_EQ(p.client.openStreams(), 4u);
  EXPECT_EQ(p.client.queued(), 16u);
}

TEST(H2ClientSession, GoawayRetriesOnlyTheStreamsTheServerDidNotProcess) {
  Pair p(1000);
  for (std::uint64_t t = 1; t <= 20; ++t) ASSERT_TRUE(p.client.submit(p.request(t)));
  p.pump();
  std::vector<std::int32_t> ready = p.server.takeReady();
  ASSERT_EQ(ready.size(), 20u);
  std::sort(ready.begin(), ready.end());
  const std::int32_t last = ready[9];
  p.server.goaway(last);
  p.pump();
  EXPECT_TRUE(p.client.goingAway());
  EXPECT_FALSE(p.client.submit(p.request(99)));
  // The ten the server kept are answered after its GOAWAY.
  for (int i = 0; i < 10; ++i) p.server.answer(ready[i], 200);
  p.pump();
  std::vector<H2Answer> answers;
  std::vector<H2Failure> failures;
  p.client.takeAnswers(answers);
  p.client.takeFailures(failures);
  ASSERT_EQ(answers.size(), 10u);
  for (const H2Answer& a : answers) EXPECT_LE(a.stream_id, last);
  ASSERT_EQ(failures.size(), 10u);
  for (const H2Failure& f : failures) {
    EXPECT_EQ(f.kind, H2FailureKind::kNotProcessed) << f.reason;
    EXPECT_GT(f.stream_id, last);
  }
  EXPECT_EQ(p.server.resetsReceived(), 0u);
}

TEST(H2ClientSession, GoawayFailsQueuedRequestsAsNeverSent) {
  Pair p(5);
  for (std::uint64_t t = 1; t <= 12; ++t) ASSERT_TRUE(p.client.submit(p.request(t)));
  p.pump();
  std::vector<std::int32_t> ready = p.server.takeReady();
  ASSERT_EQ(ready.size(), 5u);
  // The answers and the GOAWAY arrive in one read: the answers free stream
  // slots (queued requests start) before the GOAWAY is seen, so those are
  // submitted to nghttp2 but never sent.
  for (std::int32_t id : ready) p.server.answer(id, 200);
  std::string down;
  p.server.send(down);
  p.server.goaway(*std::max_element(ready.begin(), ready.end()));
  p.server.send(down);
  p.client.receive(down, p.now);
  // The server closes at once (its streams are done), before the client
  // writes again: what nghttp2 holds unsent was still never sent.
  p.client.connectionLost("the server closed the connection");
  std::vector<H2Answer> answers;
  std::vector<H2Failure> failures;
  p.client.takeAnswers(answers);
  p.client.takeFailures(failures);
  EXPECT_EQ(answers.size(), 5u);
  ASSERT_EQ(failures.size(), 7u);
  for (const H2Failure& f : failures) EXPECT_EQ(f.kind, H2FailureKind::kNotProcessed) << f.reason;
}

TEST(H2ClientSession, PingsAfterSilenceAndDiesWithoutAnAck) {
  Pair p(100);
  p.pump();
  p.now += std::chrono::seconds(29);
  p.pump();
  EXPECT_EQ(p.client.pingsSent(), 0u);
  p.now += std::chrono::seconds(1);
  p.pump();  // the server answers the PING: alive
  EXPECT_EQ(p.client.pingsSent(), 1u);
  EXPECT_FALSE(p.client.dead());
  p.now += std::chrono::seconds(30);
  std::string up;
  p.client.send(up, p.now);  // a second PING goes out, and the server never sees it
  EXPECT_EQ(p.client.pingsSent(), 2u);
  p.now += std::chrono::milliseconds(9999);
  up.clear();
  p.client.send(up, p.now);
  EXPECT_FALSE(p.client.dead());
  p.now += std::chrono::milliseconds(1);
  p.client.send(up, p.now);
  EXPECT_TRUE(p.client.dead());
  EXPECT_NE(p.client.why().find("PING"), std::string::npos);
}

TEST(H2ClientSession, ALostConnectionFailsOpenStreamsAsLostAndQueuedAsNotSent) {
  Pair p(3);
  for (std::uint64_t t = 1; t <= 5; ++t) ASSERT_TRUE(p.client.submit(p.request(t)));
  p.pump();
  p.client.connectionLost("EOF");
  std::vector<H2Failure> failures;
  p.client.takeFailures(failures);
  ASSERT_EQ(failures.size(), 5u);
  EXPECT_EQ(std::count_if(failures.begin(), failures.end(),
                          [](const H2Failure& f) { return f.kind == H2FailureKind::kLost; }),
            3);
  EXPECT_EQ(std::count_if(failures.begin(), failures.end(),
                          [](const H2Failure& f) { return f.kind == H2FailureKind::kNotProcessed; }),
            2);
  EXPECT_TRUE(p.client.dead());
  EXPECT_FALSE(p.client.submit(p.request(9)));
}

TEST(H2ClientSession, CancelResetsThatStreamOnly) {
  Pair p(100);
  for (std::uint64_t t = 1; t <= 3; ++t) ASSERT_TRUE(p.client.submit(p.request(t)));
  p.pump();
  ASSERT_TRUE(p.client.cancel(2, "timeout after 10 ms"));
  EXPECT_FALSE(p.client.cancel(77, "unknown"));
  p.pump();
  for (std::int32_t id : p.server.takeReady()) p.server.answer(id, 200);
  p.pump();
  std::vector<H2Answer> answers;
  std::vector<H2Failure> failures;
  p.client.takeAnswers(answers);
  p.client.takeFailures(failures);
  EXPECT_EQ(answers.size(), 2u);
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(failures[0].tag, 2u);
  EXPECT_EQ(failures[0].kind, H2FailureKind::kReset);
  EXPECT_EQ(failures[0].reason, "timeout after 10 ms");
  EXPECT_EQ(p.server.resetsReceived(), 1u);
  EXPECT_EQ(p.client.resetsSent(), 1u);
}

TEST(H2ClientSession, GarbageFromTheServerKillsTheSession) {
  Pair p(100);
  p.client.submit(p.request(1));
  std::string up;
  p.client.send(up, p.now);
  p.client.receive("this is not HTTP/2 at all, not even a frame header", p.now);
  up.clear();
  p.client.send(up, p.now);
  EXPECT_TRUE(p.client.dead() || p.client.goingAway());
}

}  // namespace
}  // namespace pacer::push
