// Signing for the fake push providers' unit tests: keys made with OpenSSL
// and tokens signed here, so the fakes' verification is checked against an
// independent signer (ES256 as JOSE's raw R||S, RS256).
#pragma once

#include <openssl/bio.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "jwt_verify.h"

namespace pacer::fake::testing {

inline PublicKey makeEcKey() { return PublicKey(EVP_EC_gen("P-256")); }
inline PublicKey makeRsaKey() { return PublicKey(EVP_RSA_gen(2048)); }

inline std::string publicPem(EVP_PKEY* key) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PUBKEY(bio, key);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string pem(data, static_cast<std::size_t>(n));
  BIO_free(bio);
  return pem;
}

// The public half alone, as the fakes get it from a PEM file.
inline PublicKey publicOnly(EVP_PKEY* key) { return loadPublicKeyPem(publicPem(key), "test key"); }

inline std::string signDigest(EVP_PKEY* key, const std::string& input) {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  std::size_t len = 0;
  EVP_DigestSignInit(ctx, nullptr, EVP_sha256(), nullptr, key);
  EVP_DigestSign(ctx, nullptr, &len, reinterpret_cast<const unsigned char*>(input.data()), input.size());
  std::string sig(len, '\0');
  EVP_DigestSign(ctx, reinterpret_cast<unsigned char*>(sig.data()), &len,
                 reinterpret_cast<const unsigned char*>(input.data()), input.size());
  EVP_MD_CTX_free(ctx);
  sig.resize(len);
  return sig;
}

// DER ECDSA-Sig-Value -> 64-byte R||S.
inline std::string derToRaw(const std::string& der) {
  const auto* p = reinterpret_cast<const unsigned char*>(der.data());
  ECDSA_SIG* sig = d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(der.size()));
  if (sig == nullptr) throw std::runtime_error("bad DER signature");
  std::string raw(64, '\0');
  BN_bn2binpad(ECDSA_SIG_get0_r(sig), reinterpret_cast<unsigned char*>(raw.data()), 32);
  BN_bn2binpad(ECDSA_SIG_get0_s(sig), reinterpret_cast<unsigned char*>(raw.data()) + 32, 32);
  ECDSA_SIG_free(sig);
  return raw;
}

// alg "ES256" or "RS256"; `header` gets alg and typ added.
inline std::string signJwt(EVP_PKEY* key, const std::string& alg, nlohmann::json header, const nlohmann::json& claims) {
  header["alg"] = alg;
  header["typ"] = "JWT";
  const std::string input = base64UrlEncode(header.dump()) + "." + base64UrlEncode(claims.dump());
  std::string sig = signDigest(key, input);
  if (alg == "ES256") sig = derToRaw(sig);
  return input + "." + base64UrlEncode(sig);
}

}  // namespace pacer::fake::testing
