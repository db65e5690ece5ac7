// APNs requests and answers (docs/push.md has the table and the reasons).
#include "pacer/push/apns.h"

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <nlohmann/json.hpp>

#include "answer_text.h"
#include "pacer/error.h"

namespace pacer::push {
namespace {

// Pacer's namespace for apns-id (a fixed random UUID; changing it would give
// every message id a new apns-id).
constexpr std::array<unsigned char, 16> kApnsIdNamespace = {0x6f, 0x1d, 0x3c, 0x2e, 0x8a, 0x4b, 0x4e, 0x57,
                                                            0x9c, 0x0d, 0x2b, 0x7a, 0x5e, 0x91, 0xf3, 0xa8};

// Each push type APNs knows, and the suffix its apns-topic must carry after
// the bundle id (Apple, "Sending notification requests to APNs", apns-push-type).
struct PushType {
  std::string_view name;
  std::string_view topic_suffix;
};
constexpr std::array<PushType, 11> kPushTypeTable = {{{"alert", ""},
                                                      {"background", ""},
                                                      {"location", ".location-query"},
                                                      {"voip", ".voip"},
                                                      {"complication", ".complication"},
                                                      {"fileprovider", ".pushkit.fileprovider"},
                                                      {"mdm", ""},
                                                      {"liveactivity", ".push-type.liveactivity"},
                                                      {"pushtotalk", ".voip-ptt"},
                                                      {"controls", ".push-type.controls"},
                                                      {"widgets", ".push-type.widgets"}}};
constexpr std::array<std::string_view, kPushTypeTable.size()> kPushTypes = [] {
  std::array<std::string_view, kPushTypeTable.size()> names{};
  for (std::size_t i = 0; i < names.size(); ++i) names[i] = kPushTypeTable[i].name;
  return names;
}();

const PushType* findPushType(std::string_view name) noexcept {
  for (const PushType& t : kPushTypeTable)
    if (t.name == name) return &t;
  return nullptr;
}

bool printableAscii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](unsigned char c) { return c > 0x20 && c < 0x7f; });
}

// A JSON object, judged without building it.
bool isJsonObject(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && text[first] == '{' && nlohmann::json::accept(text);
}

}  // namespace

std::span<const std::string_view> apnsPushTypes() noexcept { return kPushTypes; }

std::string_view apnsTopicSuffix(std::string_view push_type) noexcept {
  const PushType* t = findPushType(push_type);
  return t ? t->topic_suffix : std::string_view();
}

std::string apnsTopicFor(std::string_view topic, std::string_view push_type) {
  const std::string_view suffix = apnsTopicSuffix(push_type);
  std::string out(topic);
  if (!topic.ends_with(suffix)) out.append(suffix);
  return out;
}

void validateApnsOptions(const ApnsOptions& o) {
  if (o.topic.empty() || !printableAscii(o.topic)) throw InvalidError("APNs topic must be a non-empty bundle id");
  const PushType* type = findPushType(o.push_type);
  if (!type) {
    std::string known;
    for (std::string_view n : kPushTypes) known.append(known.empty() ? "" : ", ").append(n);
    throw InvalidError("APNs push_type '" + o.push_type + "' is not one APNs knows (" + known + ")");
  }
  // A topic made for another push type would send every token to the wrong
  // topic: APNs answers DeviceTokenNotForTopic for the whole audience.
  for (const PushType& other : kPushTypeTable) {
    if (other.topic_suffix.empty() || other.name == type->name || !o.topic.ends_with(other.topic_suffix)) continue;
    if (!type->topic_suffix.empty() && o.topic.ends_with(type->topic_suffix)) continue;
    throw InvalidError("APNs topic '" + o.topic + "' ends in '" + std::string(other.topic_suffix) +
                       "', the suffix of push type " + std::string(other.name) + ", not " + o.push_type +
                       ": give the bundle id; Pacer appends the push type's suffix");
  }
  if (o.priority != 1 && o.priority != 5 && o.priority != 10) throw InvalidError("APNs priority must be 1, 5 or 10");
  // APNs refuses background pushes sent at priority 10.
  if (o.push_type == "background" && o.priority == 10)
    throw InvalidError("APNs background pushes need priority 5 or 1");
  if (o.expiration && *o.expiration < 0) throw InvalidError("APNs expiration must be Unix seconds, or 0");
  if (o.collapse_id.size() > 64) throw InvalidError("APNs collapse_id is limited to 64 bytes");
  if (!printableAscii(o.collapse_id)) throw InvalidError("APNs collapse_id must be printable ASCII");
}

bool validDeviceToken(std::string_view token) noexcept {
  return token.size() >= 64 && token.size() <= 200 && token.size() % 2 == 0 &&
         std::all_of(token.begin(), token.end(), [](unsigned char c) { return std::isxdigit(c) != 0; });
}

