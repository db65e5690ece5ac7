// pacer-fake-fcm's rules: the OAuth2 token endpoint (POST /token, an RS256
// JWT-bearer assertion) and FCM HTTP v1 (POST /v1/projects/<p>/messages:send
// with an access token it issued), then the shared policy.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "jwt_verify.h"
#include "push_handler.h"

namespace pacer::fake {

struct FcmRules {
  std::string sa_email;                // empty: any non-empty iss
  std::vector<std::string> audiences;  // accepted aud values of the assertion
  int token_ttl_s = 3600;
};

// Not thread-safe (the event-loop thread owns it).
class FcmHandler final : public PushHandler {
 public:
  FcmHandler(PublicKey key, FcmRules rules, PolicyOptions policy);
  Decision handle(const PushRequest& request, const PushNow& now) override;
  const char* scopeName() const noexcept override { return "project"; }
  std::uint64_t busiest() const noexcept override { return policy_.busiest(); }
  // Without a --token-url, the assertion's aud is this server's /token.
  void onListening(int port) override;

 private:
  Decision issueToken(const PushRequest& r, const PushNow& now);
  Decision send(const PushRequest& r, std::string_view project, const PushNow& now);
  bool assertionValid(std::string_view assertion, const PushNow& now) const;

  PublicKey key_;
  FcmRules rules_;
  PushPolicy policy_;
  std::unordered_map<std::string, std::int64_t> access_tokens_;  // token -> expiry (wall s)
  std::uint64_t sequence_ = 0;
};

// Google's error JSON: {"error":{"code","message","status"[,"details"]}}.
PushResponse googleError(int status, const char* code, const char* message, const char* fcm_error_code = nullptr);
// application/x-www-form-urlencoded value of `key` (decoded), or nullopt.
std::optional<std::string> formValue(std::string_view body, std::string_view key);

}  // namespace pacer::fake
