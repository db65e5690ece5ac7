// pacer-fake-provider: a stand-in for an SMS gateway or push API, for tests
// and benchmarks on loopback. It records every request and can behave like a
// real provider under pressure: a quota answered with 429 + Retry-After,
// added latency, a fraction of 5xx, dropped connections.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

namespace pacer::fake {

struct FakeProviderOptions {
  std::string host = "127.0.0.1";
  int port = 0;                 // 0: the kernel picks one
  double quota_per_s = 0;       // 0: no quota
  double quota_burst = 0;       // 0: one second of quota
  double retry_after_s = 1;     // Retry-After on 429
  bool retry_after_as_date = false;  // send Retry-After as an HTTP-date instead of seconds
  int latency_ms = 0;           // added to every request
  // A strict sliding window, as the strictest real providers keep it: at most
  // this many requests accepted in any one second (no burst allowance); the
  // rest are answered 429 with Retry-After. 0: none. Applies with `quota_per_s`.
  int window_per_s = 0;
  double fail_rate = 0;         // fraction answered `fail_status`
  int fail_status = 500;        // 500, 502, 504, 503 (sent without Retry-After: a fault, not a throttle)
                                // or 429 (a throttle at random, whatever the rate, with Retry-After)
  double close_rate = 0;        // fraction whose connection is dropped mid-response
  std::uint64_t seed = 1;
};

class FakeProvider {
 public:
  explicit FakeProvider(FakeProviderOptions options);
  ~FakeProvider();
  FakeProvider(const FakeProvider&) = delete;
  FakeProvider& operator=(const FakeProvider&) = delete;

  // Binds and starts serving in the background; returns the port.
  int start();
  void stop();

  // Per campaign (by Pacer-Campaign header; "(none)" without one, "(all)"
  // for every request): requests, accepted (2xx), distinct idempotency keys,
  // duplicates (a key accepted more than once), the most requests and the
  // most accepted requests in any 1 s sliding window.
  nlohmann::json report() const;
  // One line per request: "<ms since start> <campaign> <idempotency key> <status>".
  void writeRecord(const std::string& path) const;
  // Changes the quota while running (the 429 storm).
  void setQuota(double per_s, double burst);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pacer::fake