std::string apnsIdFor(std::string_view message_id) {
  // RFC 4122 §4.3: SHA-1 over the namespace's bytes then the name's.
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int len = 0;
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  const bool ok = ctx != nullptr && EVP_DigestInit_ex(ctx, EVP_sha1(), nullptr) == 1 &&
                  EVP_DigestUpdate(ctx, kApnsIdNamespace.data(), kApnsIdNamespace.size()) == 1 &&
                  EVP_DigestUpdate(ctx, message_id.data(), message_id.size()) == 1 &&
                  EVP_DigestFinal_ex(ctx, digest.data(), &len) == 1;
  EVP_MD_CTX_free(ctx);
  if (!ok || len < 16) throw InvalidError("SHA-1 is unavailable for apns-id");
  digest[6] = static_cast<unsigned char>((digest[6] & 0x0f) | 0x50);  // version 5
  digest[8] = static_cast<unsigned char>((digest[8] & 0x3f) | 0x80);  // RFC 4122 variant
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 0x0f]);
  }
  return out;
}

std::size_t apnsMaxPayload(std::string_view push_type) noexcept { return push_type == "voip" ? 5120 : 4096; }

BuiltRequest buildApnsRequest(const Message& message, const ApnsOptions& options, std::string_view jwt) {
  BuiltRequest built;
  if (!validDeviceToken(message.recipient)) {
    built.reason = "invalid device token";
    return built;
  }
  if (!isJsonObject(message.payload)) {
    built.reason = "payload is not a JSON object";
    return built;
  }
  if (message.payload.size() > apnsMaxPayload(options.push_type)) {
    built.reason = "payload over " + std::to_string(apnsMaxPayload(options.push_type)) + " bytes";
    return built;
  }
  PushRequest& r = built.request;
  r.path = "/3/device/" + message.recipient;
  r.headers = {{"authorization", "bearer " + std::string(jwt)},
               {"apns-id", apnsIdFor(message.id)},
               {"apns-topic", apnsTopicFor(options.topic, options.push_type)},
               {"apns-push-type", options.push_type},
               {"apns-priority", std::to_string(options.priority)}};
  std::optional<std::int64_t> expiration = options.expiration;
  if (message.expires_at_ms > 0) {
    const std::int64_t deadline_s = message.expires_at_ms / 1000;
    expiration = expiration ? std::min(*expiration, deadline_s) : deadline_s;
  }
  if (expiration) r.headers.emplace_back("apns-expiration", std::to_string(*expiration));
  if (!options.collapse_id.empty()) r.headers.emplace_back("apns-collapse-id", options.collapse_id);
  r.body = message.payload;
  built.ok = true;
  return built;
}

PushVerdict classifyApnsAnswer(int status, std::string_view body, std::optional<Nanos> retry_after,
                               std::string_view apns_id) {
  PushVerdict v;
  SendResult& r = v.result;
  r.status = status;
  if (status == 200) {
    r.outcome = SendOutcome::kDelivered;
    r.provider_message_id = std::string(apns_id);
    return v;
  }
  const nlohmann::json doc = nlohmann::json::parse(body, nullptr, false);
  std::string reason;
  if (doc.is_object() && doc.contains("reason") && doc["reason"].is_string()) reason = doc["reason"].get<std::string>();
  r.reason = answerReason("APNs", status, reason, body);
  if (status == 410) {
    // Unregistered (the app is gone from the device) or ExpiredToken.
    r.outcome = SendOutcome::kInvalidToken;
    if (doc.is_object() && doc.contains("timestamp") && doc["timestamp"].is_number_integer()) {
      r.invalid_since_ms = std::max<std::int64_t>(0, doc["timestamp"].get<std::int64_t>());
    }
  } else if (status == 400 && (reason == "BadDeviceToken" || reason == "DeviceTokenNotForTopic")) {
    // DeviceTokenNotForTopic: the token belongs to another app (another
    // bundle id); for this sender it can never work, like a dead token.
    r.outcome = SendOutcome::kInvalidToken;
  } else if (status == 403 && reason == "ExpiredProviderToken") {
    r.outcome = SendOutcome::kFault;
    v.refresh_credential = true;
  } else if (status == 403 && (reason == "InvalidProviderToken" || reason == "MissingProviderToken")) {
    r.outcome = SendOutcome::kFault;
    v.credential_failure = true;
  } else {
    httpClassOutcome(status, retry_after, r);
    // TooManyRequests: too many notifications to this one device token. The
    // token waits; the connection and every other token may go on.
    // (TooManyProviderTokenUpdates and a 429 without a reason stay the provider's.)
    if (status == 429 && reason == "TooManyRequests") r.scope = AnswerScope::kRecipient;
  }
  return v;
}

}  // namespace pacer::push
