// The push providers' credentials as pure policy: which token to send, when
// to make or fetch a new one, and what to do when the provider refuses one.
// Time is always an argument (wall time: both tokens carry Unix times that
// the provider checks against its own clock). Not thread-safe: one owner
// (the sink's thread) calls everything.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "pacer/push/jwt.h"
#include "pacer/time.h"
#include "pacer/wall_time.h"

namespace pacer::push {

// APNs refuses provider tokens that change more often than this
// (403 TooManyProviderTokenUpdates) and tokens older than kApnsMaxTokenAge
// (403 ExpiredProviderToken).
inline constexpr Nanos kApnsMinTokenInterval = std::chrono::minutes(20);
inline constexpr Nanos kApnsMaxTokenAge = std::chrono::minutes(60);

// What the provider does after a refused credential.
struct CredentialDecision {
  enum class Action {
    kRetryNow,      // a newer credential is ready: retry the message with it
    kWaitForToken,  // a new token is being fetched: hold messages until usable()
    kPause,         // no new credential before pause_until: the provider waits
  };
  Action action = Action::kRetryNow;
  WallTime pause_until{};  // kPause only
};

struct ApnsJwtOptions {
  std::string team_id;  // "iss": the Apple developer team (10 characters)
  std::string key_id;   // "kid": the .p8 key's id (10 characters)
  // A token is replaced when it gets this old: in [20 min, 60 min).
  Nanos refresh_after = std::chrono::minutes(40);
};

// The APNs provider token: {alg: ES256, kid} . {iss: team_id, iat}.
class ApnsJwtCache {
 public:
  // Throws InvalidError for empty or non-alphanumeric ids, or refresh_after
  // outside [20 min, 60 min).
  ApnsJwtCache(ApnsJwtOptions options, EcPrivateKey key);

  // The token to send at `now`. Makes one when there is none, when the
  // current one's age reached refresh_after, or when APNs called it expired
  // and 20 min have passed since it was made; never two within 20 min. While
  // usable(now) is false it returns the refused token: hold messages instead.
  // A wall clock that stepped back counts the age from the new time.
  const std::string& token(WallTime now);
  // False only while APNs has refused the current token as expired and no
  // new one may be made yet.
  bool usable(WallTime now) const noexcept;
  // A 403 ExpiredProviderToken for a request sent with `used`: kRetryNow when
  // a newer token exists or one was made now (the current one was >= 20 min
  // old), else kPause until the current one is 20 min old.
  CredentialDecision onExpiredProviderToken(WallTime now, std::string_view used);

  WallTime issuedAt() const noexcept { return issued_at_; }
  std::uint64_t tokensMade() const noexcept { return tokens_made_; }

 private:
  void make(WallTime now);

  ApnsJwtOptions options_;
  EcPrivateKey key_;
  std::string token_;
  WallTime issued_at_{};
  bool refused_ = false;  // APNs called token_ expired
  std::uint64_t tokens_made_ = 0;
};

// The fields Pacer uses from a Google service-account JSON file.
struct ServiceAccount {
  std::string client_email;
  std::string private_key;  // PEM; never logged
  std::string token_uri;
  std::string project_id;
};

// Throws PushCredentialError naming the missing or malformed field (never a
// value of it) when the text is not a service-account JSON object.
ServiceAccount parseServiceAccount(std::string_view json_text);

inline constexpr std::string_view kFcmScope = "https://www.googleapis.com/auth/firebase.messaging";

// One POST to the token endpoint.
struct TokenRequest {
  std::string url;
  std::string content_type = "application/x-www-form-urlencoded";
  std::string body;  // grant_type=...jwt-bearer&assertion=<RS256 JWT>; never logged
};

struct OAuthOptions {
  Nanos refresh_margin = std::chrono::minutes(5);   // fetch this long before expiry
  Nanos backoff_initial = std::chrono::seconds(1);  // after a failed fetch, doubling
  Nanos backoff_max = std::chrono::minutes(5);
};

// How one token fetch ended.
struct FetchResult {
  bool ok = false;
  std::string reason;  // !ok: "HTTP 400 invalid_grant: ..." (no secrets)
};

// The FCM access token (OAuth 2.0 JWT bearer grant, RFC 7523).
class OAuthTokenCache {
 public:
  // Loads the account's RSA key; throws PushCredentialError for a bad key or
  // an empty client_email / token_uri, InvalidError for bad options.
  explicit OAuthTokenCache(const ServiceAccount& account, OAuthOptions options = {});

  // Whether to start a fetch at `now`: none in flight, the backoff after a
  // failure has passed, and there is no token, or it was dropped, or it is
  // within the margin of its expiry.
  bool wantsFetch(WallTime now) const noexcept;
  // The request to send now; marks a fetch in flight. The assertion is
  // {iss: client_email, scope, aud: token_uri, iat: now, exp: now+3600}.
  TokenRequest startFetch(WallTime now);
  // The token endpoint's answer; ends the fetch. A token's lifetime counts
  // from the fetch's start, so it is never used past what expires_in allows.
  FetchResult onFetchAnswer(WallTime now, int status, std::string_view body);
  // The fetch got no answer (connection refused, timeout); ends it.
  void onFetchFailed(WallTime now);

  // Whether accessToken() may be sent at `now`; messages wait otherwise.
  bool usable(WallTime now) const noexcept;
  const std::string& accessToken() const noexcept { return token_; }
  WallTime expiresAt() const noexcept { return expires_at_; }
  // When wantsFetch() next turns true if nothing else happens (for a wait);
  // meaningless while a fetch is in flight.
  WallTime nextFetchAt() const noexcept;
  std::uint64_t fetchesStarted() const noexcept { return fetches_started_; }

  // A 401 for a request sent with `used`. The current token is dropped and
  // fetched once more (kWaitForToken); if the token that drew the 401 was
  // itself fetched after a 401, the credential is bad: kPause, the backoff
  // doubling with each such token until one lives to its routine refresh.
  // kRetryNow when a newer token is already there.
  CredentialDecision on401(WallTime now, std::string_view used);

 private:
  void failed(WallTime now);
  Nanos backoff(int failures) const noexcept;

  std::string client_email_;
  std::string token_uri_;
  RsaPrivateKey key_;
  OAuthOptions options_;
  std::string token_;
  WallTime expires_at_{};
  WallTime refresh_at_{};
  WallTime fetch_started_{};
  WallTime backoff_until_{};
  bool in_flight_ = false;
  bool refetch_after_401_ = false;  // the fetch in flight, or the token, follows a 401
  bool token_after_401_ = false;
  int failures_ = 0;  // failed fetches in a row
  int rejected_ = 0;  // tokens refused with 401 right after a 401, in a row
  std::uint64_t fetches_started_ = 0;
};

}  // namespace pacer::push
