#include "apns_handler.h"

#include <gtest/gtest.h>

#include <regex>

#include "jwt_test_util.h"

namespace pacer::fake {
namespace {

constexpr std::int64_t kT0 = 1'800'000'000;  // wall seconds of the first request

class ApnsHandlerTest : public ::testing::Test {
 protected:
  ApnsHandlerTest()
      : key_(testing::makeEcKey()),
        handler_(testing::publicOnly(key_.get()), ApnsRules{"KEY1", "TEAM1", 3600, 1200}, policy()) {}

  static PolicyOptions policy() {
    PolicyOptions p;
    p.window = 3;
    p.invalid_tokens.insert("dead01");
    return p;
  }
  std::string jwt(std::int64_t iat, const std::string& kid = "KEY1", const std::string& iss = "TEAM1") {
    return testing::signJwt(key_.get(), "ES256", {{"kid", kid}}, {{"iss", iss}, {"iat", iat}});
  }
  PushRequest request(const std::string& token, const std::string& provider_token) {
    PushRequest r;
    r.method = "POST";
    r.path = "/3/device/" + token;
    r.authorization = "bearer " + provider_token;
    r.apns_topic = "com.example";
    r.body = R"({"aps":{"alert":"x"}})";
    return r;
  }
  // Seconds after kT0; monotonic time moves with it.
  static PushNow at(double s) {
    const auto ns = static_cast<std::int64_t>(s * 1e9);
    return PushNow{monoAt(std::chrono::nanoseconds(ns)), kT0 * 1000000 + ns / 1000};
  }
  static std::string reason(const Decision& d) { return nlohmann::json::parse(d.response.body)["reason"]; }

