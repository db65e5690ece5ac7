#include "apns_handler.h"

#include <strings.h>

namespace pacer::fake {
namespace {

constexpr std::string_view kDevicePrefix = "/3/device/";
constexpr std::size_t kMaxPayload = 4096;    // APNs' limit for ordinary notifications
constexpr std::size_t kMaxVerdicts = 10000;  // forgotten all at once beyond this

Decision refuse(Outcome outcome, PushResponse r) {
  Decision d;
  d.outcome = outcome;
  d.response = std::move(r);
  return d;
}

bool startsWithBearer(const std::string& v) { return v.size() > 7 && strncasecmp(v.c_str(), "bearer ", 7) == 0; }

}  // namespace

PushResponse apnsError(int status, const char* reason, std::int64_t timestamp_ms) {
  PushResponse r;
  r.status = status;
  r.body = std::string("{\"reason\":\"") + reason + "\"";
  if (timestamp_ms >= 0) r.body += ",\"timestamp\":" + std::to_string(timestamp_ms);
  r.body += "}";
  return r;
}

ApnsHandler::ApnsHandler(PublicKey key, ApnsRules rules, PolicyOptions policy)
    : key_(std::move(key)), rules_(std::move(rules)), policy_(std::move(policy)) {}

ApnsHandler::TokenVerdict& ApnsHandler::verdictOf(const std::string& jwt) {
  if (auto it = verdicts_.find(jwt); it != verdicts_.end()) return it->second;
  if (verdicts_.size() >= kMaxVerdicts) verdicts_.clear();
  TokenVerdict v;
  if (auto t = parseJwt(jwt)) {
    const auto& h = t->header;
    const auto& c = t->claims;
    v.valid = stringField(h, "alg") == "ES256" && stringField(h, "kid") == rules_.key_id &&
              stringField(c, "iss") == rules_.team_id && c.contains("iat") && c["iat"].is_number_integer() &&
              verifyEs256(key_.get(), t->signing_input, t->signature);
    if (v.valid) v.iat = c["iat"].get<std::int64_t>();
  }
  return verdicts_.emplace(jwt, v).first->second;
}

std::optional<Decision> ApnsHandler::checkProviderToken(const std::string& jwt, const PushNow& now) {
  auto& v = verdictOf(jwt);
  if (!v.valid) return refuse(Outcome::kAuthFailure, apnsError(403, "InvalidProviderToken"));
  if (now.wallSeconds() - v.iat > rules_.token_max_age_s)
    return refuse(Outcome::kAuthFailure, apnsError(403, "ExpiredProviderToken"));
  if (!v.adopted) {
    // A token not used before is an update of the team's token; APNs refuses
    // updates more often than every 20 minutes.
    if (any_token_adopted_ && now.wallSeconds() - last_new_token_s_ < rules_.token_min_interval_s)
      return refuse(Outcome::kAuthFailure, apnsError(429, "TooManyProviderTokenUpdates"));
    v.adopted = true;
    any_token_adopted_ = true;
    last_new_token_s_ = now.wallSeconds();
  }
  return std::nullopt;
}

Decision ApnsHandler::handle(const PushRequest& r, const PushNow& now) {
  const std::string_view path = r.path;
  if (path.substr(0, kDevicePrefix.size()) != kDevicePrefix || path.size() == kDevicePrefix.size())
    return refuse(Outcome::kBadRequest, apnsError(404, "BadPath"));
  if (r.method != "POST") return refuse(Outcome::kBadRequest, apnsError(405, "MethodNotAllowed"));
  const std::string_view token = path.substr(kDevicePrefix.size());
  if (token.find('/') != std::string_view::npos) return refuse(Outcome::kBadRequest, apnsError(404, "BadPath"));
  if (r.authorization.empty()) return refuse(Outcome::kAuthFailure, apnsError(403, "MissingProviderToken"));
  if (!startsWithBearer(r.authorization)) return refuse(Outcome::kAuthFailure, apnsError(403, "InvalidProviderToken"));
  if (auto refused = checkProviderToken(r.authorization.substr(7), now)) return std::move(*refused);
  if (r.apns_topic.empty()) return refuse(Outcome::kBadRequest, apnsError(400, "MissingTopic"));
  if (r.body.empty()) return refuse(Outcome::kBadRequest, apnsError(400, "PayloadEmpty"));
  if (r.body.size() > kMaxPayload) return refuse(Outcome::kBadRequest, apnsError(413, "PayloadTooLarge"));

  Decision d;
  d.id = r.apns_id.empty() ? policy_.randomId(true) : r.apns_id;
  switch (policy_.decide(token, now.mono)) {
    case Verdict::kUnregistered:
      d.outcome = Outcome::kInvalid;
      d.response = apnsError(410, "Unregistered", now.wall_us / 1000);
      break;
    case Verdict::kFault500:
      d.outcome = Outcome::kFault;
      d.response = apnsError(500, "InternalServerError");
      break;
    case Verdict::kFault503:
      d.outcome = Outcome::kFault;
      d.response = apnsError(503, "ServiceUnavailable");
      break;
    case Verdict::kThrottle:
      d.outcome = Outcome::kThrottled;
      d.response = apnsError(429, "TooManyRequests");
      break;
    case Verdict::kThrottleToken:  // too many notifications to this one device
      d.outcome = Outcome::kThrottled;
      d.per_token = true;
      d.response = apnsError(429, "TooManyRequests");
      break;
    case Verdict::kThrottleNoise:  // at random, whatever the rate: Apple's answer, without retry-after
      d.outcome = Outcome::kThrottled;
      d.noise = true;
      d.response = apnsError(429, "TooManyRequests");
      break;
    case Verdict::kAccept:
      d.outcome = Outcome::kAccepted;
      d.token = std::string(token);
      d.scope = r.apns_topic;
      d.apns_expiration = r.apns_expiration;
      break;
  }
  d.response.headers.emplace_back("apns-id", d.id);
  return d;
}

}  // namespace pacer::fake
