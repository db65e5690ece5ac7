#include "pacer/push/jwt.h"

#include <gtest/gtest.h>

#include "key_impl.h"
#include "support/thrown.h"
#include "test_keys.h"

namespace pacer::push {
namespace {

struct Parts {
  nlohmann::json header, claims;
  std::string input, signature;
};

// Splits and decodes a compact JWS; fails the test on a malformed one.
Parts split(const std::string& jwt) {
  Parts p;
  const auto dot1 = jwt.find('.');
  const auto dot2 = jwt.find('.', dot1 + 1);
  EXPECT_NE(dot1, std::string::npos);
  EXPECT_NE(dot2, std::string::npos);
  EXPECT_EQ(jwt.find('.', dot2 + 1), std::string::npos);
  EXPECT_EQ(jwt.find('='), std::string::npos) << "base64url without padding";
  p.input = jwt.substr(0, dot2);
  p.header = nlohmann::json::parse(base64UrlDecode(jwt.substr(0, dot1)).value());
  p.claims = nlohmann::json::parse(base64UrlDecode(jwt.substr(dot1 + 1, dot2 - dot1 - 1)).value());
  p.signature = base64UrlDecode(jwt.substr(dot2 + 1)).value();
  return p;
}

TEST(Base64Url, EncodesRfc4648VectorsWithoutPadding) {
  EXPECT_EQ(base64UrlEncode(""), "");
  EXPECT_EQ(base64UrlEncode("f"), "Zg");
  EXPECT_EQ(base64UrlEncode("fo"), "Zm8");
  EXPECT_EQ(base64UrlEncode("foo"), "Zm9v");
  EXPECT_EQ(base64UrlEncode("foob"), "Zm9vYg");
  EXPECT_EQ(base64UrlEncode("fooba"), "Zm9vYmE");
  EXPECT_EQ(base64UrlEncode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(base64UrlEncode(std::string("\xfb\xff\xfe", 3)), "-__-") << "URL alphabet, not + and /";
}

TEST(Base64Url, DecodesAndRoundTripsEveryByte) {
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(i));
  for (std::size_t n = 0; n <= all.size(); n += 7) {
    const std::string s = all.substr(0, n);
    EXPECT_EQ(base64UrlDecode(base64UrlEncode(s)), s) << n;
  }
}

TEST(Base64Url, RefusesPaddingForeignCharactersAndImpossibleLengths) {
  EXPECT_FALSE(base64UrlDecode("Zg=="));
  EXPECT_FALSE(base64UrlDecode("Zm+v"));
  EXPECT_FALSE(base64UrlDecode("Zm9vY"));
  EXPECT_FALSE(base64UrlDecode("Zh")) << "non-zero trailing bits";
}

TEST(EcdsaSignature, DerAndRawConvertBothWaysWithLeftPadding) {
  // R with a leading zero byte must still take 32 bytes of the 64.
  std::string raw(64, '\0');
  raw[1] = 0x7f;                                                       // R = 0x007f00..., 31 significant bytes
  for (int i = 32; i < 64; ++i) raw[i] = static_cast<char>(0x80 + i);  // S with the top bit set
  const auto der = ecdsaRawToDer(raw);
  ASSERT_TRUE(der);
  EXPECT_EQ(ecdsaDerToRaw(*der, 32), raw);
  EXPECT_FALSE(ecdsaDerToRaw("not der", 32));
  EXPECT_FALSE(ecdsaDerToRaw(*der, 16)) << "components that do not fit";
  EXPECT_FALSE(ecdsaRawToDer(std::string(63, 'x')));
}

TEST(SignJwtEs256, VerifiesWithOpenSslAndCarriesTheHeaderAndClaims) {
  auto pkey = test::makeEcKey("P-256");
  const EcPrivateKey key = EcPrivateKey::fromPem(test::privatePem(pkey.get()), "APNs key");
  for (int i = 0; i < 50; ++i) {  // many signatures: some have a short R or S
    const std::string jwt = signJwtEs256({{"kid", "ABC123DEFG"}}, {{"iss", "TEAM"}, {"iat", 1700000000 + i}}, key);
    const Parts p = split(jwt);
    EXPECT_EQ(p.header, (nlohmann::json{{"alg", "ES256"}, {"kid", "ABC123DEFG"}}));
    EXPECT_EQ(p.claims, (nlohmann::json{{"iss", "TEAM"}, {"iat", 1700000000 + i}}));
    ASSERT_EQ(p.signature.size(), 64u) << "raw R||S (RFC 7518 §3.4), not DER";
    const auto der = ecdsaRawToDer(p.signature);
    ASSERT_TRUE(der);
    EXPECT_TRUE(test::verifySha256(pkey.get(), p.input, *der));
    EXPECT_FALSE(test::verifySha256(pkey.get(), p.input + "x", *der)) << "the check can fail";
  }
}

TEST(SignJwtEs256, LoadsSec1PemAsWell) {
  auto pkey = test::makeEcKey("P-256");
  const std::string pem = test::traditionalPem(pkey.get());
  ASSERT_NE(pem.find("BEGIN EC PRIVATE KEY"), std::string::npos);
  const EcPrivateKey key = EcPrivateKey::fromPem(pem);
  const Parts p = split(signJwtEs256(nlohmann::json::object(), {{"a", 1}}, key));
  EXPECT_TRUE(test::verifySha256(pkey.get(), p.input, ecdsaRawToDer(p.signature).value()));
}

TEST(SignJwtRs256, VerifiesWithOpenSsl) {
  auto pkey = test::makeRsaKey(2048);
  const RsaPrivateKey key = RsaPrivateKey::fromPem(test::privatePem(pkey.get()));
  const std::string jwt = signJwtRs256({{"typ", "JWT"}}, {{"iss", "a@b"}}, key);
  const Parts p = split(jwt);
  EXPECT_EQ(p.header, (nlohmann::json{{"alg", "RS256"}, {"typ", "JWT"}}));
  EXPECT_EQ(p.signature.size(), 256u);
  EXPECT_TRUE(test::verifySha256(pkey.get(), p.input, p.signature));
  EXPECT_FALSE(test::verifySha256(pkey.get(), p.input + "x", p.signature));
}

TEST(SignJwt, RefusesNonObjectsAndAConflictingAlg) {
  auto pkey = test::makeEcKey("P-256");
  const EcPrivateKey key = EcPrivateKey::fromPem(test::privatePem(pkey.get()));
  EXPECT_THROW(signJwtEs256(nlohmann::json::array(), {{"a", 1}}, key), InvalidError);
  EXPECT_THROW(signJwtEs256(nlohmann::json::object(), "claims", key), InvalidError);
  EXPECT_THROW(signJwtEs256({{"alg", "HS256"}}, {{"a", 1}}, key), InvalidError);
  EXPECT_NO_THROW(signJwtEs256({{"alg", "ES256"}}, {{"a", 1}}, key));
}

// The message of the error `load` throws, a bad-input one.
template <typename F>
std::string errorOf(F load) {
  return test_support::thrownBy<PushCredentialError>(
      load, [](const PushCredentialError& e) { EXPECT_EQ(e.kind(), ErrorKind::kInvalid); });
}

TEST(KeyLoading, BadKeysThrowClearErrorsWithoutTheSecret) {
  auto ec = test::makeEcKey("P-256");
  auto p384 = test::makeEcKey("P-384");
  auto rsa = test::makeRsaKey(2048);
  auto small_rsa = test::makeRsaKey(1024);
  const std::string ec_pem = test::privatePem(ec.get());
  const std::string rsa_pem = test::privatePem(rsa.get());
  const std::string body = ec_pem.substr(ec_pem.find('\n') + 1, 40);  // secret bytes

  EXPECT_NE(errorOf([] { EcPrivateKey::fromPem("hello", "APNs key"); }).find("APNs key: not a PEM"), std::string::npos);
  std::string broken = ec_pem;
  broken[40] = broken[40] == 'A' ? 'B' : 'A';
  broken.erase(60, 30);
  const std::string msg = errorOf([&] { EcPrivateKey::fromPem(broken, "APNs key"); });
  EXPECT_NE(msg.find("not a usable PEM private key"), std::string::npos) << msg;
  EXPECT_EQ(msg.find(body), std::string::npos) << "key bytes leaked into: " << msg;

  EXPECT_NE(errorOf([&] { EcPrivateKey::fromPem(test::privatePem(ec.get(), "pw")); }).find("encrypted"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { EcPrivateKey::fromPem(rsa_pem); }).find("not an EC key"), std::string::npos);
  EXPECT_NE(errorOf([&] { EcPrivateKey::fromPem(test::privatePem(p384.get())); }).find("P-256"), std::string::npos);
  EXPECT_NE(errorOf([&] { RsaPrivateKey::fromPem(ec_pem); }).find("not an RSA key"), std::string::npos);
  EXPECT_NE(errorOf([&] { RsaPrivateKey::fromPem(test::privatePem(small_rsa.get())); }).find("2048"),
            std::string::npos);
  EXPECT_NO_THROW(RsaPrivateKey::fromPem(test::traditionalPem(rsa.get())));
}

}  // namespace
}  // namespace pacer::push
