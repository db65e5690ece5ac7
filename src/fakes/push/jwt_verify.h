// JSON Web Token checks the fake providers make themselves with OpenSSL:
// base64url, splitting a compact JWS, ES256 (raw R||S signature, as JOSE
// sends it, turned into DER for OpenSSL) and RS256 verification, and PEM
// public keys. Pure functions; thread-safe.
#pragma once

#include <openssl/evp.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace pacer::fake {

struct PkeyFree {
  void operator()(EVP_PKEY* k) const noexcept { EVP_PKEY_free(k); }
};
using PublicKey = std::unique_ptr<EVP_PKEY, PkeyFree>;

// Decodes unpadded (or padded) base64url; nullopt on any character outside
// the alphabet or an impossible length.
std::optional<std::string> base64UrlDecode(std::string_view in);
// Encodes without padding (test helpers and ids).
std::string base64UrlEncode(std::string_view in);

// A compact JWS split into its parts, header and claims parsed as objects.
struct Jwt {
  nlohmann::json header;
  nlohmann::json claims;
  std::string_view signing_input;  // "header.payload", a view into the token
  std::string signature;           // decoded bytes
};
// nullopt when the token is not three base64url parts of which the first two
// are JSON objects.
std::optional<Jwt> parseJwt(std::string_view token);

// The string member `key` of `object`, or "" when it is missing or not a
// string (a token's fields are the client's to get wrong, never a throw).
std::string stringField(const nlohmann::json& object, const char* key);

// ES256: `signature` is the 64-byte R||S of JOSE. False on any other length,
// a key that is not P-256, or a signature that does not verify.
bool verifyEs256(EVP_PKEY* key, std::string_view signing_input, std::string_view signature);
// RS256: RSASSA-PKCS1-v1_5 with SHA-256.
bool verifyRs256(EVP_PKEY* key, std::string_view signing_input, std::string_view signature);

// A PEM public key ("BEGIN PUBLIC KEY"); a certificate's key is accepted too.
// Throws std::runtime_error naming `what` when it cannot be read.
PublicKey loadPublicKeyPem(std::string_view pem, const std::string& what);
PublicKey loadPublicKeyFile(const std::string& path);

}  // namespace pacer::fake