  PublicKey key_;
  ApnsHandler handler_;
};

TEST_F(ApnsHandlerTest, AcceptsAGoodRequestAndEchoesOrMakesTheApnsId) {
  const std::string t = jwt(kT0);  // ES256 signatures differ each time: one token, reused
  auto r = request("aa01", t);
  r.apns_id = "123E4567-E89B-12D3-A456-426614174000";
  auto d = handler_.handle(r, at(0));
  EXPECT_EQ(d.outcome, Outcome::kAccepted);
  EXPECT_EQ(d.response.status, 200);
  EXPECT_EQ(d.id, r.apns_id);
  EXPECT_EQ(d.token, "aa01");
  EXPECT_EQ(d.scope, "com.example");
  ASSERT_EQ(d.response.headers.size(), 1u);
  EXPECT_EQ(d.response.headers[0].second, r.apns_id);
  d = handler_.handle(request("aa01", t), at(0.1));
  EXPECT_TRUE(std::regex_match(d.id, std::regex("[0-9A-F]{8}-[0-9A-F]{4}-4[0-9A-F]{3}-[89AB][0-9A-F]{3}-[0-9A-F]{12}")))
      << d.id;
}

TEST_F(ApnsHandlerTest, AnAcceptedRequestKeepsItsApnsExpirationForTheRecord) {
  const std::string t = jwt(kT0);
  auto r = request("aa01", t);
  r.apns_expiration = "1800000600";
  EXPECT_EQ(handler_.handle(r, at(0)).apns_expiration, "1800000600");
  EXPECT_EQ(handler_.handle(request("aa01", t), at(0.1)).apns_expiration, "");  // none sent, none recorded
}

TEST_F(ApnsHandlerTest, RefusesBadProviderTokens) {
  auto r = request("aa01", jwt(kT0));
  r.authorization.clear();
  EXPECT_EQ(reason(handler_.handle(r, at(0))), "MissingProviderToken");
  auto other = testing::makeEcKey();
  r.authorization =
      "bearer " + testing::signJwt(other.get(), "ES256", {{"kid", "KEY1"}}, {{"iss", "TEAM1"}, {"iat", kT0}});
  auto d = handler_.handle(r, at(0));
  EXPECT_EQ(d.response.status, 403);
  EXPECT_EQ(d.outcome, Outcome::kAuthFailure);
  EXPECT_EQ(reason(d), "InvalidProviderToken");
  EXPECT_EQ(reason(handler_.handle(request("aa01", jwt(kT0, "KEY2")), at(0))), "InvalidProviderToken");
  EXPECT_EQ(reason(handler_.handle(request("aa01", jwt(kT0, "KEY1", "TEAM2")), at(0))), "InvalidProviderToken");
  EXPECT_EQ(reason(handler_.handle(request("aa01", "not.a.jwt"), at(0))), "InvalidProviderToken");
  // Fields of the wrong type are a bad token, not a crash.
  EXPECT_EQ(
      reason(handler_.handle(
          request("aa01", testing::signJwt(key_.get(), "ES256", {{"kid", 7}}, {{"iss", {1}}, {"iat", "x"}})), at(0))),
      "InvalidProviderToken");
  d = handler_.handle(request("aa01", jwt(kT0 - 3601)), at(0));
  EXPECT_EQ(d.response.status, 403);
  EXPECT_EQ(reason(d), "ExpiredProviderToken");
}

TEST_F(ApnsHandlerTest, AProviderTokenExpiresAnHourAfterItsIat) {
  const std::string t = jwt(kT0);
  EXPECT_EQ(handler_.handle(request("aa01", t), at(3600)).outcome, Outcome::kAccepted);
  EXPECT_EQ(reason(handler_.handle(request("aa01", t), at(3601))), "ExpiredProviderToken");
}

TEST_F(ApnsHandlerTest, ANewProviderTokenWithinTwentyMinutesOfTheLastIsRefused) {
  const std::string first = jwt(kT0);
  EXPECT_EQ(handler_.handle(request("aa01", first), at(0)).outcome, Outcome::kAccepted);
  auto d = handler_.handle(request("aa01", jwt(kT0 + 600)), at(600));
  EXPECT_EQ(d.response.status, 429);
  EXPECT_EQ(reason(d), "TooManyProviderTokenUpdates");
  // The old token still works; a new one 20 minutes after the last new one is taken.
  EXPECT_EQ(handler_.handle(request("aa01", first), at(601)).outcome, Outcome::kAccepted);
  EXPECT_EQ(handler_.handle(request("aa01", jwt(kT0 + 1200)), at(1200)).outcome, Outcome::kAccepted);
}

TEST_F(ApnsHandlerTest, ClassifiesMalformedRequests) {
  const std::string t = jwt(kT0);
  auto r = request("aa01", t);
  r.path = "/3/device/";
  EXPECT_EQ(handler_.handle(r, at(0)).response.status, 404);
  r = request("aa01", t);
  r.method = "GET";
  EXPECT_EQ(handler_.handle(r, at(0)).response.status, 405);
  r = request("aa01", t);
  r.apns_topic.clear();
  EXPECT_EQ(reason(handler_.handle(r, at(0))), "MissingTopic");
  r = request("aa01", t);
  r.body.clear();
  EXPECT_EQ(reason(handler_.handle(r, at(0))), "PayloadEmpty");
  r = request("aa01", t);
  r.body.assign(4097, 'x');
  auto d = handler_.handle(r, at(0));
  EXPECT_EQ(d.response.status, 413);
  EXPECT_EQ(d.outcome, Outcome::kBadRequest);
}

TEST_F(ApnsHandlerTest, UnregisteredTokensGet410WithATimestampAndTheWindowThrottles) {
  const std::string t = jwt(kT0);
  auto d = handler_.handle(request("dead01", t), at(0.5));
  EXPECT_EQ(d.outcome, Outcome::kInvalid);
  EXPECT_EQ(d.response.status, 410);
  EXPECT_EQ(nlohmann::json::parse(d.response.body)["timestamp"], (kT0 * 1000) + 500);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(handler_.handle(request("aa01", t), at(1 + i * 0.1)).outcome, Outcome::kAccepted);
  d = handler_.handle(request("aa01", t), at(1.9));
  EXPECT_EQ(d.outcome, Outcome::kThrottled);
  EXPECT_EQ(d.response.status, 429);
  EXPECT_EQ(reason(d), "TooManyRequests");
  EXPECT_EQ(handler_.handle(request("aa01", t), at(2.0)).outcome, Outcome::kAccepted);
  EXPECT_EQ(handler_.busiest(), 3u);
}

// --hot-token: that one device gets its own rate; above it a per-token 429
// (no retry-after), while every other token goes on through the window.
TEST_F(ApnsHandlerTest, TheHotTokenIsThrottledAloneAtItsOwnRate) {
  PolicyOptions p;
  p.hot_token = "bb02";
  p.hot_token_rate = 2;
  ApnsHandler h(testing::publicOnly(key_.get()), ApnsRules{"KEY1", "TEAM1", 3600, 1200}, p);
  const std::string t = jwt(kT0);
  EXPECT_EQ(h.handle(request("bb02", t), at(0.1)).outcome, Outcome::kAccepted);
  EXPECT_EQ(h.handle(request("bb02", t), at(0.2)).outcome, Outcome::kAccepted);
  Decision d = h.handle(request("bb02", t), at(0.3));
  EXPECT_EQ(d.outcome, Outcome::kThrottled);
  EXPECT_TRUE(d.per_token);
  EXPECT_EQ(d.response.status, 429);
  EXPECT_EQ(reason(d), "TooManyRequests");
  for (int i = 0; i < 50; ++i) {
    d = h.handle(request("aa" + std::to_string(10 + i), t), at(0.3 + i * 0.01));
    EXPECT_EQ(d.outcome, Outcome::kAccepted) << "other tokens are not held back";
    EXPECT_FALSE(d.per_token);
  }
  EXPECT_EQ(h.handle(request("bb02", t), at(1.15)).outcome, Outcome::kAccepted) << "a second after the first";
  EXPECT_EQ(h.handle(request("bb02", t), at(1.16)).outcome, Outcome::kThrottled);
}

// --throttle-rate: a share of the requests answered TooManyRequests at
// random (no retry-after), at any rate; the rest go through the window.
TEST_F(ApnsHandlerTest, RandomThrottlesComeAtTheirShareWhateverTheRate) {
  PolicyOptions p;
  p.throttle_rate = 0.1;
  p.seed = 7;
  ApnsHandler h(testing::publicOnly(key_.get()), ApnsRules{"KEY1", "TEAM1", 3600, 1200}, p);
  const std::string t = jwt(kT0);
  int throttled = 0;
  for (int i = 0; i < 2000; ++i) {
    const Decision d = h.handle(request("aa" + std::to_string(10 + i % 50), t), at(0.1 + i * 0.05));
    if (d.outcome != Outcome::kThrottled) continue;
    ++throttled;
    EXPECT_TRUE(d.noise);
    EXPECT_FALSE(d.per_token);
    EXPECT_EQ(reason(d), "TooManyRequests");
  }
  EXPECT_GT(throttled, 150) << "10% of 2,000, at 20 a second";
  EXPECT_LT(throttled, 250);
}

}  // namespace
}  // namespace pacer::fake
