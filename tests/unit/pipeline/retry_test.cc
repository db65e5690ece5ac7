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
  SendResult r;
  r.ticket = 1;
  r.outcome = o;
  r.retry_after = retry_after;
  r.status = status;
  r.reason = std::move(reason);
  return r;
}

AttemptHistory history(int attempts, int faults, int throttled, Nanos age = Nanos{0}) {
  return AttemptHistory{attempts, faults, throttled, age};
}

TEST(DecideRetry, DeliveredIsDone) {
  EXPECT_EQ(decideRetry({}, result(SendOutcome::kDelivered, 200), history(1, 0, 0), 0.5).kind, Kind::kDelivered);
}

TEST(DecideRetry, PermanentFailsAtOnceWithTheReason) {
  const auto d =
      decideRetry({}, result(SendOutcome::kPermanent, 400, Nanos{0}, "HTTP 400: bad number"), history(1, 0, 0), 0.5);
  EXPECT_EQ(d.kind, Kind::kFail);
  EXPECT_EQ(d.reason, "HTTP 400: bad number");
}

TEST(DecideRetry, AnInvalidTokenFailsAtOnceAndSaysSo) {
  const auto d =
      decideRetry({}, result(SendOutcome::kInvalidToken, 410, Nanos{0}, "Unregistered"), history(1, 0, 0), 0.5);
  EXPECT_EQ(d.kind, Kind::kFail);
  EXPECT_EQ(d.reason, "invalid token: Unregistered");
}

TEST(DecideRetry, AThrottlePausesForRetryAfterOrTheDefault) {
  RetryPolicy p;
  const auto d = decideRetry(p, result(SendOutcome::kThrottled, 429, seconds(7)), history(3, 0, 3), 0.5);
  EXPECT_EQ(d.kind, Kind::kRetry);
  EXPECT_TRUE(d.throttled);
  EXPECT_EQ(d.delay, seconds(7));
  EXPECT_EQ(decideRetry(p, result(SendOutcome::kThrottled, 503), history(1, 0, 1), 0.5).delay,
            p.default_throttle_pause);
}

SendResult recipientThrottle(Nanos retry_after = Nanos{0}) {
  SendResult r = result(SendOutcome::kThrottled, 429, retry_after, "APNs 429 TooManyRequests");
  r.scope = AnswerScope::kRecipient;
  return r;
}

// APNs 429 TooManyRequests concerns one device token: the message backs off
// alone (nothing says "pause the provider"), longer with each throttled attempt.
TEST(DecideRetry, ARecipientThrottleBacksOffTheMessageAloneAndGrows) {
  RetryPolicy p;
  p.base_delay = milliseconds(200);
  p.max_delay = seconds(30);
  p.jitter = 0;
  Nanos last{0};
  for (int n = 1; n <= 12; ++n) {
    const auto d = decideRetry(p, recipientThrottle(), history(n, 0, n), 0.5);
    ASSERT_EQ(d.kind, Kind::kRetry) << n;
    EXPECT_FALSE(d.throttled) << "the provider must not pause for one token";
    EXPECT_TRUE(d.recipient_throttled);
    EXPECT_EQ(d.delay, std::min<Nanos>(seconds(30), milliseconds(200) * (1LL << (n - 1)))) << n;
    EXPECT_GE(d.delay, last);
    last = d.delay;
  }
  // A Retry-After, when the answer names one, is the least it waits.
  EXPECT_EQ(decideRetry(p, recipientThrottle(seconds(5)), history(1, 0, 1), 0.5).delay, seconds(5));
  EXPECT_EQ(decideRetry(p, recipientThrottle(milliseconds(1)), history(3, 0, 3), 0.5).delay, milliseconds(800));
  // The same answer at provider scope still pauses everyone for the default.
  SendResult provider = recipientThrottle();
  provider.scope = AnswerScope::kProvider;
  const auto d = decideRetry(p, provider, history(1, 0, 1), 0.5);
  EXPECT_TRUE(d.throttled);
  EXPECT_FALSE(d.recipient_throttled);
  EXPECT_EQ(d.delay, p.default_throttle_pause);
}

