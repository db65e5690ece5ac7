#include "pacer/push/fcm.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace pacer::push {
namespace {

using std::chrono::seconds;

Message message(std::string payload, std::string recipient = "fcm-token-1") {
  Message m;
  m.id = "m1";
  m.campaign = "c1";
  m.recipient = std::move(recipient);
  m.payload = std::move(payload);
  return m;
}

// An FCM v1 error body.
std::string error(int code, const std::string& status, const std::string& message, const std::string& error_code = "",
                  bool token_violation = false) {
  nlohmann::json details = nlohmann::json::array();
  if (!error_code.empty()) {
    details.push_back({{"@type", "type.googleapis.com/google.firebase.fcm.v1.FcmError"}, {"errorCode", error_code}});
  }
  if (token_violation) {
    details.push_back({{"@type", "type.googleapis.com/google.rpc.BadRequest"},
                       {"fieldViolations", {{{"field", "message.token"}, {"description", "Invalid token"}}}}});
  }
  return nlohmann::json{{"error", {{"code", code}, {"message", message}, {"status", status}, {"details", details}}}}
      .dump();
}

TEST(FcmRequest, WrapsThePayloadFieldsWithTheTokenInAMessage) {
  const BuiltRequest b =
      buildFcmRequest(message(R"({"notification":{"title":"Hi"},"data":{"k":"v"}})"), "my-proj", "ya29.tok");
  ASSERT_TRUE(b.ok) << b.reason;
  EXPECT_EQ(b.request.path, "/v1/projects/my-proj/messages:send");
  ASSERT_EQ(b.request.headers.size(), 1u);
  EXPECT_EQ(b.request.headers[0], (std::pair<std::string, std::string>{"authorization", "Bearer ya29.tok"}));
  EXPECT_EQ(
      nlohmann::json::parse(b.request.body),
      nlohmann::json::parse(R"({"message":{"notification":{"title":"Hi"},"data":{"k":"v"},"token":"fcm-token-1"}})"));
}

TEST(FcmRequest, TheRecipientReplacesAPayloadToken) {
  const BuiltRequest b = buildFcmRequest(message(R"({"token":"other"})"), "p", "t");
  ASSERT_TRUE(b.ok);
  EXPECT_EQ(nlohmann::json::parse(b.request.body)["message"]["token"], "fcm-token-1");
}

TEST(FcmRequest, UnsendableMessagesArePermanentBeforeSending) {
  EXPECT_EQ(buildFcmRequest(message("[1,2]"), "p", "t").reason, "payload is not a JSON object");
  EXPECT_EQ(buildFcmRequest(message("\"text\""), "p", "t").reason, "payload is not a JSON object");
  EXPECT_EQ(buildFcmRequest(message("{oops"), "p", "t").reason, "payload is not a JSON object");
  EXPECT_FALSE(buildFcmRequest(message("{}", ""), "p", "t").ok);
  EXPECT_FALSE(buildFcmRequest(message(R"({"topic":"news"})"), "p", "t").ok);
  EXPECT_FALSE(buildFcmRequest(message(R"({"condition":"'a' in topics"})"), "p", "t").ok);
  EXPECT_TRUE(buildFcmRequest(message("{}"), "p", "t").ok);
}

TEST(FcmPath, RefusesProjectIdsThatWouldBreakThePath) {
  EXPECT_EQ(fcmPath("proj-1"), "/v1/projects/proj-1/messages:send");
  EXPECT_THROW(fcmPath(""), InvalidError);
  EXPECT_THROW(fcmPath("a/b"), InvalidError);
  EXPECT_THROW(fcmPath("a?b"), InvalidError);
}

struct Row {
  int status;
  std::string body;
  std::optional<Nanos> retry_after;
  SendOutcome outcome;
  bool refresh = false;
  std::string reason;
};

TEST(FcmAnswer, ClassifiesEveryRowOfTheTable) {
  using O = SendOutcome;
  const Row rows[] = {
      {404,
       error(404, "NOT_FOUND", "Requested entity was not found.", "UNREGISTERED"),
       {},
       O::kInvalidToken,
       false,
       "FCM 404 UNREGISTERED: Requested entity was not found."},
      {400,
       error(400, "INVALID_ARGUMENT", "The registration token is not a valid FCM registration token",
             "INVALID_ARGUMENT"),
       {},
       O::kInvalidToken,
       false,
       "FCM 400 INVALID_ARGUMENT: The registration token is not a valid FCM registration token"},
      {400,
       error(400, "INVALID_ARGUMENT", "Request contains an invalid argument.", "INVALID_ARGUMENT", true),
       {},
       O::kInvalidToken,
       false,
       "FCM 400 INVALID_ARGUMENT: Request contains an invalid argument."},
      {400,
       error(400, "INVALID_ARGUMENT", "Invalid JSON payload received.", "INVALID_ARGUMENT"),
       {},
       O::kPermanent,
       false,
       "FCM 400 INVALID_ARGUMENT: Invalid JSON payload received."},
      {400, error(400, "FAILED_PRECONDITION", "nope"), {}, O::kPermanent, false, "FCM 400 FAILED_PRECONDITION: nope"},
      {401,
       error(401, "UNAUTHENTICATED", "Request had invalid authentication credentials."),
       {},
       O::kFault,
       true,
       "FCM 401 UNAUTHENTICATED: Request had invalid authentication credentials."},
      {401,
       error(401, "UNAUTHENTICATED", "Auth error from APNS or Web Push Service", "THIRD_PARTY_AUTH_ERROR"),
       {},
       O::kPermanent,
       false,
       "FCM 401 THIRD_PARTY_AUTH_ERROR: Auth error from APNS or Web Push Service"},
      {403,
       error(403, "PERMISSION_DENIED", "SenderId mismatch", "SENDER_ID_MISMATCH"),
       {},
       O::kPermanent,
       false,
       "FCM 403 SENDER_ID_MISMATCH: SenderId mismatch"},
      {429, error(429, "RESOURCE_EXHAUSTED", "Quota exceeded", "QUOTA_EXCEEDED"), seconds(60), O::kThrottled, false,
       "FCM 429 QUOTA_EXCEEDED: Quota exceeded"},
      {429,
       error(429, "RESOURCE_EXHAUSTED", "Too many"),
       {},
       O::kThrottled,
       false,
       "FCM 429 RESOURCE_EXHAUSTED: Too many"},
      {500,
       error(500, "INTERNAL", "Internal error", "INTERNAL"),
       {},
       O::kFault,
       false,
       "FCM 500 INTERNAL: Internal error"},
      {503,
       error(503, "UNAVAILABLE", "Overloaded", "UNAVAILABLE"),
       {},
       O::kFault,
       false,
       "FCM 503 UNAVAILABLE: Overloaded"},
      {503, error(503, "UNAVAILABLE", "Overloaded", "UNAVAILABLE"), seconds(10), O::kThrottled, false,
       "FCM 503 UNAVAILABLE: Overloaded"},
      {502, "<html>bad gateway</html>", {}, O::kFault, false, "FCM 502 <html>bad gateway</html>"},
      {404,
       error(404, "NOT_FOUND", "Requested entity was not found."),
       {},
       O::kPermanent,
       false,
       "FCM 404 NOT_FOUND: Requested entity was not found."},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.body);
    const PushVerdict v = classifyFcmAnswer(row.status, row.body, row.retry_after);
    EXPECT_EQ(v.result.outcome, row.outcome) << outcomeName(v.result.outcome);
    EXPECT_EQ(v.refresh_credential, row.refresh);
    EXPECT_FALSE(v.credential_failure);
    // FCM's 429 (QUOTA_EXCEEDED, RESOURCE_EXHAUSTED) and 503 are the project's: the provider pauses.
    EXPECT_EQ(v.result.scope, AnswerScope::kProvider);
    EXPECT_EQ(v.result.status, row.status);
    EXPECT_EQ(v.result.reason, row.reason);
    EXPECT_EQ(v.result.retry_after, row.outcome == O::kThrottled ? row.retry_after.value_or(Nanos{0}) : Nanos{0});
  }
}

