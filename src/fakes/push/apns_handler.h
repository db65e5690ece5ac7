// pacer-fake-apns's rules: POST /3/device/<token> with apns-topic and a
// provider token (ES256 JWT) checked like APNs does, then the shared policy.
#pragma once

#include <string>
#include <unordered_map>

#include "jwt_verify.h"
#include "push_handler.h"

namespace pacer::fake {

struct ApnsRules {
  std::string key_id;
  std::string team_id;
  int token_max_age_s = 3600;
  int token_min_interval_s = 1200;
};

// Not thread-safe (the event-loop thread owns it).
class ApnsHandler final : public PushHandler {
 public:
  ApnsHandler(PublicKey key, ApnsRules rules, PolicyOptions policy);
  Decision handle(const PushRequest& request, const PushNow& now) override;
  const char* scopeName() const noexcept override { return "topic"; }
  std::uint64_t busiest() const noexcept override { return policy_.busiest(); }

 private:
  // A provider token seen before: verifying ES256 on every request would cost
  // more than the rest of the request, so verdicts are kept (APNs caches too).
  struct TokenVerdict {
    bool valid = false;
    bool adopted = false;  // counted as the team's newest token
    std::int64_t iat = 0;
  };
  TokenVerdict& verdictOf(const std::string& jwt);
  // nullopt: the token is good to use now; else the 403/429 to answer.
  std::optional<Decision> checkProviderToken(const std::string& jwt, const PushNow& now);

  PublicKey key_;
  ApnsRules rules_;
  PushPolicy policy_;
  std::unordered_map<std::string, TokenVerdict> verdicts_;
  std::int64_t last_new_token_s_ = 0;
  bool any_token_adopted_ = false;
};

// The APNs error answer {"reason": ...} (with "timestamp" in ms for 410).
PushResponse apnsError(int status, const char* reason, std::int64_t timestamp_ms = -1);

}  // namespace pacer::fake
