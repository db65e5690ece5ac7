// The OpenSSL side of the push keys and JWT signatures (private to
// pacer::push and its tests).
#pragma once

#include <openssl/evp.h>

#include <optional>
#include <string>
#include <string_view>

#include "pacer/push/jwt.h"

namespace pacer::push {

// Owns one EVP_PKEY (freed on destruction).
struct PkeyHolder {
  explicit PkeyHolder(EVP_PKEY* key) noexcept : pkey(key) {}
  PkeyHolder(const PkeyHolder&) = delete;
  PkeyHolder& operator=(const PkeyHolder&) = delete;
  ~PkeyHolder() { EVP_PKEY_free(pkey); }
  EVP_PKEY* pkey;
};

struct EcPrivateKey::Impl : PkeyHolder {
  using PkeyHolder::PkeyHolder;
};
struct RsaPrivateKey::Impl : PkeyHolder {
  using PkeyHolder::PkeyHolder;
};

// ECDSA signatures: OpenSSL makes and checks DER (SEQUENCE {r, s}); JWS
// carries R||S, each left-padded to `half` bytes (32 for P-256).
// nullopt when `der` is not a signature or a component does not fit.
std::optional<std::string> ecdsaDerToRaw(std::string_view der, std::size_t half);
// nullopt when `raw` has an odd length.
std::optional<std::string> ecdsaRawToDer(std::string_view raw);

// The signing input's digest signed with `pkey` (SHA-256): DER for EC keys,
// PKCS#1 v1.5 for RSA. Throws InvalidError if OpenSSL fails.
std::string digestSignSha256(EVP_PKEY* pkey, std::string_view input);

}  // namespace pacer::push
