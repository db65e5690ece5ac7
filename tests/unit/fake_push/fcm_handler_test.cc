#include "fcm_handler.h"

#include <gtest/gtest.h>

#include "jwt_test_util.h"

namespace pacer::fake {
namespace {

constexpr std::int64_t kT0 = 1'800'000'000;
constexpr const char* kAud = "https://127.0.0.1:8443/token";
constexpr const char* kSa = "sa@demo.iam.gserviceaccount.com";

class FcmHandlerTest : public ::testing::Test {
 protected:
  FcmHandlerTest()
      : key_(testing::makeRsaKey()), handler_(testing::publicOnly(key_.get()), FcmRules{kSa, {}, 600}, policy()) {
    handler_.onListening(8443);
  }
  static PolicyOptions policy() {
    PolicyOptions p;
    p.window = 2;
    p.invalid_tokens.insert("gone");
    return p;
  }
  static PushNow at(double s) {
    const auto ns = static_cast<std::int64_t>(s * 1e9);
    return PushNow{monoAt(std::chrono::nanoseconds(ns)), kT0 * 1000000 + ns / 1000};
  }
  std::string assertion(nlohmann::json claims) {
    nlohmann::json c = {{"iss", kSa}, {"aud", kAud}, {"iat", kT0}, {"exp", kT0 + 3600}};
    if (claims.is_object()) c.update(claims);
    return testing::signJwt(key_.get(), "RS256", {}, c);
  }
  static PushRequest tokenRequest(const std::string& assertion) {
    PushRequest r;
    r.method = "POST";
    r.path = "/token";
    r.body = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=" + assertion;
    return r;
  }
  static PushRequest sendRequest(const std::string& access, const std::string& device) {
    PushRequest r;
    r.method = "POST";
    r.path = "/v1/projects/demo/messages:send";
    r.authorization = "Bearer " + access;
    r.body = nlohmann::json{{"message", {{"token", device}}}}.dump();
    return r;
  }
  std::string accessToken(double s) {
    auto d = handler_.handle(tokenRequest(assertion({})), at(s));
    EXPECT_EQ(d.outcome, Outcome::kTokenIssued) << d.response.body;
    return nlohmann::json::parse(d.response.body)["access_token"];
  }
  static std::string status(const Decision& d) { return nlohmann::json::parse(d.response.body)["error"]["status"]; }

