// The seam between the shared HTTP/2 server and each fake's rules: a
// complete request in, a classified answer out. Handlers are pure apart from
// their own state (token caches, the window): time comes in as an argument.
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "pacer/time.h"
#include "strict_window.h"

namespace pacer::fake {

struct PushRequest {
  std::string method;
  std::string path;
  std::string authorization;
  std::string apns_topic;
  std::string apns_id;
  std::string apns_expiration;  // the header as received; empty when absent
  std::string content_type;
  std::string body;
};

struct PushResponse {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;  // JSON, or empty
};

// How a request counts in the report.
enum class Outcome { kAccepted, kThrottled, kInvalid, kFault, kAuthFailure, kBadRequest, kTokenIssued };

struct Decision {
  Outcome outcome = Outcome::kBadRequest;
  PushResponse response;
  // For the record line of an accepted request.
  std::string id;
  std::string token;
  std::string scope;  // the APNs topic or the FCM project
  bool per_token = false;  // kThrottled for one device token: no retry-after (APNs sends none)
  bool noise = false;      // kThrottled at random (--throttle-rate): no retry-after either
  // The lifetime the request gave, as received (empty when absent), for the
  // record: APNs's apns-expiration header; FCM's message.android.ttl and
  // message.apns.headers.apns-expiration.
  std::string apns_expiration;
  std::string android_ttl;
};

// Both clocks a handler needs: the monotonic one for the window, the wall
// clock for JWT times and record lines.
struct PushNow {
  MonoTime mono;
  std::int64_t wall_us = 0;
  std::int64_t wallSeconds() const noexcept { return wall_us / 1000000; }
};

class PushHandler {
 public:
  virtual ~PushHandler() = default;
  // Classifies and answers one complete request received at `now`. Never throws.
  virtual Decision handle(const PushRequest& request, const PushNow& now) = 0;
  // The record's name for Decision::scope: "topic" or "project".
  virtual const char* scopeName() const noexcept = 0;
  // Told the bound port once listening (FCM's default token audience needs it).
  virtual void onListening(int /*port*/) {}
  // The window's busiest second so far (the report's busiest_1s_window).
  virtual std::uint64_t busiest() const noexcept = 0;
};

// What both fakes decide after a request passed their own checks: an
// unregistered token, an injected fault, the window, or acceptance.
// kThrottleToken: the hot token got more than its rate (one device, not the provider).
// kThrottleNoise: a throttle drawn at random (--throttle-rate), whatever the rate.
enum class Verdict { kAccept, kUnregistered, kFault500, kFault503, kThrottle, kThrottleToken, kThrottleNoise };

// Lets the token set be searched with a string_view, without a copy per request.
struct TokenHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};
using TokenSet = std::unordered_set<std::string, TokenHash, std::equal_to<>>;

struct PolicyOptions {
  std::uint32_t window = 0;
  TokenSet invalid_tokens;
  double fault_rate = 0;
  std::uint64_t seed = 1;
  double throttle_rate = 0;  // fraction of otherwise good requests throttled at random
  std::string hot_token;  // empty: none
  std::uint32_t hot_token_rate = 1;
};

// Not thread-safe (the event-loop thread owns it).
class PushPolicy {
 public:
  explicit PushPolicy(PolicyOptions o)
      : o_(std::move(o)),
        window_(o_.window),
        hot_window_(std::max<std::uint32_t>(1, o_.hot_token_rate)),
        rng_(o_.seed) {}
  // Unregistered tokens first, then faults, then random throttles, then the hot token's own window,
  // then the window: only requests that would be accepted take a place in the
  // window, so it bounds accepted requests exactly.
  Verdict decide(std::string_view token, MonoTime now);
  std::uint64_t busiest() const noexcept { return window_.busiest(); }
  // 32 random hex digits, or a UUID (8-4-4-4-12, version 4) when `uuid`.
  std::string randomId(bool uuid);

 private:
  PolicyOptions o_;
  StrictWindow window_;
  StrictWindow hot_window_;  // the hot token's requests that passed it
  std::mt19937_64 rng_;
};

// The JSON string literal of `s` (quotes included).
std::string jsonString(std::string_view s);

}  // namespace pacer::fake
