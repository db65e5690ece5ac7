// The push sinks' keys: sink.apns.*, sink.fcm.* and the HTTP/2 transport
// they share, sink.push.* (docs/push.md).
#include <chrono>

#include "pacer/sinks/sink_registry.h"

namespace pacer::sink {

std::vector<SinkKey> pushSinkKeys() {
  return {
      {"sink.apns.url", KeyShape::kScalar, "--apns-url", KeyFlag::kValue, false,
       "sink apns: scheme and authority (default https://api.push.apple.com)",
       [](const KeyValue& v, SinkSettings& s) { s.push.apns_url = v.asNonEmpty(); }},
      {"sink.apns.key_file", KeyShape::kScalar, "--apns-key-file", KeyFlag::kValue, false,
       "sink apns: the .p8 signing key (PEM); never logged",
       [](const KeyValue& v, SinkSettings& s) { s.push.apns_key_file = v.asString(); }},
      {"sink.apns.key_id", KeyShape::kScalar, "--apns-key-id", KeyFlag::kValue, false, "sink apns: the key's id (kid)",
       [](const KeyValue& v, SinkSettings& s) { s.push.apns_key_id = v.asString(); }},
      {"sink.apns.team_id", KeyShape::kScalar, "--apns-team-id", KeyFlag::kValue, false,
       "sink apns: the developer team (iss)",
       [](const KeyValue& v, SinkSettings& s) { s.push.apns_team_id = v.asString(); }},
      {"sink.apns.token_refresh_min", KeyShape::kScalar, "--apns-token-refresh-min", KeyFlag::kValue, false,
       "sink apns: a new provider token this often, 20 to 59 minutes (default 40)",
       [](const KeyValue& v, SinkSettings& s) { s.push.apns_token_refresh = std::chrono::minutes(v.asInt(20, 59)); }},
      {"sink.apns.topic", KeyShape::kScalar, "--apns-topic", KeyFlag::kValue, false,
       "sink apns: the app's bundle id; apns-topic is it with the push type's suffix (.voip, ...)",
       [](const KeyValue& v, SinkSettings& s) { s.push.apns.topic = v.asString(); }},
      {"sink.apns.push_type", KeyShape::kScalar, "--apns-push-type", KeyFlag::kValue, false,
       "sink apns: apns-push-type (default alert)",
       [](const KeyValue& v, SinkSettings& s) { s.push.apns.push_type = v.asNonEmpty(); }},
      {"sink.apns.priority", KeyShape::kScalar, "--apns-priority", KeyFlag::kValue, false,
       "sink apns: apns-priority, 10, 5 or 1 (default 10)",
       [](const KeyValue& v, SinkSettings& s) { s.push.apns.priority = static_cast<int>(v.asInt(1, 10)); }},
      {"sink.apns.expiration", KeyShape::kScalar, "--apns-expiration", KeyFlag::kValue, false,
       "sink apns: apns-expiration in Unix seconds, 0: deliver once or drop (default: header omitted)",
       [](const KeyValue& v, SinkSettings& s) { s.push.apns.expiration = v.asInt(0); }},
      {"sink.apns.collapse_id", KeyShape::kScalar, "--apns-collapse-id", KeyFlag::kValue, false,
       "sink apns: apns-collapse-id (default: omitted)",
       [](const KeyValue& v, SinkSettings& s) { s.push.apns.collapse_id = v.asString(); }},
      {"sink.apns.campaign_headers", KeyShape::kMap, "--apns-campaign-header", KeyFlag::kRepeat, false,
       "sink apns: CAMPAIGN/HEADER=VALUE, one campaign's apns-topic, apns-push-type, apns-priority, apns-expiration "
       "or apns-collapse-id (repeatable)",
       [](const KeyValue& v, SinkSettings& s) {
         for (const auto& [k, header] : v.asMap()) {
           const auto slash = k.rfind('/');
           if (slash == std::string::npos || slash == 0 || slash + 1 == k.size())
             v.fail("CAMPAIGN/HEADER keys, such as spring-sale/apns-priority");
           s.push.apns_campaign_headers[k.substr(0, slash)][k.substr(slash + 1)] = header;
         }
       }},
      {"sink.fcm.url", KeyShape::kScalar, "--fcm-url", KeyFlag::kValue, false,
       "sink fcm: scheme and authority of messages:send (default https://fcm.googleapis.com)",
       [](const KeyValue& v, SinkSettings& s) { s.push.fcm_url = v.asNonEmpty(); }},
      {"sink.fcm.service_account_file", KeyShape::kScalar, "--fcm-service-account-file", KeyFlag::kValue, false,
       "sink fcm: the service-account JSON (its private key and token_uri); never logged",
       [](const KeyValue& v, SinkSettings& s) { s.push.fcm_service_account_file = v.asString(); }},
      {"sink.fcm.project_id", KeyShape::kScalar, "--fcm-project-id", KeyFlag::kValue, false,
       "sink fcm: the Firebase project (default: the service account's project_id)",
       [](const KeyValue& v, SinkSettings& s) { s.push.fcm_project_id = v.asString(); }},
      {"sink.push.transport", KeyShape::kScalar, "--push-transport", KeyFlag::kValue, false,
       "sink apns/fcm: HTTP/2 client, h2 (nghttp2) or curl (libcurl) (default h2)",
       [](const KeyValue& v, SinkSettings& s) {
         const std::string text = v.asString();
         if (text == "h2") {
           s.push.transport = PushTransport::kH2;
         } else if (text == "curl") {
           s.push.transport = PushTransport::kCurl;
         } else {
           v.fail("h2 or curl");
         }
       }},
      {"sink.push.connections", KeyShape::kScalar, "--push-connections", KeyFlag::kValue, false,
       "sink apns/fcm: HTTP/2 connections per worker (default 1)",
       [](const KeyValue& v, SinkSettings& s) { s.push.connections = static_cast<std::size_t>(v.asInt(1, 64)); }},
      {"sink.push.max_streams", KeyShape::kScalar, "--push-max-streams", KeyFlag::kValue, false,
       "sink apns/fcm: streams per connection at most; the server's own limit applies too (default 1000)",
       [](const KeyValue& v, SinkSettings& s) { s.push.max_streams = static_cast<std::size_t>(v.asInt(1, 100000)); }},
      {"sink.push.ca_file", KeyShape::kScalar, "--push-ca-file", KeyFlag::kValue, false,
       "sink apns/fcm: CA certificates to trust instead of the system's (PEM)",
       [](const KeyValue& v, SinkSettings& s) { s.push.ca_file = v.asString(); }},
      {"sink.push.timeout_ms", KeyShape::kScalar, "--push-timeout-ms", KeyFlag::kValue, false,
       "sink apns/fcm: total timeout per request (default 10000)",
       [](const KeyValue& v, SinkSettings& s) { s.push.timeout = std::chrono::milliseconds(v.asInt(1)); }},
  };
}

}  // namespace pacer::sink
