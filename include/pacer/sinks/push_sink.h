// The push sinks: APNs (HTTP/2, ES256 provider token) and FCM HTTP v1
// (OAuth 2.0 access token from a service account). Both are an HTTP/2
// transport (nghttp2's client session by default, or the HTTP sink's libcurl
// multi; few connections, many streams) with a protocol codec over pacer::push; docs/push.md has the answer tables and the credential
// rules. Not thread-safe: one owner thread, as every sink.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "pacer/push/apns.h"
#include "pacer/sink.h"

namespace pacer::sink {

// How the push sinks speak HTTP/2: nghttp2's client session over OpenSSL
// (h2: completed streams end without RST_STREAM), or libcurl's multi handle
// (curl: Debian 12's libcurl resets nearly every completed stream).
enum class PushTransport { kH2, kCurl };

struct PushSinkOptions {
  // APNs
  std::string apns_url = "https://api.push.apple.com";  // scheme and authority; the path is /3/device/<token>
  std::string apns_key_file;                            // the .p8 signing key (PEM); its bytes are never logged
  std::string apns_key_id;                              // "kid" (10 characters)
  std::string apns_team_id;                             // "iss" (10 characters)
  std::chrono::minutes apns_token_refresh{40};          // a new provider token this often, in [20, 60)
  push::ApnsOptions apns;                               // headers for every campaign
  // Per campaign, header name (apns-topic, apns-push-type, apns-priority,
  // apns-expiration, apns-collapse-id) to value, over the defaults above.
  std::map<std::string, std::map<std::string, std::string>> apns_campaign_headers;

  // FCM HTTP v1
  std::string fcm_url = "https://fcm.googleapis.com";  // scheme and authority of messages:send
  std::string fcm_service_account_file;                // the service-account JSON; never logged
  std::string fcm_project_id;                          // empty: the account's project_id

  // Transport
  PushTransport transport = PushTransport::kH2;
  std::size_t connections = 1;    // HTTP/2 connections per worker
  std::size_t max_streams = 1000;  // streams per connection at most (the server's limit applies too)
  std::string ca_file;            // empty: the system's CAs
  bool verify_tls = true;
  std::chrono::milliseconds timeout{10000};  // per request
};

// Read the key or account file, check every setting; throw InvalidError
// naming the key (sink.apns.*, sink.fcm.*) for anything unusable. `log`
// receives why the sink holds messages back (a credential not usable yet).
SinkInterfacePtr makeApnsSink(const PushSinkOptions& options, std::size_t max_in_flight,
                              std::function<void(std::string_view)> log);
SinkInterfacePtr makeFcmSink(const PushSinkOptions& options, std::size_t max_in_flight,
                             std::function<void(std::string_view)> log);

// The per-campaign APNs settings: `base` with `headers` on top. Throws
// InvalidError naming the campaign and header for an unknown header or a bad value.
push::ApnsOptions apnsOptionsFor(const push::ApnsOptions& base, const std::string& campaign,
                                 const std::map<std::string, std::string>& headers);

}  // namespace pacer::sink
