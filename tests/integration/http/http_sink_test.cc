// The HTTP sink against pacer-fake-provider, over real HTTP on loopback.
#include "pacer/sinks/http_sink.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>

#include "pacer/fakes/fake_provider.h"

namespace pacer::sink {
namespace {

using ::testing::HasSubstr;
using std::chrono::milliseconds;
using std::chrono::seconds;

Message msg(std::string id, std::string campaign = "promo", std::string payload = "{\"text\":\"hi\"}") {
  Message m;
  m.id = std::move(id);
  m.campaign = std::move(campaign);
  m.recipient = "+15550100";
  m.payload = std::move(payload);
  return m;
}

class HttpSinkTest : public ::testing::Test {
 protected:
  void startProvider(fake::FakeProviderOptions o = {}) {
    provider_ = std::make_unique<fake::FakeProvider>(o);
    port_ = provider_->start();
  }

  SinkInterfacePtr sink(std::vector<std::pair<std::string, std::string>> headers = {}, milliseconds timeout = milliseconds(5000),
                        std::size_t max_in_flight = 16) {
    HttpSinkOptions o;
    o.url = "http://127.0.0.1:" + std::to_string(port_) + "/send/{recipient}";
    o.headers = std::move(headers);
    o.total_timeout = timeout;
    o.max_in_flight = max_in_flight;
    return makeHttpSink(o);
  }

  // Polls until `n` results are in or the deadline passes.
  static std::vector<SendResult> collect(SinkInterface& s, std::size_t n, seconds deadline = seconds(20)) {
    std::vector<SendResult> out;
    const auto end = std::chrono::steady_clock::now() + deadline;
    while (out.size() < n && std::chrono::steady_clock::now() < end) {
      s.poll(out);
      if (out.size() < n) s.wait(milliseconds(50));
    }
    return out;
  }

  SendResult one(std::vector<std::pair<std::string, std::string>> headers, milliseconds timeout = milliseconds(5000)) {
    auto s = sink(std::move(headers), timeout);
    EXPECT_TRUE(s->submit(msg("m-1"), 42));
    auto r = collect(*s, 1);
    EXPECT_EQ(r.size(), 1u);
    return r.empty() ? SendResult{} : r[0];
  }

