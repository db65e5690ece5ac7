// The HTTP sink's pure parts: status classes, Retry-After, URL templates.
#include "pacer/sinks/http_sink.h"

#include "pacer/error.h"

#include <gtest/gtest.h>

namespace pacer::sink {
namespace {

using std::chrono::seconds;

SendOutcome classOf(int status, std::string_view retry_after = "") {
  return classifyHttpAnswer(status, retry_after, "", 0).outcome;
}

TEST(ClassifyHttpAnswer, FollowsTheResponseClasses) {
  for (int s : {200, 201, 202, 204, 299}) EXPECT_EQ(classOf(s), SendOutcome::kDelivered) << s;
  EXPECT_EQ(classOf(429), SendOutcome::kThrottled);
  EXPECT_EQ(classOf(429, "2"), SendOutcome::kThrottled);
  for (int s : {503, 408, 500, 502, 504, 599}) EXPECT_EQ(classOf(s), SendOutcome::kFault) << s;
  for (int s : {400, 401, 403, 404, 409, 410, 413, 422}) EXPECT_EQ(classOf(s), SendOutcome::kPermanent) << s;
  for (int s : {0, 100, 301, 304}) EXPECT_EQ(classOf(s), SendOutcome::kFault) << s;
}

// Only a 503 that names when to come back is the provider asking for a pause;
// an unusable Retry-After is no pause at all.
TEST(ClassifyHttpAnswer, A503IsAThrottleOnlyWithAUsableRetryAfter) {
  EXPECT_EQ(classOf(503, "1"), SendOutcome::kThrottled);
  EXPECT_EQ(classOf(503, " 0 "), SendOutcome::kThrottled);
  EXPECT_EQ(classOf(503, "Sun, 06 Nov 1994 08:49:37 GMT"), SendOutcome::kThrottled);
  EXPECT_EQ(classOf(503, "soon"), SendOutcome::kFault);
  EXPECT_EQ(classOf(503, "   "), SendOutcome::kFault);
  const SendResult r = classifyHttpAnswer(503, "4", "busy", 0);
  EXPECT_EQ(r.retry_after, seconds(4));
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.reason, "HTTP 503: busy");
}

// A generic HTTP provider's 429 and 503 are about the provider as a whole.
TEST(ClassifyHttpAnswer, ThrottlesAreTheWholeProviders) {
  EXPECT_EQ(classifyHttpAnswer(429, "2", "slow down", 0).scope, AnswerScope::kProvider);
  EXPECT_EQ(classifyHttpAnswer(429, "", "", 0).scope, AnswerScope::kProvider);
  EXPECT_EQ(classifyHttpAnswer(503, "4", "busy", 0).scope, AnswerScope::kProvider);
}

TEST(ClassifyHttpAnswer, TheReasonKeepsABoundedEscapedBody) {
  const SendResult r = classifyHttpAnswer(400, "", std::string(2000, 'x') + "\n", 0);
  EXPECT_EQ(r.reason.size(), std::string("HTTP 400: ").size() + kMaxReasonBody);
  EXPECT_EQ(classifyHttpAnswer(400, "", "a\nb", 0).reason, "HTTP 400: a\\nb");
}

TEST(ParseRetryAfter, SecondsOrHttpDate) {
  EXPECT_EQ(parseRetryAfter("7", 0), seconds(7));
  EXPECT_EQ(parseRetryAfter("0", 0), seconds(0));
  EXPECT_EQ(parseRetryAfter("", 0), seconds(0));
  EXPECT_EQ(parseRetryAfter("soon", 0), seconds(0));
  EXPECT_EQ(parseRetryAfter("-3", 0), seconds(0));
  // Sun, 06 Nov 1994 08:49:37 GMT is 784111777.
  EXPECT_EQ(parseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", 784111777 - 120), seconds(120));
  EXPECT_EQ(parseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", 784111777 + 5), seconds(0));  // in the past
  // A date far ahead is capped like a huge number of seconds (it overflowed
  // the nanoseconds before; found by tests/fuzz/http_answer_fuzz).
  EXPECT_EQ(parseRetryAfter("Wed, 21 Oct 20260 07:28:00 GMT", 0), parseRetryAfter("99999999999", 0));
  EXPECT_EQ(parseRetryAfter("99999999999", 0), seconds(999'999'999));
}

TEST(ExpandUrl, FillsRecipientAndCampaignEncoded) {
  Message m;
  m.recipient = "+1 555/0100";
  m.campaign = "spring sale";
  EXPECT_EQ(expandUrl("http://gw/send/{recipient}?c={campaign}&again={recipient}", m),
            "http://gw/send/%2B1%20555%2F0100?c=spring%20sale&again=%2B1%20555%2F0100");
  EXPECT_EQ(expandUrl("http://gw/plain", m), "http://gw/plain");
  EXPECT_EQ(expandUrl("http://gw/{other}/{recipient}{", m), "http://gw/{other}/%2B1%20555%2F0100{");
  EXPECT_EQ(expandUrl("{campaign}", m), "spring%20sale");
}

TEST(MakeHttpSink, RefusesUnusableSettings) {
  HttpSinkOptions o;
  o.url = "ftp://x";
  EXPECT_THROW(makeHttpSink(o), pacer::InvalidError);
  o.url = "http://127.0.0.1:1/";
  o.method = "PO ST";
  EXPECT_THROW(makeHttpSink(o), pacer::InvalidError);
  o.method = "PUT";
  o.max_in_flight = 0;
  EXPECT_THROW(makeHttpSink(o), pacer::InvalidError);
}

}  // namespace
}  // namespace pacer::sink
