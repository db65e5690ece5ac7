// Firebase Cloud Messaging HTTP v1: the request for one message and the
// classification of its answer. Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "pacer/error.h"
#include "pacer/message.h"
#include "pacer/push/request.h"
#include "pacer/time.h"

namespace pacer::push {

// "/v1/projects/<project_id>/messages:send". Throws InvalidError for a
// project id that is empty or has characters other than [A-Za-z0-9-._:].
std::string fcmPath(std::string_view project_id);

// POST fcmPath(project_id) with body {"message": {<payload's fields>,
// "token": recipient}} and "authorization: Bearer <access_token>". Not ok
// (permanent) when the payload is not a JSON object ("payload is not a JSON
// object"), the recipient is empty, or the payload names its own target
// ("topic" or "condition": FCM takes exactly one).
// A message with a deadline (Message::expires_at_ms) carries its remaining
// lifetime at `now_ms` (Unix milliseconds): android.ttl = "<whole seconds
// left>s" (at least "0s": now or never) and, for iOS devices,
// apns.headers.apns-expiration = the deadline in Unix seconds; a shorter
// android.ttl or earlier apns-expiration already in the payload is kept.
BuiltRequest buildFcmRequest(const Message& message, std::string_view project_id, std::string_view access_token,
                             std::int64_t now_ms = 0);

// Classifies an FCM answer from the status and the error JSON
// ({"error": {"status", "message", "details": [{"errorCode"}, ...]}}):
//   200                                     delivered, provider id = "name"
//   UNREGISTERED (404), or 400
//     INVALID_ARGUMENT naming the token     invalid token
//   other 400                               permanent
//   401 THIRD_PARTY_AUTH_ERROR              permanent (the APNs/web-push credential in Firebase)
//   other 401                               fault + refresh_credential
//   403 (SENDER_ID_MISMATCH, ...)           permanent
//   429 (QUOTA_EXCEEDED, RESOURCE_EXHAUSTED) throttled, Retry-After honoured
//   503 with Retry-After                    throttled
//   500, 503, other 5xx, 408                fault
//   other 4xx                               permanent
// `retry_after` is the Retry-After header as parsed by the sink.
PushVerdict classifyFcmAnswer(int status, std::string_view body, std::optional<Nanos> retry_after);

}  // namespace pacer::push
