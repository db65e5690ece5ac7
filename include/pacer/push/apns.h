// Apple Push Notification service over HTTP/2 with token (JWT) auth: the
// request for one message and the classification of its answer. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "pacer/error.h"
#include "pacer/message.h"
#include "pacer/push/request.h"
#include "pacer/time.h"

namespace pacer::push {

// Per-campaign APNs settings (the request headers of the same names).
struct ApnsOptions {
  std::string topic;                // the app's bundle id; apns-topic is apnsTopicFor(topic, push_type)
  std::string push_type = "alert";  // apns-push-type: one of apnsPushTypes()
  int priority = 10;                // apns-priority: 10 now, 5 power-saving, 1 lowest
  // apns-expiration: Unix seconds until which APNs keeps retrying an offline
  // device; 0 = deliver once or drop; nullopt = header omitted.
  std::optional<std::int64_t> expiration;
  std::string collapse_id;  // apns-collapse-id, at most 64 bytes; empty = omitted
};

// Throws InvalidError for an empty or non-printable topic, an unknown push
// type, a topic ending in another push type's suffix ("com.x.voip" for an
// alert), a priority other than 1/5/10, a background push at priority 10, a
// negative expiration or a collapse id over 64 bytes.
void validateApnsOptions(const ApnsOptions& options);

// Every apns-push-type APNs knows: alert, background, location, voip,
// complication, fileprovider, mdm, liveactivity, pushtotalk, controls, widgets.
std::span<const std::string_view> apnsPushTypes() noexcept;

// The apns-topic suffix Apple requires for `push_type` (".voip",
// ".complication", ".pushkit.fileprovider", ".location-query",
// ".push-type.liveactivity", ".voip-ptt", ".push-type.controls",
// ".push-type.widgets"); empty for alert, background and mdm (an MDM topic is
// the one in the push certificate's UID, taken as configured).
std::string_view apnsTopicSuffix(std::string_view push_type) noexcept;

// apns-topic for a bundle id (or a topic that already ends in the suffix) and
// a push type: `topic` with apnsTopicSuffix(push_type) appended unless it is
// already there.
std::string apnsTopicFor(std::string_view topic, std::string_view push_type);

// Hex (either case), even length, 64 to 200 characters.
bool validDeviceToken(std::string_view token) noexcept;

// A name-based UUID (RFC 4122 version 5, SHA-1) of `message_id` in Pacer's
// own namespace, lower-case 8-4-4-4-12: the same message id always gives the
// same apns-id, so a retry is recognisably the same notification.
std::string apnsIdFor(std::string_view message_id);

// Largest payload APNs takes: 5120 bytes for voip pushes, 4096 otherwise.
std::size_t apnsMaxPayload(std::string_view push_type) noexcept;

// POST /3/device/<recipient> with the options' headers, apns-id and
// "authorization: bearer <jwt>"; the body is the payload unchanged. Not ok
// (permanent) when the recipient is not a device token ("invalid device
// token"), the payload is not a JSON object, or it is too large. `options`
// must have passed validateApnsOptions. A message with a deadline
// (Message::expires_at_ms) sets apns-expiration to it in whole seconds,
// rounded down, or keeps options.expiration when that is earlier: APNs stops
// trying the device once the message has expired.
BuiltRequest buildApnsRequest(const Message& message, const ApnsOptions& options, std::string_view jwt);

// Classifies an APNs answer: `status`, the body ({"reason", "timestamp"} on
// errors), the Retry-After header as parsed by the sink (nullopt: absent or
// unusable), and the answer's apns-id header (the delivered message's
// provider id). The table is in docs/push.md:
//   200                               delivered
//   410 (Unregistered, ExpiredToken)  invalid token, invalid_since_ms = timestamp
//   400 BadDeviceToken                invalid token
//   400 DeviceTokenNotForTopic        invalid token (the token belongs to another app)
//   403 ExpiredProviderToken          fault + refresh_credential
//   403 InvalidProviderToken,
//       MissingProviderToken          fault + credential_failure
//   429 TooManyRequests               throttled, scope kRecipient (one device token): only
//                                     that message backs off; the provider goes on
//   429 (other reasons, or none)      throttled, Retry-After honoured
//   503 with Retry-After              throttled
//   500, 503, other 5xx, 408          fault
//   other 4xx                         permanent
//   anything else                     fault
PushVerdict classifyApnsAnswer(int status, std::string_view body, std::optional<Nanos> retry_after,
                               std::string_view apns_id);

}  // namespace pacer::push
