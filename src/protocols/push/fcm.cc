// FCM HTTP v1 requests and answers (docs/push.md has the table).
#include "pacer/push/fcm.h"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

#include "answer_text.h"
#include "pacer/error.h"

namespace pacer::push {
namespace {

std::string stringAt(const nlohmann::json& obj, const char* name) {
  const auto it = obj.find(name);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The parts of {"error": {...}} that decide: the FCM errorCode when the
// details carry one (else the RPC status), the message, and whether a field
// violation or the message names the registration token.
struct FcmError {
  std::string code;
  std::string message;
  bool token_named = false;
};

FcmError parseError(std::string_view body) {
  FcmError e;
  const nlohmann::json doc = nlohmann::json::parse(body, nullptr, false);
  if (!doc.is_object() || !doc.contains("error") || !doc["error"].is_object()) return e;
  const nlohmann::json& err = doc["error"];
  e.code = stringAt(err, "status");
  e.message = stringAt(err, "message");
  const auto details = err.find("details");
  if (details != err.end() && details->is_array()) {
    for (const auto& d : *details) {
      if (!d.is_object()) continue;
      if (const std::string code = stringAt(d, "errorCode"); !code.empty()) e.code = code;
      const auto violations = d.find("fieldViolations");
      if (violations == d.end() || !violations->is_array()) continue;
      for (const auto& f : *violations) {
        if (f.is_object() && stringAt(f, "field") == "message.token") e.token_named = true;
      }
    }
  }
  if (e.message.find("registration token") != std::string::npos) e.token_named = true;
  return e;
}

bool projectIdChar(unsigned char c) { return std::isalnum(c) != 0 || c == '-' || c == '.' || c == '_' || c == ':'; }

}  // namespace

std::string fcmPath(std::string_view project_id) {
  if (project_id.empty() || !std::all_of(project_id.begin(), project_id.end(), projectIdChar)) {
    throw InvalidError("FCM project_id must be letters, digits and -._:");
  }
  return "/v1/projects/" + std::string(project_id) + "/messages:send";
}

namespace {

// Seconds of an FCM duration ("3.5s", "60s"); nullopt when it is not one.
std::optional<std::int64_t> durationSeconds(const nlohmann::json& v) {
  if (!v.is_string()) return std::nullopt;
  const std::string s = v.get<std::string>();
  if (s.size() < 2 || s.back() != 's' || s.front() < '0' || s.front() > '9') return std::nullopt;
  std::int64_t secs = 0;
  for (std::size_t i = 0; i + 1 < s.size() && s[i] != '.'; ++i) {
    if (s[i] < '0' || s[i] > '9' || secs > 1'000'000'000'000) return std::nullopt;
    secs = secs * 10 + (s[i] - '0');
  }
  return secs;
}

std::optional<std::int64_t> integerText(const nlohmann::json& v) {
  if (!v.is_string()) return std::nullopt;
  const std::string s = v.get<std::string>();
  if (s.empty() || s.size() > 15 || s.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::stoll(s);
}

// The remaining lifetime in FCM's terms: android.ttl and, for the iOS
// override, apns.headers.apns-expiration; each kept when the payload's own
// is already shorter.
void carryDeadline(nlohmann::json& fields, std::int64_t expires_at_ms, std::int64_t now_ms) {
  const std::int64_t left_s = std::max<std::int64_t>(0, (expires_at_ms - now_ms) / 1000);
  nlohmann::json& android = fields["android"];
  if (!android.is_object()) android = nlohmann::json::object();
  const auto own_ttl = android.contains("ttl") ? durationSeconds(android["ttl"]) : std::nullopt;
  if (!own_ttl || *own_ttl > left_s) android["ttl"] = std::to_string(left_s) + "s";
  nlohmann::json& apns = fields["apns"];
  if (!apns.is_object()) apns = nlohmann::json::object();
  nlohmann::json& headers = apns["headers"];
  if (!headers.is_object()) headers = nlohmann::json::object();
  const std::int64_t deadline_s = expires_at_ms / 1000;
  const auto own_exp = headers.contains("apns-expiration") ? integerText(headers["apns-expiration"]) : std::nullopt;
  if (!own_exp || *own_exp > deadline_s) headers["apns-expiration"] = std::to_string(deadline_s);
}

}  // namespace

BuiltRequest buildFcmRequest(const Message& message, std::string_view project_id, std::string_view access_token,
                             std::int64_t now_ms) {
  BuiltRequest built;
  nlohmann::json fields = nlohmann::json::parse(message.payload, nullptr, false);
  if (!fields.is_object()) {
    built.reason = "payload is not a JSON object";
    return built;
  }
  if (message.recipient.empty()) {
    built.reason = "no recipient (an FCM registration token)";
    return built;
  }
  if (fields.contains("topic") || fields.contains("condition")) {
    built.reason = "payload names its own target (topic or condition); the recipient is the target";
    return built;
  }
  fields["token"] = message.recipient;
  if (message.expires_at_ms > 0) carryDeadline(fields, message.expires_at_ms, now_ms);
  built.request.path = fcmPath(project_id);
  built.request.headers = {{"authorization", "Bearer " + std::string(access_token)}};
  built.request.body = nlohmann::json{{"message", std::move(fields)}}.dump();
  built.ok = true;
  return built;
}

PushVerdict classifyFcmAnswer(int status, std::string_view body, std::optional<Nanos> retry_after) {
  PushVerdict v;
  SendResult& r = v.result;
  r.status = status;
  if (status == 200) {
    r.outcome = SendOutcome::kDelivered;
    const nlohmann::json doc = nlohmann::json::parse(body, nullptr, false);
    if (doc.is_object()) r.provider_message_id = stringAt(doc, "name");
    return v;
  }
  const FcmError e = parseError(body);
  const std::string named = e.code.empty() ? e.message : e.message.empty() ? e.code : e.code + ": " + e.message;
  r.reason = answerReason("FCM", status, named, body);
  if (e.code == "UNREGISTERED" || (status == 400 && e.code == "INVALID_ARGUMENT" && e.token_named)) {
    r.outcome = SendOutcome::kInvalidToken;
  } else if (status == 401 && e.code != "THIRD_PARTY_AUTH_ERROR") {
    // The access token expired or was revoked: fetch a new one, retry.
    r.outcome = SendOutcome::kFault;
    v.refresh_credential = true;
  } else {
    // Other 4xx are permanent: 400, 403 SENDER_ID_MISMATCH, 401
    // THIRD_PARTY_AUTH_ERROR (Firebase's APNs or web-push credential: a new
    // access token cannot fix it), 404.
    httpClassOutcome(status, retry_after, r);
  }
  return v;
}

}  // namespace pacer::push
