// Keys and JWT signing with OpenSSL 3's EVP interface.
//
// Why OpenSSL directly and not libjwt (Debian 12 ships 1.10.2): libjwt 1.10.2
// does produce the raw 64-byte R||S that RFC 7518 §3.4 asks for (its
// jwt-openssl.c converts OpenSSL's DER and left-pads both halves; checked on
// 3000 signatures), so the encoding is not the reason. The reasons are that
// it takes the key as PEM text on every jwt_set_alg() and parses it again on
// every encode, so a bad key is only found at the first send, with nothing
// but an errno (and an encrypted key makes OpenSSL's default passphrase
// callback prompt on the terminal); it reaches keys through OpenSSL 1.1 calls deprecated in 3.0
// (EVP_PKEY_get1_EC_KEY); and it would add libjwt and jansson for what is two
// base64url strings and one EVP_DigestSign here. docs/push.md has the same.
#include <openssl/bio.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/pem.h>

#include <memory>

#include "key_impl.h"

namespace pacer::push {
namespace {

using BioPtr = std::unique_ptr<BIO, decltype(&BIO_free)>;
using MdCtxPtr = std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)>;
using SigPtr = std::unique_ptr<ECDSA_SIG, decltype(&ECDSA_SIG_free)>;
using BnPtr = std::unique_ptr<BIGNUM, decltype(&BN_free)>;

// Refuses to ask for a passphrase: an encrypted key fails to load instead of
// prompting on a terminal.
int noPassphrase(char*, int, int, void*) { return 0; }

// Loads any private key from PEM; throws with `what` and OpenSSL's generic
// reason (never the key text).
EVP_PKEY* loadPem(std::string_view pem, std::string_view what) {
  if (pem.find("-----BEGIN") == std::string_view::npos) {
    throw PushCredentialError(std::string(what) + ": not a PEM private key (no '-----BEGIN' line)");
  }
  if (pem.find("ENCRYPTED") != std::string_view::npos) {
    throw PushCredentialError(std::string(what) + ": the PEM key is encrypted; give it unencrypted");
  }
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), &BIO_free);
  if (!bio) throw PushCredentialError(std::string(what) + ": out of memory reading the key");
  ERR_clear_error();
  EVP_PKEY* key = PEM_read_bio_PrivateKey(bio.get(), nullptr, &noPassphrase, nullptr);
  if (key == nullptr) {
    const char* why = ERR_reason_error_string(ERR_peek_last_error());
    ERR_clear_error();
    throw PushCredentialError(std::string(what) + ": not a usable PEM private key (" + (why ? why : "unknown reason") +
                              ")");
  }
  return key;
}

std::string signingInput(const nlohmann::json& header, const nlohmann::json& claims, const char* alg) {
  if (!header.is_object()) throw InvalidError("JWT header must be a JSON object");
  if (!claims.is_object()) throw InvalidError("JWT claims must be a JSON object");
  nlohmann::json h = header;
  if (!h.contains("alg")) {
    h["alg"] = alg;
  } else if (h["alg"] != alg) {
    throw InvalidError(std::string("JWT header alg must be ") + alg);
  }
  return base64UrlEncode(h.dump()) + "." + base64UrlEncode(claims.dump());
}

}  // namespace

std::string digestSignSha256(EVP_PKEY* pkey, std::string_view input) {
  MdCtxPtr ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  std::size_t len = 0;
  const auto* data = reinterpret_cast<const unsigned char*>(input.data());
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, EVP_sha256(), nullptr, pkey) != 1 ||
      EVP_DigestSign(ctx.get(), nullptr, &len, data, input.size()) != 1) {
    ERR_clear_error();
    throw InvalidError("JWT signing failed to start");
  }
  std::string sig(len, '\0');
  if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &len, data, input.size()) != 1) {
    ERR_clear_error();
    throw InvalidError("JWT signing failed");
  }
  sig.resize(len);
  return sig;
}

std::optional<std::string> ecdsaDerToRaw(std::string_view der, std::size_t half) {
  const auto* p = reinterpret_cast<const unsigned char*>(der.data());
  SigPtr sig(d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(der.size())), &ECDSA_SIG_free);
  if (!sig || p != reinterpret_cast<const unsigned char*>(der.data()) + der.size()) return std::nullopt;
  const BIGNUM* r = nullptr;
  const BIGNUM* s = nullptr;
  ECDSA_SIG_get0(sig.get(), &r, &s);
  std::string raw(2 * half, '\0');
  auto* out = reinterpret_cast<unsigned char*>(raw.data());
  // BN_bn2binpad left-pads with zeros: a 31-byte R still takes 32 bytes.
  if (BN_bn2binpad(r, out, static_cast<int>(half)) < 0 || BN_bn2binpad(s, out + half, static_cast<int>(half)) < 0) {
    return std::nullopt;
  }
  return raw;
}