TEST(DecideRetry, ARecipientThrottleIsJitteredAndBoundedByTheThrottleBudgetAndMaxAge) {
  RetryPolicy p;
  p.base_delay = seconds(1);
  p.jitter = 0.5;
  EXPECT_EQ(decideRetry(p, recipientThrottle(), history(2, 0, 2), 0.0).delay, seconds(1)) << "2 s, half of it random";
  EXPECT_EQ(decideRetry(p, recipientThrottle(), history(2, 0, 2), 0.999999).delay.count() / 1000000, 1999);
  p.max_throttled = 4;
  const auto spent = decideRetry(p, recipientThrottle(), history(6, 2, 4), 0.5);
  EXPECT_EQ(spent.kind, Kind::kFail);
  EXPECT_EQ(spent.reason, "gave up after 6 attempts (4 throttled); last: APNs 429 TooManyRequests");
  p.max_throttled = 30;
  p.max_age = seconds(60);
  const auto old = decideRetry(p, recipientThrottle(), history(8, 0, 8, seconds(50)), 0.5);
  EXPECT_EQ(old.kind, Kind::kFail) << "a 96 s backoff would outlive the 60 s max age";
  EXPECT_NE(old.reason.find("max age 60 s"), std::string::npos) << old.reason;
}

// Throttles do not use up the fault budget, and faults do not use up the
// throttle budget; each is bounded on its own.
TEST(DecideRetry, ThrottlesAndFaultsAreBoundedSeparately) {
  RetryPolicy p;
  p.max_attempts = 2;
  p.max_throttled = 3;
  // Many throttles, one fault so far: the fault budget is untouched.
  EXPECT_EQ(decideRetry(p, result(SendOutcome::kFault, 500), history(3, 1, 2), 0.5).kind, Kind::kRetry);
  EXPECT_EQ(decideRetry(p, result(SendOutcome::kFault, 500), history(4, 2, 2), 0.5).kind, Kind::kFail);
  EXPECT_EQ(decideRetry(p, result(SendOutcome::kThrottled, 429), history(3, 1, 2), 0.5).kind, Kind::kRetry);
  const auto d = decideRetry(p, result(SendOutcome::kThrottled, 429, seconds(1), "HTTP 429"), history(5, 1, 3), 0.5);
  EXPECT_EQ(d.kind, Kind::kFail);
  EXPECT_EQ(d.reason, "gave up after 5 attempts (3 throttled); last: HTTP 429");
}

TEST(DecideRetry, FaultsBackOffThenFailWithTheLastReason) {
  RetryPolicy p;
  p.max_attempts = 3;
  p.jitter = 0;
  const SendResult timeout = result(SendOutcome::kFault, 0, Nanos{0}, "timeout after 200 ms");
  auto d = decideRetry(p, timeout, history(1, 1, 0), 0.9);
  EXPECT_EQ(d.kind, Kind::kRetry);
  EXPECT_FALSE(d.throttled);
  EXPECT_EQ(d.delay, milliseconds(200));
  d = decideRetry(p, timeout, history(2, 2, 0), 0.9);
  EXPECT_EQ(d.delay, milliseconds(400));
  d = decideRetry(p, timeout, history(3, 3, 0), 0.9);
  EXPECT_EQ(d.kind, Kind::kFail);
  EXPECT_EQ(d.reason, "gave up after 3 attempts (3 failed); last: timeout after 200 ms");
}

// A retry that would come after max_age fails now, whatever its kind.
TEST(DecideRetry, NoRetryOutlivesTheMaxAge) {
  RetryPolicy p;
  p.max_age = seconds(60);
  p.jitter = 0;
  EXPECT_EQ(decideRetry(p, result(SendOutcome::kThrottled, 429, seconds(5)), history(2, 0, 2, seconds(54)), 0.5).kind,
            Kind::kRetry);
  const auto d =
      decideRetry(p, result(SendOutcome::kThrottled, 429, seconds(5), "HTTP 429"), history(9, 0, 9, seconds(56)), 0.5);
  EXPECT_EQ(d.kind, Kind::kFail);
  EXPECT_EQ(d.reason, "gave up after 9 attempts over 56 s (max age 60 s); last: HTTP 429");
  EXPECT_EQ(decideRetry(p, result(SendOutcome::kFault, 500), history(2, 2, 0, seconds(60)), 0.5).kind, Kind::kFail);
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
