#include "jwt_verify.h"

#include <openssl/bio.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <array>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace pacer::fake {
namespace {

constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

constexpr std::array<signed char, 256> makeDecodeTable() {
  std::array<signed char, 256> t{};
  for (auto& v : t) v = -1;
  for (std::size_t i = 0; i < kAlphabet.size(); ++i)
    t[static_cast<unsigned char>(kAlphabet[i])] = static_cast<signed char>(i);
  return t;
}
constexpr auto kDecode = makeDecodeTable();

bool verifyDigest(EVP_PKEY* key, std::string_view input, const unsigned char* sig, std::size_t sig_len) {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  if (ctx == nullptr) return false;
  bool ok =
      EVP_DigestVerifyInit(ctx, nullptr, EVP_sha256(), nullptr, key) == 1 &&
      EVP_DigestVerify(ctx, sig, sig_len, reinterpret_cast<const unsigned char*>(input.data()), input.size()) == 1;
  EVP_MD_CTX_free(ctx);
  // A failed verification leaves errors on this thread's queue, where SSL_get_error
  // would later find them and take a clean WANT_READ for a broken connection.
  ERR_clear_error();
  return ok;
}

std::optional<nlohmann::json> decodeObject(std::string_view part) {
  auto raw = base64UrlDecode(part);
  if (!raw) return std::nullopt;
  auto j = nlohmann::json::parse(*raw, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  return j;
}

}  // namespace

std::optional<std::string> base64UrlDecode(std::string_view in) {
  while (!in.empty() && in.back() == '=') in.remove_suffix(1);
  if (in.size() % 4 == 1) return std::nullopt;
  std::string out;
  out.reserve(in.size() * 3 / 4);
  std::uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    const int v = kDecode[static_cast<unsigned char>(c)];
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return out;
}

std::string base64UrlEncode(std::string_view in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  std::uint32_t acc = 0;
  int bits = 0;
  for (unsigned char c : in) {
    acc = (acc << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(kAlphabet[(acc >> bits) & 0x3f]);
    }
  }
  if (bits > 0) out.push_back(kAlphabet[(acc << (6 - bits)) & 0x3f]);
  return out;
}

std::optional<Jwt> parseJwt(std::string_view token) {
  const auto d1 = token.find('.');
  if (d1 == std::string_view::npos) return std::nullopt;
  const auto d2 = token.find('.', d1 + 1);
  if (d2 == std::string_view::npos || token.find('.', d2 + 1) != std::string_view::npos) return std::nullopt;
  auto header = decodeObject(token.substr(0, d1));
  auto claims = decodeObject(token.substr(d1 + 1, d2 - d1 - 1));
  auto sig = base64UrlDecode(token.substr(d2 + 1));
  if (!header || !claims || !sig) return std::nullopt;
  return Jwt{std::move(*header), std::move(*claims), token.substr(0, d2), std::move(*sig)};
}

std::string stringField(const nlohmann::json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool verifyEs256(EVP_PKEY* key, std::string_view signing_input, std::string_view signature) {
  if (key == nullptr || signature.size() != 64 || EVP_PKEY_get_base_id(key) != EVP_PKEY_EC) return false;
  // JOSE carries R||S (32 bytes each); OpenSSL verifies an ASN.1 DER ECDSA-Sig-Value.
  const auto* raw = reinterpret_cast<const unsigned char*>(signature.data());
  ECDSA_SIG* sig = ECDSA_SIG_new();
  BIGNUM* r = BN_bin2bn(raw, 32, nullptr);
  BIGNUM* s = BN_bin2bn(raw + 32, 32, nullptr);
  if (sig == nullptr || r == nullptr || s == nullptr || ECDSA_SIG_set0(sig, r, s) != 1) {
    BN_free(r);
    BN_free(s);
    ECDSA_SIG_free(sig);
    return false;
  }
  unsigned char* der = nullptr;
  const int der_len = i2d_ECDSA_SIG(sig, &der);
  ECDSA_SIG_free(sig);
  if (der_len <= 0) return false;
  const bool ok = verifyDigest(key, signing_input, der, static_cast<std::size_t>(der_len));
  OPENSSL_free(der);
  return ok;
}

bool verifyRs256(EVP_PKEY* key, std::string_view signing_input, std::string_view signature) {
  if (key == nullptr || EVP_PKEY_get_base_id(key) != EVP_PKEY_RSA || signature.empty()) return false;
  return verifyDigest(key, signing_input, reinterpret_cast<const unsigned char*>(signature.data()), signature.size());
}

PublicKey loadPublicKeyPem(std::string_view pem, const std::string& what) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (bio == nullptr) throw std::runtime_error("out of memory reading " + what);
  EVP_PKEY* key = PEM_read_bio_PUBKEY(bio, nullptr, nullptr, nullptr);
  if (key == nullptr) {
    (void)BIO_reset(bio);
    if (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
      key = X509_get_pubkey(cert);
      X509_free(cert);
    }
  }
  BIO_free(bio);
  ERR_clear_error();
  if (key == nullptr) throw std::runtime_error(what + ": not a PEM public key or certificate");
  return PublicKey(key);
}

PublicKey loadPublicKeyFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return loadPublicKeyPem(ss.str(), path);
}

}  // namespace pacer::fake