  std::unique_ptr<fake::FakeProvider> provider_;
  int port_ = 0;
};

TEST_F(HttpSinkTest, TwoHundredIsDeliveredWithTheContractHeaders) {
  startProvider();
  auto s = sink({{"Authorization", "Bearer secret"}}, milliseconds(5000), 64);
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(s->submit(msg("id-" + std::to_string(i % 40), i % 2 ? "a" : "b"), i));
  EXPECT_EQ(s->inFlight(), 50u);
  const auto results = collect(*s, 50);
  ASSERT_EQ(results.size(), 50u);
  for (const SendResult& r : results) {
    EXPECT_EQ(r.outcome, SendOutcome::kDelivered);
    EXPECT_EQ(r.status, 200);
  }
  const auto report = provider_->report();
  EXPECT_EQ(report["(all)"]["requests"], 50);
  EXPECT_EQ(report["(all)"]["distinct_keys"], 40);  // Idempotency-Key arrived
  EXPECT_EQ(report["(all)"]["duplicates"], 10);
  EXPECT_EQ(report["a"]["requests"], 25);  // Pacer-Campaign arrived
  EXPECT_EQ(s->inFlight(), 0u);
}

TEST_F(HttpSinkTest, AMessageDeadlineArrivesAsPacerExpiresAtAndNoneWithout) {
  startProvider();
  auto s = sink();
  Message with = msg("m-deadline");
  with.expires_at_ms = 1'795'707'000'250;
  ASSERT_TRUE(s->submit(with, 1));
  ASSERT_TRUE(s->submit(msg("m-none"), 2));
  ASSERT_EQ(collect(*s, 2).size(), 2u);
  ASSERT_TRUE(s->submit(msg("m-after"), 3));  // the handle reused: the header does not stick
  ASSERT_EQ(collect(*s, 1).size(), 1u);
  const auto path = std::filesystem::temp_directory_path() / ("http_sink_record_" + std::to_string(::getpid()));
  provider_->writeRecord(path.string());
  std::ifstream in(path);
  std::map<std::string, std::string> deadline_of;  // idempotency key -> the recorded header
  for (std::string at, campaign, key, status, expires; in >> at >> campaign >> key >> status >> expires;)
    deadline_of[key] = expires;
  std::filesystem::remove(path);
  EXPECT_EQ(deadline_of["m-deadline"], "2026-11-26T15:30:00.250Z");
  EXPECT_EQ(deadline_of["m-none"], "-");
  EXPECT_EQ(deadline_of["m-after"], "-");
}

TEST_F(HttpSinkTest, TooManyRequestsIsAThrottleWithRetryAfterInSeconds) {
  startProvider();
  const SendResult r = one({{"X-Fake-Status", "429"}, {"X-Fake-Retry-After", "7"}});
  EXPECT_EQ(r.ticket, 42u);
  EXPECT_EQ(r.outcome, SendOutcome::kThrottled);
  EXPECT_EQ(r.status, 429);
  EXPECT_EQ(r.retry_after, seconds(7));
}

TEST_F(HttpSinkTest, RetryAfterAsAnHttpDate) {
  fake::FakeProviderOptions o;
  o.quota_per_s = 1;
  o.quota_burst = 1;
  o.retry_after_s = 30;
  o.retry_after_as_date = true;
  startProvider(o);
  auto s = sink();
  ASSERT_TRUE(s->submit(msg("a"), 1));
  ASSERT_TRUE(s->submit(msg("b"), 2));
  const auto results = collect(*s, 2);
  ASSERT_EQ(results.size(), 2u);
  const SendResult& throttled = results[0].status == 429 ? results[0] : results[1];
  ASSERT_EQ(throttled.status, 429);
  EXPECT_EQ(throttled.outcome, SendOutcome::kThrottled);
  // An HTTP-date has one-second resolution: 29 to 31 s from now.
  EXPECT_GE(throttled.retry_after, seconds(29));
  EXPECT_LE(throttled.retry_after, seconds(31));
}

// 503 names a pause only with Retry-After; without one it is a fault like 500.
TEST_F(HttpSinkTest, ServiceUnavailableWithRetryAfterIsAThrottle) {
  startProvider();
  const SendResult r = one({{"X-Fake-Status", "503"}, {"X-Fake-Retry-After", "3"}});
  EXPECT_EQ(r.outcome, SendOutcome::kThrottled);
  EXPECT_EQ(r.retry_after, seconds(3));
}

TEST_F(HttpSinkTest, ServerErrorsWithoutRetryAfterAreFaults) {
  startProvider();
  for (const char* status : {"503", "500", "502", "408"}) {
    const SendResult r = one({{"X-Fake-Status", status}});
    EXPECT_EQ(r.outcome, SendOutcome::kFault) << status;
    EXPECT_EQ(r.status, std::atoi(status));
    EXPECT_THAT(r.reason, HasSubstr(std::string("HTTP ") + status));
  }
}

TEST_F(HttpSinkTest, OtherClientErrorsArePermanentWithTheReason) {
  startProvider();
  const SendResult r = one({{"X-Fake-Status", "400"}});
  EXPECT_EQ(r.outcome, SendOutcome::kPermanent);
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.reason, HasSubstr("HTTP 400: {\"error\":400}"));
}

TEST_F(HttpSinkTest, ADroppedConnectionIsAFault) {
  startProvider();
  const SendResult r = one({{"X-Fake-Close", "1"}});
  EXPECT_EQ(r.outcome, SendOutcome::kFault);
  EXPECT_EQ(r.status, 0);
  EXPECT_THAT(r.reason, HasSubstr("connection error"));
}

TEST_F(HttpSinkTest, ATimeoutIsAFaultThatSaysSo) {
  startProvider();
  const auto started = std::chrono::steady_clock::now();
  const SendResult r = one({{"X-Fake-Latency-Ms", "2000"}}, milliseconds(200));
  EXPECT_LT(std::chrono::steady_clock::now() - started, seconds(2));
  EXPECT_EQ(r.outcome, SendOutcome::kFault);
  EXPECT_THAT(r.reason, HasSubstr("timeout after 200 ms"));
}

// The answer's latency goes with the result (the adaptive rate watches it).
TEST_F(HttpSinkTest, EachResultCarriesItsLatency) {
  startProvider();
  const SendResult slow = one({{"X-Fake-Latency-Ms", "150"}});
  EXPECT_EQ(slow.outcome, SendOutcome::kDelivered);
  EXPECT_GE(slow.latency, milliseconds(150));
  EXPECT_LT(slow.latency, seconds(5));
  const SendResult fast = one({});
  EXPECT_GT(fast.latency, Nanos{0});
  EXPECT_LT(fast.latency, milliseconds(150));
}

TEST_F(HttpSinkTest, NobodyListeningIsAFault) {
  startProvider();
  provider_->stop();
  const SendResult r = one({});
  EXPECT_EQ(r.outcome, SendOutcome::kFault);
  EXPECT_THAT(r.reason, HasSubstr("connection error"));
}

TEST_F(HttpSinkTest, InFlightIsBounded) {
  startProvider();
  auto s = sink({{"X-Fake-Latency-Ms", "100"}}, milliseconds(5000), 4);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(s->submit(msg("m" + std::to_string(i)), i));
  EXPECT_FALSE(s->submit(msg("m4"), 4));
  EXPECT_EQ(s->inFlight(), 4u);
  const auto results = collect(*s, 4);
  EXPECT_EQ(results.size(), 4u);
  EXPECT_TRUE(s->submit(msg("m4"), 4));
  EXPECT_EQ(collect(*s, 1).size(), 1u);
}

TEST_F(HttpSinkTest, ProviderQuotaAnswersTooManyRequestsAboveIt) {
  fake::FakeProviderOptions o;
  o.quota_per_s = 10;
  o.quota_burst = 10;
  startProvider(o);
  auto s = sink({}, milliseconds(5000), 30);
  const auto started = std::chrono::steady_clock::now();
  for (int i = 0; i < 30; ++i) ASSERT_TRUE(s->submit(msg("q" + std::to_string(i)), i));
  const auto results = collect(*s, 30);
  const double elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ASSERT_EQ(results.size(), 30u);
  int delivered = 0, throttled = 0;
  for (const SendResult& r : results) {
    delivered += r.outcome == SendOutcome::kDelivered;
    throttled += r.status == 429;
  }
  // The burst of 10 goes through at once, plus what refilled meanwhile (10/s).
  EXPECT_GE(delivered, 10);
  EXPECT_LE(delivered, 10 + static_cast<int>(10 * elapsed_s) + 1);
  EXPECT_EQ(delivered + throttled, 30);
}


// A provider protocol plugged into the sink: it needs a credential from its
// own endpoint before any message goes, refuses a bad message without a
// request, and reads each answer itself.
class TokenFirstCodec final : public HttpCodec {
 public:
  explicit TokenFirstCodec(int port) : base_("http://127.0.0.1:" + std::to_string(port)) {}
  bool ready(WallTime, std::string& why) override {
    if (!token_) why = "waiting for a token";
    return token_;
  }
  bool ownRequest(WallTime, HttpRequest& out) override {
    if (token_) return false;
    ++token_requests;
    out.url = base_ + "/token";
    out.headers = {"Content-Type: application/x-www-form-urlencoded", "Pacer-Campaign: token"};
    out.body = "grant=x";
    return true;
  }
  void ownAnswer(int status, std::string_view, WallTime) override { token_ = status == 200; }
  bool build(const Message& m, WallTime, HttpRequest& out, SendResult& refused) override {
    if (m.payload.empty() || m.payload[0] != '{') {
      refused.outcome = SendOutcome::kPermanent;
      refused.reason = "payload is not a JSON object";
      return false;
    }
    out.url = base_ + "/push/" + m.recipient;
    out.headers = {"Content-Type: application/json", "Pacer-Campaign: " + m.campaign};
    if (m.recipient == "dead") out.headers.push_back("X-Fake-Status: 410");
    out.body = m.payload;
    return true;
  }
  SendResult classify(int status, std::string_view, const HeaderLookup&, const HttpRequest&, WallTime) override {
    SendResult r;
    r.status = status;
    if (status == 410) r.outcome = SendOutcome::kInvalidToken;
    return r;
  }
  int token_requests = 0;

