#include <gtest/gtest.h>

#include <map>
#include <random>

#include "pacer/push/credentials.h"
#include "support/thrown.h"
#include "test_keys.h"

namespace pacer::push {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;
using Action = CredentialDecision::Action;

const WallTime kStart{std::chrono::milliseconds(1'700'000'000'000)};
constexpr std::string_view kGrant = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=";

std::string tokenAnswer(const std::string& token, int expires_in) {
  return nlohmann::json{{"access_token", token}, {"expires_in", expires_in}, {"token_type", "Bearer"}}.dump();
}

class OAuthTokenCacheTest : public ::testing::Test {
 protected:
  ServiceAccount account() {
    return {"pacer@proj.iam.gserviceaccount.com", test::privatePem(pkey_.get()), "https://oauth2.googleapis.com/token",
            "proj"};
  }
  OAuthTokenCache make(OAuthOptions o = {}) { return OAuthTokenCache(account(), o); }
  // Fetches at `at`, answered with `token` valid for `expires_in` s.
  void fetch(OAuthTokenCache& c, WallTime at, const std::string& token, int expires_in = 3599) {
    ASSERT_TRUE(c.wantsFetch(at));
    c.startFetch(at);
    ASSERT_TRUE(c.onFetchAnswer(at, 200, tokenAnswer(token, expires_in)).ok);
  }
  test::PkeyPtr pkey_ = test::makeRsaKey(2048);
};

TEST_F(OAuthTokenCacheTest, TheRequestIsAJwtBearerGrantWithAVerifiableAssertion) {
  OAuthTokenCache cache = make();
  ASSERT_TRUE(cache.wantsFetch(kStart));
  EXPECT_FALSE(cache.usable(kStart));
  const TokenRequest r = cache.startFetch(kStart);
  EXPECT_EQ(r.url, "https://oauth2.googleapis.com/token");
  EXPECT_EQ(r.content_type, "application/x-www-form-urlencoded");
  ASSERT_EQ(r.body.rfind(kGrant, 0), 0u) << r.body;
  const std::string jwt = r.body.substr(kGrant.size());
  const auto a = jwt.find('.');
  const auto b = jwt.rfind('.');
  EXPECT_EQ(nlohmann::json::parse(base64UrlDecode(jwt.substr(0, a)).value()),
            (nlohmann::json{{"alg", "RS256"}, {"typ", "JWT"}}));
  EXPECT_EQ(nlohmann::json::parse(base64UrlDecode(jwt.substr(a + 1, b - a - 1)).value()),
            (nlohmann::json{{"iss", "pacer@proj.iam.gserviceaccount.com"},
                            {"scope", "https://www.googleapis.com/auth/firebase.messaging"},
                            {"aud", "https://oauth2.googleapis.com/token"},
                            {"iat", 1'700'000'000},
                            {"exp", 1'700'003'600}}));
  EXPECT_TRUE(test::verifySha256(pkey_.get(), jwt.substr(0, b), base64UrlDecode(jwt.substr(b + 1)).value()));
  EXPECT_FALSE(cache.wantsFetch(kStart)) << "one fetch at a time";
}

TEST_F(OAuthTokenCacheTest, ATokenLastsFromTheFetchStartAndIsRefetchedFiveMinutesEarly) {
  OAuthTokenCache cache = make();
  cache.startFetch(kStart);
  ASSERT_TRUE(cache.onFetchAnswer(kStart + seconds(10), 200, tokenAnswer("ya29.one", 3600)).ok);
  EXPECT_EQ(cache.accessToken(), "ya29.one");
  EXPECT_EQ(cache.expiresAt(), kStart + seconds(3600)) << "counted from the request, not the answer";
  EXPECT_TRUE(cache.usable(kStart + seconds(3599)));
  EXPECT_FALSE(cache.usable(kStart + seconds(3600)));
  EXPECT_FALSE(cache.wantsFetch(kStart + minutes(54) + seconds(59)));
  EXPECT_TRUE(cache.wantsFetch(kStart + minutes(55)));
  EXPECT_EQ(cache.nextFetchAt(), kStart + minutes(55));
}

TEST_F(OAuthTokenCacheTest, AShortLifetimeIsRefetchedAtItsHalfNotAfterItEnds) {
  OAuthTokenCache cache = make();
  fetch(cache, kStart, "short", 120);
  EXPECT_FALSE(cache.wantsFetch(kStart + seconds(59)));
  EXPECT_TRUE(cache.wantsFetch(kStart + seconds(60)));
}

TEST_F(OAuthTokenCacheTest, FailedFetchesBackOffDoublingUpToTheMaximum) {
  OAuthTokenCache cache = make({minutes(5), seconds(1), seconds(5)});
  WallTime now = kStart;
  const Nanos expected[] = {seconds(1), seconds(2), seconds(4), seconds(5), seconds(5)};
  for (Nanos wait : expected) {
    ASSERT_TRUE(cache.wantsFetch(now));
    cache.startFetch(now);
    cache.onFetchFailed(now);
    const auto w = std::chrono::duration_cast<std::chrono::milliseconds>(wait);
    EXPECT_FALSE(cache.wantsFetch(now + w - std::chrono::milliseconds(1)));
    EXPECT_EQ(cache.nextFetchAt(), now + w);
    now += w;
  }
  fetch(cache, now, "finally");
  cache.startFetch(now + minutes(55));
  cache.onFetchFailed(now + minutes(55));
  EXPECT_TRUE(cache.wantsFetch(now + minutes(55) + seconds(1))) << "a success resets the backoff";
  EXPECT_TRUE(cache.usable(now + minutes(55))) << "a failed refresh keeps the valid token";
}

TEST_F(OAuthTokenCacheTest, ErrorAnswersSayWhyWithoutATokenAndBackOff) {
  OAuthTokenCache cache = make();
  cache.startFetch(kStart);
  const FetchResult r =
      cache.onFetchAnswer(kStart, 400, R"({"error":"invalid_grant","error_description":"Invalid JWT Signature."})");
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.reason, "HTTP 400 invalid_grant: Invalid JWT Signature.");
  EXPECT_FALSE(cache.usable(kStart));
  EXPECT_FALSE(cache.wantsFetch(kStart));
  cache.startFetch(kStart + seconds(1));
  EXPECT_FALSE(cache.onFetchAnswer(kStart + seconds(1), 200, R"({"expires_in":3599})").ok);
  cache.startFetch(kStart + seconds(3));
  EXPECT_FALSE(cache.onFetchAnswer(kStart + seconds(3), 200, R"({"access_token":"x","expires_in":0})").ok);
  cache.startFetch(kStart + seconds(7));
  EXPECT_EQ(cache.onFetchAnswer(kStart + seconds(7), 503, "<html>").reason, "HTTP 503");
}

TEST_F(OAuthTokenCacheTest, A401DropsTheTokenAndFetchesOnceMoreThenBacksOff) {
  OAuthTokenCache cache = make();
  fetch(cache, kStart, "first");
  const WallTime t = kStart + minutes(10);
  EXPECT_EQ(cache.on401(t, "first").action, Action::kWaitForToken);
  EXPECT_FALSE(cache.usable(t));
  EXPECT_EQ(cache.on401(t, "first").action, Action::kWaitForToken) << "another in-flight 401 of the same token";
  fetch(cache, t, "second");
  EXPECT_EQ(cache.on401(t, "first").action, Action::kRetryNow) << "a newer token is there";
  const CredentialDecision d = cache.on401(t + seconds(1), "second");
  EXPECT_EQ(d.action, Action::kPause) << "the token fetched once more was refused too";
  EXPECT_EQ(d.pause_until, t + seconds(2));
  EXPECT_FALSE(cache.wantsFetch(t + seconds(1)));
  fetch(cache, t + seconds(2), "third");
  const CredentialDecision again = cache.on401(t + minutes(30), "third");
  EXPECT_EQ(again.action, Action::kPause) << "still following a 401: backs off rather than hammering the endpoint";
  EXPECT_EQ(again.pause_until, t + minutes(30) + seconds(2)) << "longer each time";
  fetch(cache, again.pause_until, "fourth");
  ASSERT_TRUE(cache.wantsFetch(kStart + minutes(100)));
  fetch(cache, kStart + minutes(100), "routine");
  EXPECT_EQ(cache.on401(kStart + minutes(101), "routine").action, Action::kWaitForToken)
      << "a token from a routine refresh gets its one refetch again";
}

TEST_F(OAuthTokenCacheTest, RefusesUnusableAccountsAndOptions) {
  ServiceAccount a = account();
  a.client_email.clear();
  EXPECT_THROW(OAuthTokenCache{a}, PushCredentialError);
  a = account();
  a.token_uri = "oauth2.googleapis.com/token";
  EXPECT_THROW(OAuthTokenCache{a}, PushCredentialError);
  a = account();
  a.private_key = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
  EXPECT_THROW(OAuthTokenCache{a}, PushCredentialError);
  EXPECT_THROW(make({minutes(5), Nanos{0}, seconds(1)}), InvalidError);
}

// 48 simulated hours: random send times, token fetches that take up to 5 s
// and sometimes fail or come back short-lived, and random 401s. No token is
// ever sent past the lifetime the endpoint gave it (counted from the
// request), one fetch at a time, and the provider is rarely without a token.
TEST_F(OAuthTokenCacheTest, PropertyNoTokenIsSentPastItsLifetime) {
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    std::mt19937_64 rng(seed);
    OAuthTokenCache cache = make();
    std::map<std::string, WallTime> valid_until;  // the test's own record
    WallTime now = kStart;
    bool in_flight = false;
    WallTime answer_at{}, started{};
    int n = 0;
    std::size_t sends = 0, waits = 0;
    while (now < kStart + std::chrono::hours(48)) {
      now += std::chrono::milliseconds(rng() % 60'000);
      if (in_flight && now >= answer_at) {
        in_flight = false;
        if (rng() % 10 == 0) {
          cache.onFetchAnswer(now, 500, R"({"error":"internal_failure"})");
        } else {
          const int expires_in = rng() % 4 == 0 ? 600 : 3599;
          const std::string token = "tok" + std::to_string(++n);
          ASSERT_TRUE(cache.onFetchAnswer(now, 200, tokenAnswer(token, expires_in)).ok);
          valid_until[token] = started + seconds(expires_in);
        }
      }
      if (cache.wantsFetch(now)) {
        ASSERT_FALSE(in_flight) << "two fetches at once";
        cache.startFetch(now);
        in_flight = true;
        started = now;
        answer_at = now + std::chrono::milliseconds(rng() % 5000);
      }
      if (!cache.usable(now)) {
        ++waits;
        continue;
      }
      const std::string& token = cache.accessToken();
      ASSERT_LT(now, valid_until.at(token)) << "seed " << seed;
      ++sends;
      if (rng() % 50 == 0) {
        const auto d = cache.on401(now, token);
        ASSERT_NE(d.action, Action::kRetryNow);
      }
    }
    EXPECT_GT(sends, 4000u);
    EXPECT_LT(waits * 10, sends) << "a valid token most of the time";
    EXPECT_GT(n, 48) << "tokens were renewed through the 48 h";
  }
}

TEST(ServiceAccountTest, ReadsTheFieldsAndDefaultsTheTokenUri) {
  const ServiceAccount a = parseServiceAccount(R"({"type":"service_account","project_id":"p1",
      "private_key":"-----BEGIN PRIVATE KEY-----\nABC\n-----END PRIVATE KEY-----\n",
      "client_email":"x@p1.iam.gserviceaccount.com"})");
  EXPECT_EQ(a.project_id, "p1");
  EXPECT_EQ(a.client_email, "x@p1.iam.gserviceaccount.com");
  EXPECT_EQ(a.private_key, "-----BEGIN PRIVATE KEY-----\nABC\n-----END PRIVATE KEY-----\n");
  EXPECT_EQ(a.token_uri, "https://oauth2.googleapis.com/token");
}

std::string errorOf(std::string_view json) {
  SCOPED_TRACE(json);
  return test_support::thrownBy<PushCredentialError>([&] { parseServiceAccount(json); });
}

TEST(ServiceAccountTest, ErrorsNameTheFieldAndNeverTheSecret) {
  EXPECT_EQ(errorOf(R"({"project_id":"p","private_key":"k"})"), "service account: no \"client_email\" field");
  EXPECT_EQ(errorOf(R"({"project_id":"p","client_email":"e","private_key":7})"),
            "service account: \"private_key\" must be a non-empty string");
  EXPECT_NE(errorOf(R"({"type":"authorized_user"})").find("service_account"), std::string::npos);
  EXPECT_EQ(errorOf("[1]"), "service account: the file is not a JSON object");
  const std::string secret = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC";
  const std::string msg = errorOf(R"({"private_key":")" + secret + "\n");
  EXPECT_EQ(msg, "service account: the file is not valid JSON");
  EXPECT_EQ(msg.find(secret.substr(0, 8)), std::string::npos);
}

}  // namespace
}  // namespace pacer::push
