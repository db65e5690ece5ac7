// JSON Web Tokens for the push providers (RFC 7515/7519): ES256 for the APNs
// provider token, RS256 for the FCM (Google OAuth 2.0) assertion. Pure: no
// clock reads (the caller puts iat/exp in the claims), no I/O.
//
// Signing is OpenSSL 3 behind this header (no OpenSSL type leaks out);
// docs/push.md says why not libjwt. Thread-safety: a key is immutable after
// loading and may sign from several threads at once.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "pacer/error.h"

namespace pacer::push {

// A private key, or a service-account file, that cannot be used. The message
// says what is wrong and where, never the secret itself.
class PushCredentialError : public InvalidError {
 public:
  explicit PushCredentialError(const std::string& what) : InvalidError(what) {}
};

// base64url without padding (RFC 7515 §2, RFC 4648 §5).
std::string base64UrlEncode(std::string_view bytes);
// The inverse; nullopt for a character outside the alphabet, padding, or an
// impossible length (1 mod 4).
std::optional<std::string> base64UrlDecode(std::string_view text);

// A P-256 private key (APNs .p8 files are PKCS#8 "BEGIN PRIVATE KEY").
// Move-only; frees the key on destruction.
class EcPrivateKey {
 public:
  struct Impl;  // the library's: holds the EVP_PKEY
  // Accepts PKCS#8 ("BEGIN PRIVATE KEY") and SEC1 ("BEGIN EC PRIVATE KEY")
  // PEM. Throws PushCredentialError for anything else: not PEM, encrypted,
  // another key type or curve. `what` names the key in messages ("APNs key").
  static EcPrivateKey fromPem(std::string_view pem, std::string_view what = "EC key");
  EcPrivateKey(EcPrivateKey&&) noexcept;
  EcPrivateKey& operator=(EcPrivateKey&&) noexcept;
  ~EcPrivateKey();
  const Impl& impl() const noexcept { return *impl_; }

 private:
  explicit EcPrivateKey(std::unique_ptr<Impl> impl) noexcept;
  std::unique_ptr<Impl> impl_;
};

// An RSA private key of at least 2048 bits (a Google service account's
// "private_key", PKCS#8 PEM). Move-only.
class RsaPrivateKey {
 public:
  struct Impl;
  // Accepts PKCS#8 and PKCS#1 ("BEGIN RSA PRIVATE KEY") PEM; throws
  // PushCredentialError otherwise (also for keys under 2048 bits).
  static RsaPrivateKey fromPem(std::string_view pem, std::string_view what = "RSA key");
  RsaPrivateKey(RsaPrivateKey&&) noexcept;
  RsaPrivateKey& operator=(RsaPrivateKey&&) noexcept;
  ~RsaPrivateKey();
  const Impl& impl() const noexcept { return *impl_; }

 private:
  explicit RsaPrivateKey(std::unique_ptr<Impl> impl) noexcept;
  std::unique_ptr<Impl> impl_;
};

// "<b64url(header)>.<b64url(claims)>.<b64url(signature)>". `header` and
// `claims` must be JSON objects (else InvalidError); "alg" is added to the
// header when absent and must match when present. The ES256 signature is the
// raw 64-byte R||S of RFC 7518 §3.4 (OpenSSL's DER form converted).
std::string signJwtEs256(const nlohmann::json& header, const nlohmann::json& claims, const EcPrivateKey& key);
// RS256: RSASSA-PKCS1-v1_5 with SHA-256 (RFC 7518 §3.3).
std::string signJwtRs256(const nlohmann::json& header, const nlohmann::json& claims, const RsaPrivateKey& key);

}  // namespace pacer::push