TEST(FcmAnswer, DeliveredCarriesTheMessageName) {
  const PushVerdict v = classifyFcmAnswer(200, R"({"name":"projects/p/messages/0:1500415314455276%31bd1c96"})", {});
  EXPECT_EQ(v.result.outcome, SendOutcome::kDelivered);
  EXPECT_EQ(v.result.provider_message_id, "projects/p/messages/0:1500415314455276%31bd1c96");
  EXPECT_EQ(classifyFcmAnswer(200, "not json", {}).result.provider_message_id, "");
}

TEST(FcmRequest, AMessageDeadlineCarriesTheRemainingLifetimeForAndroidAndIos) {
  Message m = message(R"({"notification":{"title":"Hi"}})");
  m.expires_at_ms = 1'795'707'000'000;
  const BuiltRequest b = buildFcmRequest(m, "p", "t", 1'795'707'000'000 - 90'500);
  ASSERT_TRUE(b.ok) << b.reason;
  const nlohmann::json doc = nlohmann::json::parse(b.request.body);
  EXPECT_EQ(doc["message"]["android"]["ttl"], "90s") << "whole seconds left, rounded down";
  EXPECT_EQ(doc["message"]["apns"]["headers"]["apns-expiration"], "1795707000");
  EXPECT_EQ(doc["message"]["notification"]["title"], "Hi");
  const BuiltRequest late = buildFcmRequest(m, "p", "t", 1'795'707'000'400);
  EXPECT_EQ(nlohmann::json::parse(late.request.body)["message"]["android"]["ttl"], "0s") << "now or never";
}

TEST(FcmRequest, APayloadsOwnShorterLifetimeIsKeptAndALongerOneIsCut) {
  Message m = message(
      R"({"android":{"ttl":"30s","priority":"high"},"apns":{"headers":{"apns-expiration":"1795706000","apns-priority":"10"}}})");
  m.expires_at_ms = 1'795'707'000'000;
  nlohmann::json doc = nlohmann::json::parse(buildFcmRequest(m, "p", "t", 1'795'706'000'000).request.body);
  EXPECT_EQ(doc["message"]["android"]["ttl"], "30s");
  EXPECT_EQ(doc["message"]["android"]["priority"], "high");
  EXPECT_EQ(doc["message"]["apns"]["headers"]["apns-expiration"], "1795706000");
  EXPECT_EQ(doc["message"]["apns"]["headers"]["apns-priority"], "10");
  m.payload = R"({"android":{"ttl":"86400s"},"apns":{"headers":{"apns-expiration":"1795800000"}}})";
  doc = nlohmann::json::parse(buildFcmRequest(m, "p", "t", 1'795'706'000'000).request.body);
  EXPECT_EQ(doc["message"]["android"]["ttl"], "1000s");
  EXPECT_EQ(doc["message"]["apns"]["headers"]["apns-expiration"], "1795707000");
}

TEST(FcmRequest, WithoutADeadlineNoLifetimeIsAdded) {
  const BuiltRequest b = buildFcmRequest(message(R"({"data":{"k":"v"}})"), "p", "t", 1'795'706'000'000);
  const nlohmann::json doc = nlohmann::json::parse(b.request.body);
  EXPECT_FALSE(doc["message"].contains("android"));
  EXPECT_FALSE(doc["message"].contains("apns"));
}

}  // namespace
}  // namespace pacer::push
