// pacer-fake-apns and pacer-fake-fcm: push providers on loopback, speaking
// real HTTP/2 over TLS (ALPN h2) as strictly as Apple's and Google's, for
// tests, the demo and benchmarks. One event-loop thread serves every
// connection and stream and answers in the turn it reads a request. See
// docs/fake-push.md for the flags and the report.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace pacer::fake {

// A flag's value that cannot be used (unreadable file, bad key, bad address):
// the programs exit 2 on it, like on a bad flag.
class FakePushConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What both fakes share.
struct FakePushOptions {
  std::string listen = "127.0.0.1:0";          // IPv4 host:port; port 0 picks a free one
  std::string cert_path;                       // PEM server certificate (chain)
  std::string key_path;                        // PEM private key
  std::uint32_t max_concurrent_streams = 100;  // sent in SETTINGS; more open streams are refused
  std::uint32_t window = 0;                    // accepted requests in any 1 s; 0: no limit
  int retry_after_s = 1;                       // retry-after on 429 answers of the window
  std::string invalid_tokens_path;             // one device token per line: answered as unregistered
  std::string hot_token;                       // this device token gets at most hot_token_rate a second; above
  std::uint32_t hot_token_rate = 1;            // it, a per-token 429 (APNs TooManyRequests) without retry-after
  double fault_rate = 0;                       // fraction answered 500 or 503 (no retry-after)
  double throttle_rate = 0;                    // fraction answered 429 at random, whatever the rate (no retry-after)
  int latency_ms = 0;                          // every answer this long after its request
  std::uint32_t goaway_after = 0;              // GOAWAY after this many requests on a connection; 0: never
  std::string record_path;                     // one JSON line per accepted request (appended, buffered)
  std::uint64_t seed = 1;                      // fault draws and generated ids
};

struct FakeApnsOptions {
  FakePushOptions push;
  std::string auth_key_path;        // PEM EC P-256 public key of the provider token signing key
  std::string key_id;               // the JWT header's kid must equal it
  std::string team_id;              // the JWT's iss must equal it
  int token_max_age_s = 3600;       // older iat: 403 ExpiredProviderToken
  int token_min_interval_s = 1200;  // a new token sooner than this after the last: 429
};

struct FakeFcmOptions {
  FakePushOptions push;
  std::string sa_public_key_path;  // PEM RSA public key (or certificate) of the service account
  std::string sa_email;            // if set, the assertion's iss must equal it
  std::string token_url;           // the assertion's aud; empty: https://127.0.0.1:PORT/token or localhost
  int token_ttl_s = 3600;          // expires_in of issued access tokens
};

// One fake provider process's server. Not thread-safe: one thread calls
// listen() then run().
class FakePushProvider {
 public:
  virtual ~FakePushProvider() = default;
  // Reads the keys and files, listens; returns the port. Blocks SIGTERM,
  // SIGINT and SIGUSR1 for the calling thread (run() takes them). Throws
  // FakePushConfigError on unusable options, std::runtime_error otherwise.
  virtual int listen() = 0;
  // Serves until SIGTERM or SIGINT, then flushes the record and returns.
  // SIGUSR1 flushes the record and goes on.
  virtual void run() = 0;
};
using FakePushProviderPtr = std::unique_ptr<FakePushProvider>;

FakePushProviderPtr makeFakeApns(FakeApnsOptions options);
FakePushProviderPtr makeFakeFcm(FakeFcmOptions options);

}  // namespace pacer::fake