 private:
  std::string base_;
  bool token_ = false;
};

TEST_F(HttpSinkTest, ACodecFetchesItsCredentialFirstThenBuildsAndReadsEveryRequest) {
  startProvider();
  auto codec = std::make_shared<TokenFirstCodec>(port_);
  HttpSinkOptions o;
  o.url = "http://127.0.0.1:" + std::to_string(port_);
  o.max_in_flight = 8;
  o.max_connections = 1;
  o.codec = codec;
  std::vector<std::string> logged;
  o.log = [&logged](std::string_view line) { logged.emplace_back(line); };
  auto s = makeHttpSink(o);
  EXPECT_FALSE(s->submit(msg("early"), 1));  // no credential yet: the message waits
  EXPECT_EQ(logged, std::vector<std::string>{"waiting for a token"});
  std::string why;
  const auto end = std::chrono::steady_clock::now() + seconds(20);
  std::vector<SendResult> none;
  while (!codec->ready(WallTime{}, why) && std::chrono::steady_clock::now() < end) {
    s->poll(none);
    s->wait(milliseconds(20));
  }
  ASSERT_TRUE(codec->ready(WallTime{}, why));
  EXPECT_TRUE(none.empty());  // the credential's own request is no message's result
  EXPECT_EQ(s->inFlight(), 0u);
  ASSERT_TRUE(s->submit(msg("bad", "promo", "not json"), 2));
  ASSERT_TRUE(s->submit([] { Message m = msg("dead-one"); m.recipient = "dead"; return m; }(), 3));
  ASSERT_TRUE(s->submit(msg("good"), 4));
  EXPECT_EQ(s->inFlight(), 3u);
  auto results = collect(*s, 3);
  ASSERT_EQ(results.size(), 3u);
  std::map<std::uint64_t, SendResult> by;
  for (auto& r : results) by[r.ticket] = r;
  EXPECT_EQ(by[2].outcome, SendOutcome::kPermanent);
  EXPECT_EQ(by[2].reason, "payload is not a JSON object");
  EXPECT_EQ(by[3].outcome, SendOutcome::kInvalidToken);
  EXPECT_EQ(by[4].outcome, SendOutcome::kDelivered);
  EXPECT_EQ(codec->token_requests, 1);
  const auto report = provider_->report();
  EXPECT_EQ(report["token"]["requests"], 1);
  EXPECT_EQ(report["promo"]["requests"], 2);  // the bad message never left
}

}  // namespace
}  // namespace pacer::sink
