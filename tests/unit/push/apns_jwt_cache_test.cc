#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "key_impl.h"
#include "pacer/push/credentials.h"
#include "test_keys.h"

namespace pacer::push {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;
using Action = CredentialDecision::Action;

// 2023-11-14T22:13:20Z: an arbitrary wall-clock start.
const WallTime kStart{std::chrono::milliseconds(1'700'000'000'000)};

nlohmann::json claimsOf(const std::string& jwt) {
  const auto a = jwt.find('.');
  const auto b = jwt.find('.', a + 1);
  return nlohmann::json::parse(base64UrlDecode(jwt.substr(a + 1, b - a - 1)).value());
}

class ApnsJwtCacheTest : public ::testing::Test {
 protected:
  ApnsJwtCache make(Nanos refresh_after = minutes(40)) {
    return ApnsJwtCache({"TEAM123456", "KEY1234567", refresh_after},
                        EcPrivateKey::fromPem(test::privatePem(pkey_.get()), "APNs key"));
  }
  test::PkeyPtr pkey_ = test::makeEcKey("P-256");
};

TEST_F(ApnsJwtCacheTest, TheTokenNamesKeyTeamAndIssueTimeAndVerifies) {
  ApnsJwtCache cache = make();
  const std::string jwt = cache.token(kStart);
  const auto a = jwt.find('.');
  const auto b = jwt.rfind('.');
  EXPECT_EQ(nlohmann::json::parse(base64UrlDecode(jwt.substr(0, a)).value()),
            (nlohmann::json{{"alg", "ES256"}, {"kid", "KEY1234567"}}));
  EXPECT_EQ(claimsOf(jwt), (nlohmann::json{{"iss", "TEAM123456"}, {"iat", 1'700'000'000}}));
  const auto der = ecdsaRawToDer(base64UrlDecode(jwt.substr(b + 1)).value());
  EXPECT_TRUE(test::verifySha256(pkey_.get(), jwt.substr(0, b), der.value()));
}

TEST_F(ApnsJwtCacheTest, KeepsTheTokenUntilRefreshAfterThenMakesANewOne) {
  ApnsJwtCache cache = make(minutes(40));
  const std::string first = cache.token(kStart);
  EXPECT_EQ(cache.token(kStart + minutes(39) + seconds(59)), first);
  EXPECT_EQ(cache.tokensMade(), 1u);
  const std::string second = cache.token(kStart + minutes(40));
  EXPECT_NE(second, first);
  EXPECT_EQ(cache.tokensMade(), 2u);
  EXPECT_EQ(cache.issuedAt(), kStart + minutes(40));
  EXPECT_EQ(claimsOf(second)["iat"], 1'700'000'000 + 40 * 60);
}

TEST_F(ApnsJwtCacheTest, RefusesRefreshAfterOutsideTwentyToSixtyMinutes) {
  EXPECT_THROW(make(minutes(19) + seconds(59)), InvalidError);
  EXPECT_THROW(make(minutes(60)), InvalidError);
  EXPECT_NO_THROW(make(minutes(20)));
  EXPECT_NO_THROW(make(minutes(59)));
  auto pem = test::privatePem(pkey_.get());
  EXPECT_THROW(ApnsJwtCache({"", "KEY1234567"}, EcPrivateKey::fromPem(pem)), InvalidError);
  EXPECT_THROW(ApnsJwtCache({"TEAM", "KEY 1"}, EcPrivateKey::fromPem(pem)), InvalidError);
}

TEST_F(ApnsJwtCacheTest, ExpiredAnswerForAnOldEnoughTokenRefreshesAtOnce) {
  ApnsJwtCache cache = make();
  const std::string first = cache.token(kStart);
  const CredentialDecision d = cache.onExpiredProviderToken(kStart + minutes(20), first);
  EXPECT_EQ(d.action, Action::kRetryNow);
  EXPECT_NE(cache.token(kStart + minutes(20)), first);
  EXPECT_EQ(cache.tokensMade(), 2u);
}

TEST_F(ApnsJwtCacheTest, ExpiredAnswerForAYoungTokenPausesUntilTwentyMinutesAfterIt) {
  ApnsJwtCache cache = make();
  const std::string first = cache.token(kStart);
  const CredentialDecision d = cache.onExpiredProviderToken(kStart + minutes(5), first);
  EXPECT_EQ(d.action, Action::kPause);
  EXPECT_EQ(d.pause_until, kStart + minutes(20));
  EXPECT_FALSE(cache.usable(kStart + minutes(19)));
  EXPECT_EQ(cache.token(kStart + minutes(19)), first) << "no new token within 20 min";
  EXPECT_TRUE(cache.usable(kStart + minutes(20)));
  EXPECT_NE(cache.token(kStart + minutes(20)), first) << "the refused token is replaced at 20 min, not 40";
  EXPECT_TRUE(cache.usable(kStart + minutes(20)));
}

TEST_F(ApnsJwtCacheTest, ExpiredAnswerForAnOlderTokenRetriesWithTheCurrentOne) {
  ApnsJwtCache cache = make();
  const std::string first = cache.token(kStart);
  const std::string second = cache.token(kStart + minutes(40));
  const CredentialDecision d = cache.onExpiredProviderToken(kStart + minutes(41), first);
  EXPECT_EQ(d.action, Action::kRetryNow);
  EXPECT_EQ(cache.token(kStart + minutes(41)), second);
  EXPECT_EQ(cache.tokensMade(), 2u);
}

TEST_F(ApnsJwtCacheTest, AWallClockSteppingBackCountsAgeFromTheNewTime) {
  ApnsJwtCache cache = make();
  const std::string first = cache.token(kStart);
  EXPECT_EQ(cache.token(kStart - minutes(30)), first);
  EXPECT_EQ(cache.token(kStart + minutes(9)), first) << "40 min from the stepped-back time";
  EXPECT_NE(cache.token(kStart + minutes(10)), first);
}

// 48 simulated hours of sends at random times with random
// ExpiredProviderToken answers (for the current token and for older ones
// still in flight): every token sent is younger than 60 min by its own iat,
// and no two tokens are made less than 20 min apart.
TEST_F(ApnsJwtCacheTest, PropertyTokensStayFreshAndChangeAtMostEveryTwentyMinutes) {
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    std::mt19937_64 rng(seed);
    ApnsJwtCache cache = make(seed % 2 ? minutes(40) : minutes(55));
    WallTime now = kStart;
    std::vector<std::string> sent;  // recent tokens, some still "in flight"
    std::vector<WallTime> made;
    std::size_t sends = 0, pauses = 0;
    while (now < kStart + std::chrono::hours(48)) {
      // Mostly busy, sometimes idle for up to 2 h.
      const auto gap = rng() % 200 == 0 ? seconds(rng() % (2 * 3600)) : seconds(rng() % 300);
      now += gap;
      if (!cache.usable(now)) {
        ++pauses;
        continue;
      }
      const std::uint64_t before = cache.tokensMade();
      const std::string token = cache.token(now);
      if (cache.tokensMade() != before) made.push_back(now);
      const auto iat = claimsOf(token)["iat"].get<std::int64_t>();
      const auto now_s = std::chrono::duration_cast<seconds>(now.time_since_epoch()).count();
      ASSERT_LT(now_s - iat, 60 * 60) << "seed " << seed;
      ASSERT_GE(now_s - iat, 0);
      ++sends;
      sent.push_back(token);
      if (sent.size() > 5) sent.erase(sent.begin());
      if (rng() % 25 == 0) {
        const std::string& used = sent[rng() % sent.size()];
        const std::uint64_t n = cache.tokensMade();
        const CredentialDecision d = cache.onExpiredProviderToken(now, used);
        if (cache.tokensMade() != n) made.push_back(now);
        if (d.action == Action::kPause) {
          ASSERT_GT(d.pause_until, now);
          ASSERT_LE(d.pause_until, now + minutes(20));
          ASSERT_FALSE(cache.usable(now));
        } else {
          ASSERT_EQ(d.action, Action::kRetryNow);
          ASSERT_TRUE(cache.usable(now));
        }
      }
    }
    for (std::size_t i = 1; i < made.size(); ++i) {
      ASSERT_GE(made[i] - made[i - 1], minutes(20)) << "seed " << seed << " token " << i;
    }
    EXPECT_GT(made.size(), 40u) << "tokens were renewed through the 48 h";
    EXPECT_GT(sends, 500u);
    EXPECT_GT(pauses, 0u) << "the random answers reached the pause";
  }
}

}  // namespace
}  // namespace pacer::push