std::optional<std::string> ecdsaRawToDer(std::string_view raw) {
  if (raw.empty() || raw.size() % 2 != 0) return std::nullopt;
  const auto* in = reinterpret_cast<const unsigned char*>(raw.data());
  const int half = static_cast<int>(raw.size() / 2);
  BnPtr r(BN_bin2bn(in, half, nullptr), &BN_free);
  BnPtr s(BN_bin2bn(in + half, half, nullptr), &BN_free);
  SigPtr sig(ECDSA_SIG_new(), &ECDSA_SIG_free);
  if (!r || !s || !sig || ECDSA_SIG_set0(sig.get(), r.get(), s.get()) != 1) return std::nullopt;
  r.release();  // owned by sig now
  s.release();
  const int len = i2d_ECDSA_SIG(sig.get(), nullptr);
  if (len <= 0) return std::nullopt;
  std::string der(static_cast<std::size_t>(len), '\0');
  auto* out = reinterpret_cast<unsigned char*>(der.data());
  i2d_ECDSA_SIG(sig.get(), &out);
  return der;
}

EcPrivateKey EcPrivateKey::fromPem(std::string_view pem, std::string_view what) {
  auto impl = std::make_unique<Impl>(loadPem(pem, what));
  if (!EVP_PKEY_is_a(impl->pkey, "EC")) {
    throw PushCredentialError(std::string(what) + ": not an EC key (ES256 needs a P-256 key)");
  }
  char group[64] = {0};
  std::size_t group_len = 0;
  if (EVP_PKEY_get_utf8_string_param(impl->pkey, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof group, &group_len) != 1 ||
      std::string_view(group) != "prime256v1") {
    ERR_clear_error();
    throw PushCredentialError(std::string(what) + ": not a P-256 (prime256v1) key, which ES256 needs");
  }
  return EcPrivateKey(std::move(impl));
}

EcPrivateKey::EcPrivateKey(std::unique_ptr<Impl> impl) noexcept : impl_(std::move(impl)) {}
EcPrivateKey::EcPrivateKey(EcPrivateKey&&) noexcept = default;
EcPrivateKey& EcPrivateKey::operator=(EcPrivateKey&&) noexcept = default;
EcPrivateKey::~EcPrivateKey() = default;

RsaPrivateKey RsaPrivateKey::fromPem(std::string_view pem, std::string_view what) {
  auto impl = std::make_unique<Impl>(loadPem(pem, what));
  if (!EVP_PKEY_is_a(impl->pkey, "RSA")) throw PushCredentialError(std::string(what) + ": not an RSA key (RS256)");
  if (EVP_PKEY_get_bits(impl->pkey) < 2048) {
    throw PushCredentialError(std::string(what) + ": RSA key under 2048 bits (RFC 7518 §3.3 asks for 2048 or more)");
  }
  return RsaPrivateKey(std::move(impl));
}

RsaPrivateKey::RsaPrivateKey(std::unique_ptr<Impl> impl) noexcept : impl_(std::move(impl)) {}
RsaPrivateKey::RsaPrivateKey(RsaPrivateKey&&) noexcept = default;
RsaPrivateKey& RsaPrivateKey::operator=(RsaPrivateKey&&) noexcept = default;
RsaPrivateKey::~RsaPrivateKey() = default;

std::string signJwtEs256(const nlohmann::json& header, const nlohmann::json& claims, const EcPrivateKey& key) {
  std::string input = signingInput(header, claims, "ES256");
  const auto raw = ecdsaDerToRaw(digestSignSha256(key.impl().pkey, input), 32);
  if (!raw) throw InvalidError("ES256 signature could not be converted to R||S");
  input += '.';
  input += base64UrlEncode(*raw);
  return input;
}

std::string signJwtRs256(const nlohmann::json& header, const nlohmann::json& claims, const RsaPrivateKey& key) {
  std::string input = signingInput(header, claims, "RS256");
  const std::string sig = digestSignSha256(key.impl().pkey, input);
  input += '.';
  input += base64UrlEncode(sig);
  return input;
}

}  // namespace pacer::push
