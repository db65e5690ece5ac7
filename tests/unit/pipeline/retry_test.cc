#include "pacer/retry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace pacer {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Kind = RetryDecision::Kind;

SendResult result(SendOutcome o, int status, Nanos retry_after = Nanos{0}, std::string reason = "") {
  return SendResult{1, o, retry_after, status, std::move(reason)};
}

TEST(DecideRetry, DeliveredIsDone) {
  EXPECT_EQ(decideRetry({}, result(SendOutcome::kDelivered, 200), 1, 0.5).kind, Kind::kDelivered);
}

TEST(DecideRetry, PermanentFailsAtOnceWithTheReason) {
  const auto d = decideRetry({}, result(SendOutcome::kPermanent, 400, Nanos{0}, "HTTP 400: bad number"), 1, 0.5);
  EXPECT_EQ(d.kind, Kind::kFail);
  EXPECT_EQ(d.reason, "HTTP 400: bad number");
}

TEST(DecideRetry, ThrottlingPausesForRetryAfterAndNeverExhaustsAttempts) {
  RetryPolicy p;
  p.max_attempts = 3;
  for (int attempts : {1, 3, 100}) {
    const auto d = decideRetry(p, result(SendOutcome::kRetry, 429, seconds(7)), attempts, 0.5);
    EXPECT_EQ(d.kind, Kind::kRetry) << attempts;
    EXPECT_TRUE(d.throttled);
    EXPECT_FALSE(d.counts);
    EXPECT_EQ(d.delay, seconds(7));
  }
  EXPECT_EQ(decideRetry(p, result(SendOutcome::kRetry, 503), 1, 0.5).delay, p.default_throttle_pause);
}

TEST(DecideRetry, FaultsBackOffThenFailWithTheLastReason) {
  RetryPolicy p;
  p.max_attempts = 3;
  p.jitter = 0;
  const SendResult timeout = result(SendOutcome::kRetry, 0, Nanos{0}, "timeout after 200 ms");
  auto d = decideRetry(p, timeout, 1, 0.9);
  EXPECT_EQ(d.kind, Kind::kRetry);
  EXPECT_TRUE(d.counts);
  EXPECT_EQ(d.delay, milliseconds(200));
  d = decideRetry(p, timeout, 2, 0.9);
  EXPECT_EQ(d.delay, milliseconds(400));
  d = decideRetry(p, timeout, 3, 0.9);
  EXPECT_EQ(d.kind, Kind::kFail);
  EXPECT_EQ(d.reason, "gave up after 3 attempts; last: timeout after 200 ms");
}

TEST(BackoffDelay, GrowsExponentiallyUpToTheCapWithBoundedJitter) {
  RetryPolicy p;
  p.base_delay = milliseconds(100);
  p.max_delay = seconds(5);
  p.jitter = 0.5;
  for (int a = 1; a < 80; ++a) {
    const double full = std::min(5e9, 1e8 * std::exp2(a - 1));
    const Nanos lo = backoffDelay(p, a, 0.0);
    const Nanos hi = backoffDelay(p, a, 0.999999);
    EXPECT_NEAR(static_cast<double>(lo.count()), full * 0.5, 1.0) << a;
    EXPECT_NEAR(static_cast<double>(hi.count()), full, full * 1e-5) << a;
  }
}

}  // namespace
}  // namespace pacer