  PublicKey key_;
  FcmHandler handler_;
};

TEST(FormValueTest, FindsAndDecodesAFormField) {
  EXPECT_EQ(formValue("a=1&grant_type=urn%3Aietf+x&b=2", "grant_type"), "urn:ietf x");
  EXPECT_FALSE(formValue("a=1&b=2", "grant_type"));
  EXPECT_FALSE(formValue("grant_type=%4", "grant_type"));
}

TEST_F(FcmHandlerTest, IssuesAnAccessTokenForAGoodAssertion) {
  auto d = handler_.handle(tokenRequest(assertion({})), at(0));
  EXPECT_EQ(d.response.status, 200);
  auto j = nlohmann::json::parse(d.response.body);
  EXPECT_EQ(j["token_type"], "Bearer");
  EXPECT_EQ(j["expires_in"], 600);
  EXPECT_FALSE(j["access_token"].get<std::string>().empty());
}

TEST_F(FcmHandlerTest, RefusesBadAssertionsWithInvalidGrant) {
  auto other = testing::makeRsaKey();
  const std::vector<std::string> bad = {
      testing::signJwt(other.get(), "RS256", {}, {{"iss", kSa}, {"aud", kAud}, {"iat", kT0}, {"exp", kT0 + 60}}),
      assertion({{"aud", "https://oauth2.example/token"}}),
      assertion({{"iss", "someone@else"}}),
      assertion({{"exp", kT0 - 1}}),
      assertion({{"exp", kT0 + 7200}}),  // longer than an hour
      "garbage"};
  for (const auto& a : bad) {
    auto d = handler_.handle(tokenRequest(a), at(0));
    EXPECT_EQ(d.response.status, 400) << a;
    EXPECT_EQ(d.outcome, Outcome::kAuthFailure);
    EXPECT_EQ(nlohmann::json::parse(d.response.body)["error"], "invalid_grant");
  }
  // The default audience also takes localhost.
  EXPECT_EQ(handler_.handle(tokenRequest(assertion({{"aud", "https://localhost:8443/token"}})), at(0)).outcome,
            Outcome::kTokenIssued);
}

TEST_F(FcmHandlerTest, AnAcceptedMessageKeepsItsLifetimeForTheRecord) {
  const std::string access = accessToken(0);
  auto r = sendRequest(access, "dev1");
  r.body = nlohmann::json{{"message",
                           {{"token", "dev1"},
                            {"android", {{"ttl", "42s"}}},
                            {"apns", {{"headers", {{"apns-expiration", "1800000042"}}}}}}}}
               .dump();
  auto d = handler_.handle(r, at(1));
  ASSERT_EQ(d.outcome, Outcome::kAccepted);
  EXPECT_EQ(d.android_ttl, "42s");
  EXPECT_EQ(d.apns_expiration, "1800000042");
  // None given, or not a string (FCM's API has both as strings): nothing recorded.
  r.body = nlohmann::json{{"message", {{"token", "dev2"}, {"android", {{"ttl", 42}}}, {"apns", "x"}}}}.dump();
  d = handler_.handle(r, at(1.5));
  ASSERT_EQ(d.outcome, Outcome::kAccepted);
  EXPECT_EQ(d.android_ttl, "");
  EXPECT_EQ(d.apns_expiration, "");
}

TEST_F(FcmHandlerTest, SendNeedsAnIssuedUnexpiredToken) {
  const std::string access = accessToken(0);
  auto d = handler_.handle(sendRequest(access, "dev1"), at(1));
  EXPECT_EQ(d.outcome, Outcome::kAccepted);
  EXPECT_EQ(d.scope, "demo");
  EXPECT_EQ(nlohmann::json::parse(d.response.body)["name"], "projects/demo/messages/" + d.id);
  d = handler_.handle(sendRequest("made-up", "dev1"), at(1));
  EXPECT_EQ(d.response.status, 401);
  EXPECT_EQ(status(d), "UNAUTHENTICATED");
  EXPECT_EQ(handler_.handle(sendRequest(access, "dev1"), at(599)).outcome, Outcome::kAccepted);
  EXPECT_EQ(status(handler_.handle(sendRequest(access, "dev1"), at(600))), "UNAUTHENTICATED");  // ttl 600 s
}

TEST_F(FcmHandlerTest, ClassifiesBodiesUnregisteredTokensAndTheWindow) {
  const std::string access = accessToken(0);
  auto r = sendRequest(access, "dev1");
  r.body = R"({"message":{"topic":"news"}})";
  auto d = handler_.handle(r, at(1));
  EXPECT_EQ(d.response.status, 400);
  EXPECT_EQ(status(d), "INVALID_ARGUMENT");
  r.body = "not json";
  EXPECT_EQ(handler_.handle(r, at(1)).outcome, Outcome::kBadRequest);
  d = handler_.handle(sendRequest(access, "gone"), at(1));
  EXPECT_EQ(d.response.status, 404);
  EXPECT_EQ(nlohmann::json::parse(d.response.body)["error"]["details"][0]["errorCode"], "UNREGISTERED");
  EXPECT_EQ(handler_.handle(sendRequest(access, "a"), at(2.0)).outcome, Outcome::kAccepted);
  EXPECT_EQ(handler_.handle(sendRequest(access, "b"), at(2.5)).outcome, Outcome::kAccepted);
  d = handler_.handle(sendRequest(access, "c"), at(2.9));
  EXPECT_EQ(d.response.status, 429);
  EXPECT_EQ(status(d), "RESOURCE_EXHAUSTED");
  EXPECT_EQ(handler_.handle(sendRequest(access, "c"), at(3.0)).outcome, Outcome::kAccepted);
  PushRequest wrong = sendRequest(access, "a");
  wrong.path = "/v1/projects/demo/messages:list";
  EXPECT_EQ(handler_.handle(wrong, at(4)).response.status, 404);
}

}  // namespace
}  // namespace pacer::fake
