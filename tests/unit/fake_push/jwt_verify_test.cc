#include "jwt_verify.h"

#include <gtest/gtest.h>

#include "jwt_test_util.h"

namespace pacer::fake {
namespace {

using testing::makeEcKey;
using testing::makeRsaKey;
using testing::publicOnly;
using testing::signJwt;

TEST(Base64UrlTest, RoundTripsEveryByteAndRejectsForeignCharacters) {
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(i));
  for (std::size_t n = 0; n < 8; ++n) EXPECT_EQ(base64UrlDecode(base64UrlEncode(all.substr(0, n))), all.substr(0, n));
  EXPECT_EQ(base64UrlDecode(base64UrlEncode(all)), all);
  EXPECT_EQ(base64UrlEncode("\xfb\xff"), "-_8");
  EXPECT_EQ(base64UrlDecode("aGk="), "hi");  // padding tolerated
  EXPECT_FALSE(base64UrlDecode("a+b/"));     // base64, not base64url
  EXPECT_FALSE(base64UrlDecode("abcde"));    // impossible length
}

TEST(ParseJwtTest, NeedsThreePartsWithJsonObjects) {
  auto key = makeEcKey();
  const std::string t = signJwt(key.get(), "ES256", {{"kid", "K"}}, {{"iss", "T"}});
  auto jwt = parseJwt(t);
  ASSERT_TRUE(jwt);
  EXPECT_EQ(jwt->header["kid"], "K");
  EXPECT_EQ(jwt->claims["iss"], "T");
  EXPECT_EQ(jwt->signature.size(), 64u);
  EXPECT_FALSE(parseJwt(t.substr(0, t.rfind('.'))));
  EXPECT_FALSE(parseJwt(t + ".x"));
  EXPECT_FALSE(parseJwt(base64UrlEncode("not json") + "." + base64UrlEncode("{}") + ".AA"));
  EXPECT_FALSE(parseJwt(base64UrlEncode("[1]") + "." + base64UrlEncode("{}") + ".AA"));
}

TEST(VerifyEs256Test, AcceptsTheSignerAndRejectsTamperingOrAnotherKey) {
  auto key = makeEcKey(), other = makeEcKey();
  const auto pub = publicOnly(key.get());
  const std::string t = signJwt(key.get(), "ES256", {{"kid", "K"}}, {{"iss", "T"}, {"iat", 1}});
  auto jwt = parseJwt(t);
  ASSERT_TRUE(jwt);
  EXPECT_TRUE(verifyEs256(pub.get(), jwt->signing_input, jwt->signature));
  EXPECT_FALSE(verifyEs256(publicOnly(other.get()).get(), jwt->signing_input, jwt->signature));
  std::string tampered(jwt->signing_input);
  tampered.back() = tampered.back() == 'A' ? 'B' : 'A';
  EXPECT_FALSE(verifyEs256(pub.get(), tampered, jwt->signature));
  std::string flipped = jwt->signature;
  flipped[40] ^= 1;
  EXPECT_FALSE(verifyEs256(pub.get(), jwt->signing_input, flipped));
  EXPECT_FALSE(verifyEs256(pub.get(), jwt->signing_input, jwt->signature.substr(0, 63)));  // DER-length games
  EXPECT_FALSE(verifyEs256(publicOnly(makeRsaKey().get()).get(), jwt->signing_input, jwt->signature));
}

TEST(VerifyRs256Test, AcceptsTheSignerAndRejectsTamperingOrAnotherKey) {
  auto key = makeRsaKey(), other = makeRsaKey();
  const std::string t = signJwt(key.get(), "RS256", {}, {{"iss", "sa@x"}});
  auto jwt = parseJwt(t);
  ASSERT_TRUE(jwt);
  EXPECT_TRUE(verifyRs256(publicOnly(key.get()).get(), jwt->signing_input, jwt->signature));
  EXPECT_FALSE(verifyRs256(publicOnly(other.get()).get(), jwt->signing_input, jwt->signature));
  EXPECT_FALSE(verifyRs256(publicOnly(key.get()).get(), std::string(jwt->signing_input) + "x", jwt->signature));
  EXPECT_FALSE(verifyRs256(publicOnly(makeEcKey().get()).get(), jwt->signing_input, jwt->signature));
}

TEST(StringFieldTest, IsEmptyForMissingOrNonStringMembers) {
  const auto j = nlohmann::json::parse(R"({"alg":"ES256","kid":5,"x":null})");
  EXPECT_EQ(stringField(j, "alg"), "ES256");
  EXPECT_EQ(stringField(j, "kid"), "");
  EXPECT_EQ(stringField(j, "x"), "");
  EXPECT_EQ(stringField(j, "missing"), "");
}

TEST(LoadPublicKeyTest, RejectsWhatIsNotAPemKey) {
  EXPECT_THROW(loadPublicKeyPem("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n", "k"),
               std::runtime_error);
  EXPECT_THROW(loadPublicKeyFile("/nonexistent/key.pem"), std::runtime_error);
}

}  // namespace
}  // namespace pacer::fake
