// The APNs provider token's lifetime rules (docs/push.md "Credentials").
#include <algorithm>
#include <cctype>

#include "pacer/push/credentials.h"

namespace pacer::push {
namespace {

bool usableId(const std::string& id) {
  return !id.empty() && id.size() <= 64 &&
         std::all_of(id.begin(), id.end(), [](unsigned char c) { return std::isalnum(c) != 0; });
}

}  // namespace

ApnsJwtCache::ApnsJwtCache(ApnsJwtOptions options, EcPrivateKey key)
    : options_(std::move(options)), key_(std::move(key)) {
  if (!usableId(options_.team_id)) throw InvalidError("APNs team_id must be 1-64 letters or digits");
  if (!usableId(options_.key_id)) throw InvalidError("APNs key_id must be 1-64 letters or digits");
  if (options_.refresh_after < kApnsMinTokenInterval || options_.refresh_after >= kApnsMaxTokenAge) {
    throw InvalidError("APNs token refresh_after must be at least 20 min and under 60 min");
  }
}

void ApnsJwtCache::make(WallTime now) {
  const nlohmann::json header = {{"alg", "ES256"}, {"kid", options_.key_id}};
  const nlohmann::json claims = {{"iss", options_.team_id}, {"iat", unixSeconds(now)}};
  token_ = signJwtEs256(header, claims, key_);
  issued_at_ = now;
  refused_ = false;
  ++tokens_made_;
}

const std::string& ApnsJwtCache::token(WallTime now) {
  if (now < issued_at_) issued_at_ = now;  // the wall clock stepped back
  const auto age = now - issued_at_;
  if (token_.empty() || (refused_ && age >= kApnsMinTokenInterval) || (!refused_ && age >= options_.refresh_after)) {
    make(now);
  }
  return token_;
}

bool ApnsJwtCache::usable(WallTime now) const noexcept {
  return !refused_ || now - issued_at_ >= kApnsMinTokenInterval;
}

CredentialDecision ApnsJwtCache::onExpiredProviderToken(WallTime now, std::string_view used) {
  using Action = CredentialDecision::Action;
  if (now < issued_at_) issued_at_ = now;
  const WallTime earliest = issued_at_ + std::chrono::duration_cast<std::chrono::milliseconds>(kApnsMinTokenInterval);
  if (!token_.empty() && used != token_) {
    // Sent with an older token; a newer one exists already.
    if (usable(now)) return {Action::kRetryNow, {}};
    return {Action::kPause, earliest};
  }
  if (token_.empty() || now >= earliest) {
    make(now);
    return {Action::kRetryNow, {}};
  }
  // APNs would answer TooManyProviderTokenUpdates to a new token this soon.
  refused_ = true;
  return {Action::kPause, earliest};
}

}  // namespace pacer::push
