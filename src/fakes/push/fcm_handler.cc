#include "fcm_handler.h"

#include <strings.h>

#include <initializer_list>

#include <nlohmann/json.hpp>

namespace pacer::fake {
namespace {

constexpr std::string_view kProjectsPrefix = "/v1/projects/";
constexpr std::string_view kSendSuffix = "/messages:send";
constexpr std::string_view kJwtBearer = "urn:ietf:params:oauth:grant-type:jwt-bearer";
constexpr std::int64_t kMaxAssertionLifetimeS = 3600;  // Google refuses longer-lived assertions
constexpr std::int64_t kClockSkewS = 60;
constexpr std::size_t kMaxAccessTokens = 100000;

Decision answer(Outcome outcome, PushResponse r) {
  Decision d;
  d.outcome = outcome;
  d.response = std::move(r);
  return d;
}

PushResponse oauthError(const char* error, const char* description) {
  PushResponse r;
  r.status = 400;
  r.body = std::string("{\"error\":\"") + error + "\",\"error_description\":\"" + description + "\"}";
  return r;
}

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::optional<std::string> urlDecode(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '+') {
      out.push_back(' ');
    } else if (in[i] == '%') {
      if (i + 2 >= in.size()) return std::nullopt;
      const int hi = hexValue(in[i + 1]), lo = hexValue(in[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else {
      out.push_back(in[i]);
    }
  }
  return out;
}

// The lifetime a message names, as text for the record: android.ttl
// ("12s") and apns.headers.apns-expiration (Unix seconds, a string in FCM's
// API); whatever is not a string is left out.
void recordLifetime(const nlohmann::json& message, Decision& d) {
  const auto text = [](const nlohmann::json& j, std::initializer_list<const char*> path) -> std::string {
    const nlohmann::json* at = &j;
    for (const char* key : path) {
      if (!at->is_object() || !at->contains(key)) return {};
      at = &(*at)[key];
    }
    return at->is_string() ? at->get<std::string>() : std::string{};
  };
  d.android_ttl = text(message, {"android", "ttl"});
  d.apns_expiration = text(message, {"apns", "headers", "apns-expiration"});
}

}  // namespace

PushResponse googleError(int status, const char* code, const char* message, const char* fcm_error_code) {
  nlohmann::json e = {{"code", status}, {"message", message}, {"status", code}};
  if (fcm_error_code != nullptr)
    e["details"] = nlohmann::json::array(
        {{{"@type", "type.googleapis.com/google.firebase.fcm.v1.FcmError"}, {"errorCode", fcm_error_code}}});
  PushResponse r;
  r.status = status;
  r.body = nlohmann::json{{"error", e}}.dump();
  return r;
}

std::optional<std::string> formValue(std::string_view body, std::string_view key) {
  while (!body.empty()) {
    const auto amp = body.find('&');
    const std::string_view pair = body.substr(0, amp);
    const auto eq = pair.find('=');
    if (eq != std::string_view::npos && pair.substr(0, eq) == key) return urlDecode(pair.substr(eq + 1));
    if (amp == std::string_view::npos) break;
    body.remove_prefix(amp + 1);
  }
  return std::nullopt;
}

FcmHandler::FcmHandler(PublicKey key, FcmRules rules, PolicyOptions policy)
    : key_(std::move(key)), rules_(std::move(rules)), policy_(std::move(policy)) {}

void FcmHandler::onListening(int port) {
  if (!rules_.audiences.empty()) return;
  rules_.audiences = {"https://127.0.0.1:" + std::to_string(port) + "/token",
                      "https://localhost:" + std::to_string(port) + "/token"};
}

bool FcmHandler::assertionValid(std::string_view assertion, const PushNow& now) const {
  auto t = parseJwt(assertion);
  if (!t || stringField(t->header, "alg") != "RS256") return false;
  if (!verifyRs256(key_.get(), t->signing_input, t->signature)) return false;
  const auto& c = t->claims;
  const std::string iss = stringField(c, "iss");
  if (iss.empty() || (!rules_.sa_email.empty() && iss != rules_.sa_email)) return false;
  const std::string aud = stringField(c, "aud");
  bool aud_ok = false;
  for (const auto& a : rules_.audiences) aud_ok = aud_ok || a == aud;
  if (!aud_ok) return false;
  if (!c.contains("exp") || !c["exp"].is_number_integer() || !c.contains("iat") || !c["iat"].is_number_integer())
    return false;
  const auto exp = c["exp"].get<std::int64_t>(), iat = c["iat"].get<std::int64_t>();
  const auto s = now.wallSeconds();
  return exp > s && iat <= s + kClockSkewS && exp - iat <= kMaxAssertionLifetimeS;
}

Decision FcmHandler::issueToken(const PushRequest& r, const PushNow& now) {
  const auto grant = formValue(r.body, "grant_type");
  if (!grant || *grant != kJwtBearer)
    return answer(Outcome::kAuthFailure, oauthError("unsupported_grant_type", "Invalid grant_type"));
  const auto assertion = formValue(r.body, "assertion");
  if (!assertion || !assertionValid(*assertion, now))
    return answer(Outcome::kAuthFailure, oauthError("invalid_grant", "Invalid JWT Signature or claims."));
  if (access_tokens_.size() >= kMaxAccessTokens)
    std::erase_if(access_tokens_, [&](const auto& kv) { return kv.second <= now.wallSeconds(); });
  std::string token = "ya29.fake-" + policy_.randomId(false);
  access_tokens_[token] = now.wallSeconds() + rules_.token_ttl_s;
  Decision d;
  d.outcome = Outcome::kTokenIssued;
  d.response.body = "{\"access_token\":\"" + token + "\",\"expires_in\":" + std::to_string(rules_.token_ttl_s) +
                    ",\"token_type\":\"Bearer\"}";
  return d;
}

Decision FcmHandler::send(const PushRequest& r, std::string_view project, const PushNow& now) {
  const std::string& auth = r.authorization;
  const bool bearer = auth.size() > 7 && strncasecmp(auth.c_str(), "bearer ", 7) == 0;
  const auto it = bearer ? access_tokens_.find(auth.substr(7)) : access_tokens_.end();
  if (it == access_tokens_.end() || it->second <= now.wallSeconds())
    return answer(Outcome::kAuthFailure,
                  googleError(401, "UNAUTHENTICATED", "Request had invalid authentication credentials."));
  const auto body = nlohmann::json::parse(r.body, nullptr, false);
  const nlohmann::json* token = nullptr;
  if (body.is_object() && body.contains("message") && body["message"].is_object() &&
      body["message"].contains("token") && body["message"]["token"].is_string())
    token = &body["message"]["token"];
  if (token == nullptr || token->get_ref<const std::string&>().empty())
    return answer(Outcome::kBadRequest,
                  googleError(400, "INVALID_ARGUMENT", "Request contains an invalid argument.", "INVALID_ARGUMENT"));
  const std::string& device = token->get_ref<const std::string&>();

  Decision d;
  const Verdict v = policy_.decide(device, now.mono);
  switch (v) {
    case Verdict::kUnregistered:
      d.outcome = Outcome::kInvalid;
      d.response = googleError(404, "NOT_FOUND", "Requested entity was not found.", "UNREGISTERED");
      break;
    case Verdict::kFault500:
      d.outcome = Outcome::kFault;
      d.response = googleError(500, "INTERNAL", "Internal error encountered.", "INTERNAL");
      break;
    case Verdict::kFault503:
      d.outcome = Outcome::kFault;
      d.response = googleError(503, "UNAVAILABLE", "The service is currently unavailable.", "UNAVAILABLE");
      break;
    case Verdict::kThrottle:
    case Verdict::kThrottleToken:  // FCM's device message rate answers the same QUOTA_EXCEEDED
    case Verdict::kThrottleNoise:
      d.outcome = Outcome::kThrottled;
      d.noise = v == Verdict::kThrottleNoise;
      d.response = googleError(429, "RESOURCE_EXHAUSTED", "Quota exceeded for sending messages.", "QUOTA_EXCEEDED");
      break;
    case Verdict::kAccept: {
      d.outcome = Outcome::kAccepted;
      // FCM's message ids are opaque; a hash of the token and a sequence number is unique enough.
      const std::size_t h = std::hash<std::string_view>{}(device) ^ (++sequence_ * 0x9e3779b97f4a7c15ULL);
      char id[40];
      std::snprintf(id, sizeof id, "0:%lld%%%016zx", static_cast<long long>(now.wall_us), h);
      d.id = id;
      d.token = device;
      d.scope = std::string(project);
      d.response.body = "{\"name\":\"projects/" + d.scope + "/messages/" + d.id + "\"}";
      recordLifetime(body["message"], d);
      break;
    }
  }
  return d;
}

Decision FcmHandler::handle(const PushRequest& r, const PushNow& now) {
  const std::string_view path = r.path;
  const bool is_token = path == "/token";
  const bool is_send = path.starts_with(kProjectsPrefix) && path.ends_with(kSendSuffix) &&
                       path.size() > kProjectsPrefix.size() + kSendSuffix.size();
  if (!is_token && !is_send) return answer(Outcome::kBadRequest, googleError(404, "NOT_FOUND", "Not found."));
  if (r.method != "POST")
    return answer(Outcome::kBadRequest, googleError(405, "METHOD_NOT_ALLOWED", "Method not allowed."));
  if (is_token) return issueToken(r, now);
  const std::string_view project =
      path.substr(kProjectsPrefix.size(), path.size() - kProjectsPrefix.size() - kSendSuffix.size());
  if (project.find('/') != std::string_view::npos)
    return answer(Outcome::kBadRequest, googleError(404, "NOT_FOUND", "Not found."));
  return send(r, project, now);
}

}  // namespace pacer::fake
