// Keys made at test time with OpenSSL (no key material in the repository),
// and verification of our JWTs by OpenSSL's own verifier.
#pragma once

#include <openssl/evp.h>

#include <memory>
#include <string>
#include <string_view>

namespace pacer::push::test {

using PkeyPtr = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;

// "P-256", "P-384".
PkeyPtr makeEcKey(const char* curve);
PkeyPtr makeRsaKey(unsigned bits);
// PKCS#8 "BEGIN PRIVATE KEY" PEM; encrypted with `passphrase` when not empty.
std::string privatePem(EVP_PKEY* key, std::string_view passphrase = {});
// The traditional form ("BEGIN EC PRIVATE KEY" / "BEGIN RSA PRIVATE KEY").
std::string traditionalPem(EVP_PKEY* key);
// Verifies `signature` (DER for EC, PKCS#1 v1.5 for RSA) over `input` with SHA-256.
bool verifySha256(EVP_PKEY* key, std::string_view input, std::string_view signature);

}  // namespace pacer::push::test
