// The push sinks' keys: sink.apns.*, sink.fcm.* and the HTTP/2 transport
// they share, sink.push.*; and the worker's dead-token guard,
// limits.dead_token_* (docs/push.md).
#include <algorithm>

#include "config_keys.h"

namespace pacer::config::detail {

std::vector<Key> pushKeys() {
  return {
      {"sink.apns.url", Shape::kScalar, "--apns-url", FlagForm::kValue, false, false,
       "sink apns: scheme and authority (default https://api.push.apple.com)",
       [](const Raw& r, Ctx& c) { c.o.push.apns_url = asNonEmpty(r); }},
      {"sink.apns.key_file", Shape::kScalar, "--apns-key-file", FlagForm::kValue, false, false,
       "sink apns: the .p8 signing key (PEM); never logged",
       [](const Raw& r, Ctx& c) { c.o.push.apns_key_file = asString(r); }},
      {"sink.apns.key_id", Shape::kScalar, "--apns-key-id", FlagForm::kValue, false, false,
       "sink apns: the key's id (kid)", [](const Raw& r, Ctx& c) { c.o.push.apns_key_id = asString(r); }},
      {"sink.apns.team_id", Shape::kScalar, "--apns-team-id", FlagForm::kValue, false, false,
       "sink apns: the developer team (iss)", [](const Raw& r, Ctx& c) { c.o.push.apns_team_id = asString(r); }},
      {"sink.apns.token_refresh_min", Shape::kScalar, "--apns-token-refresh-min", FlagForm::kValue, false, false,
       "sink apns: a new provider token this often, 20 to 59 minutes (default 40)",
       [](const Raw& r, Ctx& c) { c.o.push.apns_token_refresh = std::chrono::minutes(asInt(r, 20, 59)); }},
      {"sink.apns.topic", Shape::kScalar, "--apns-topic", FlagForm::kValue, false, false,
       "sink apns: the app's bundle id; apns-topic is it with the push type's suffix (.voip, ...)",
       [](const Raw& r, Ctx& c) { c.o.push.apns.topic = asString(r); }},
      {"sink.apns.push_type", Shape::kScalar, "--apns-push-type", FlagForm::kValue, false, false,
       "sink apns: apns-push-type (default alert)",
       [](const Raw& r, Ctx& c) { c.o.push.apns.push_type = asNonEmpty(r); }},
      {"sink.apns.priority", Shape::kScalar, "--apns-priority", FlagForm::kValue, false, false,
       "sink apns: apns-priority, 10, 5 or 1 (default 10)",
       [](const Raw& r, Ctx& c) { c.o.push.apns.priority = static_cast<int>(asInt(r, 1, 10)); }},
      {"sink.apns.expiration", Shape::kScalar, "--apns-expiration", FlagForm::kValue, false, false,
       "sink apns: apns-expiration in Unix seconds, 0: deliver once or drop (default: header omitted)",
       [](const Raw& r, Ctx& c) { c.o.push.apns.expiration = asInt(r, 0); }},
      {"sink.apns.collapse_id", Shape::kScalar, "--apns-collapse-id", FlagForm::kValue, false, false,
       "sink apns: apns-collapse-id (default: omitted)",
       [](const Raw& r, Ctx& c) { c.o.push.apns.collapse_id = asString(r); }},
      {"sink.apns.campaign_headers", Shape::kMap, "--apns-campaign-header", FlagForm::kRepeat, false, false,
       "sink apns: CAMPAIGN/HEADER=VALUE, one campaign's apns-topic, apns-push-type, apns-priority, apns-expiration "
       "or apns-collapse-id (repeatable)",
       [](const Raw& r, Ctx& c) {
         for (const auto& [k, v] : asMap(r)) {
           const auto slash = k.rfind('/');
           if (slash == std::string::npos || slash == 0 || slash + 1 == k.size())
             fail(r, "CAMPAIGN/HEADER keys, such as spring-sale/apns-priority");
           c.o.push.apns_campaign_headers[k.substr(0, slash)][k.substr(slash + 1)] = v;
         }
       }},
      {"sink.fcm.url", Shape::kScalar, "--fcm-url", FlagForm::kValue, false, false,
       "sink fcm: scheme and authority of messages:send (default https://fcm.googleapis.com)",
       [](const Raw& r, Ctx& c) { c.o.push.fcm_url = asNonEmpty(r); }},
      {"sink.fcm.service_account_file", Shape::kScalar, "--fcm-service-account-file", FlagForm::kValue, false, false,
       "sink fcm: the service-account JSON (its private key and token_uri); never logged",
       [](const Raw& r, Ctx& c) { c.o.push.fcm_service_account_file = asString(r); }},
      {"sink.fcm.project_id", Shape::kScalar, "--fcm-project-id", FlagForm::kValue, false, false,
       "sink fcm: the Firebase project (default: the service account's project_id)",
       [](const Raw& r, Ctx& c) { c.o.push.fcm_project_id = asString(r); }},
      {"sink.push.transport", Shape::kScalar, "--push-transport", FlagForm::kValue, false, false,
       "sink apns/fcm: HTTP/2 client, h2 (nghttp2) or curl (libcurl) (default h2)",
       [](const Raw& r, Ctx& c) {
         const std::string v = asString(r);
         if (v == "h2") {
           c.o.push.transport = sink::PushTransport::kH2;
         } else if (v == "curl") {
           c.o.push.transport = sink::PushTransport::kCurl;
         } else {
           fail(r, "h2 or curl");
         }
       }},
      {"sink.push.connections", Shape::kScalar, "--push-connections", FlagForm::kValue, false, false,
       "sink apns/fcm: HTTP/2 connections per worker (default 1)",
       [](const Raw& r, Ctx& c) { c.o.push.connections = static_cast<std::size_t>(asInt(r, 1, 64)); }},
      {"sink.push.max_streams", Shape::kScalar, "--push-max-streams", FlagForm::kValue, false, false,
       "sink apns/fcm: streams per connection at most; the server's own limit applies too (default 1000)",
       [](const Raw& r, Ctx& c) { c.o.push.max_streams = static_cast<std::size_t>(asInt(r, 1, 100000)); }},
      {"sink.push.ca_file", Shape::kScalar, "--push-ca-file", FlagForm::kValue, false, false,
       "sink apns/fcm: CA certificates to trust instead of the system's (PEM)",
       [](const Raw& r, Ctx& c) { c.o.push.ca_file = asString(r); }},
      {"sink.push.timeout_ms", Shape::kScalar, "--push-timeout-ms", FlagForm::kValue, false, false,
       "sink apns/fcm: total timeout per request (default 10000)",
       [](const Raw& r, Ctx& c) { c.o.push.timeout = ms(asInt(r, 1)); }},
  };
}

std::vector<Key> deadTokenKeys() {
  return {
      {"limits.dead_token_guard", Shape::kScalar, "--dead-token-guard", FlagForm::kValue, false, false,
       "stop marking push tokens dead while too many answers call them dead, on or off (default on)",
       [](const Raw& r, Ctx& c) { c.o.worker.dead_token_guard.enabled = asBool(r, "on or off"); }},
      {"limits.dead_token_threshold", Shape::kScalar, "--dead-token-threshold", FlagForm::kValue, false, false,
       "the guard holds above this share of a provider's answers calling a token dead, in (0, 1] (default 0.33)",
       [](const Raw& r, Ctx& c) {
         c.o.worker.dead_token_guard.threshold = asDouble(
             r, [](double v) { return v > 0.0 && v <= 1.0; }, "a number above 0 and at most 1");
       }},
      {"limits.dead_token_window_s", Shape::kScalar, "--dead-token-window-s", FlagForm::kValue, false, false,
       "the guard's sliding window of answers, seconds (default 60)",
       [](const Raw& r, Ctx& c) { c.o.worker.dead_token_guard.window = std::chrono::seconds(asInt(r, 1, 3600)); }},
      {"limits.dead_token_min_answers", Shape::kScalar, "--dead-token-min-answers", FlagForm::kValue, false, false,
       "answers in the guard's window before it judges (default 50)",
       [](const Raw& r, Ctx& c) {
         c.o.worker.dead_token_guard.min_answers = static_cast<std::uint32_t>(asInt(r, 1, 1'000'000));
       }},
      {"limits.dead_token_pause_s", Shape::kScalar, "--dead-token-pause-s", FlagForm::kValue, false, false,
       "the provider pauses this long from each dead verdict the guard holds (default 30)",
       [](const Raw& r, Ctx& c) { c.o.worker.dead_token_guard.pause = std::chrono::seconds(asInt(r, 1, 3600)); }},
  };
}

}  // namespace pacer::config::detail
