// What the push protocol builders hand a sink, and what the answer
// classifiers hand back. Pure value types: the sink turns a PushRequest into
// an HTTP/2 request (libcurl) and feeds the answer to the classifier.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "pacer/sink.h"

namespace pacer::push {

// One HTTP/2 POST; the sink adds the scheme and authority (api.push.apple.com,
// fcm.googleapis.com) and content-type application/json.
struct PushRequest {
  std::string path;  // ":path", e.g. "/3/device/<token>"
  // Lower-case names. "authorization" carries a secret: never log its value.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

// A built request, or why the message can never be sent as it is (the sink
// reports that as kPermanent with `reason`, without sending).
struct BuiltRequest {
  bool ok = false;
  PushRequest request;  // when ok
  std::string reason;   // when !ok
};

// A classified answer.
struct PushVerdict {
  // outcome, status, reason, retry_after (kThrottled), invalid_since_ms
  // (kInvalidToken), provider_message_id (kDelivered); the sink sets ticket
  // and latency.
  SendResult result;
  // The credential expired (APNs 403 ExpiredProviderToken, FCM 401): ask the
  // credential cache (onExpiredProviderToken / on401), then retry.
  bool refresh_credential = false;
  // The credential is wrong (APNs 403 InvalidProviderToken or
  // MissingProviderToken): no message can go until an operator fixes it; the
  // provider pauses and the message waits (outcome kFault).
  bool credential_failure = false;
};

}  // namespace pacer::push
