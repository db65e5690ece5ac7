#include "pacer/push/apns.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>

namespace pacer::push {
namespace {

using std::chrono::seconds;

const std::string kToken(64, 'a');

Message message(std::string recipient = kToken, std::string payload = R"({"aps":{"alert":"hi"}})") {
  Message m;
  m.id = "msg-1";
  m.campaign = "c1";
  m.recipient = std::move(recipient);
  m.payload = std::move(payload);
  return m;
}

ApnsOptions opts(std::string topic, std::string push_type = "alert", int priority = 10,
                 std::optional<std::int64_t> expiration = std::nullopt, std::string collapse_id = "") {
  ApnsOptions o;
  o.topic = std::move(topic);
  o.push_type = std::move(push_type);
  o.priority = priority;
  o.expiration = expiration;
  o.collapse_id = std::move(collapse_id);
  return o;
}

std::string header(const PushRequest& r, const std::string& name) {
  for (const auto& [k, v] : r.headers) {
    if (k == name) return v;
  }
  return "<absent>";
}

TEST(ApnsRequest, CarriesPathHeadersAndPayload) {
  const ApnsOptions o = opts("com.example.app", "alert", 10, 1'700'000'000, "promo-7");
  validateApnsOptions(o);
  const BuiltRequest b = buildApnsRequest(message(), o, "JWT.X.Y");
  ASSERT_TRUE(b.ok) << b.reason;
  EXPECT_EQ(b.request.path, "/3/device/" + kToken);
  EXPECT_EQ(header(b.request, "authorization"), "bearer JWT.X.Y");
  EXPECT_EQ(header(b.request, "apns-topic"), "com.example.app");
  EXPECT_EQ(header(b.request, "apns-push-type"), "alert");
  EXPECT_EQ(header(b.request, "apns-priority"), "10");
  EXPECT_EQ(header(b.request, "apns-expiration"), "1700000000");
  EXPECT_EQ(header(b.request, "apns-collapse-id"), "promo-7");
  EXPECT_EQ(header(b.request, "apns-id"), apnsIdFor("msg-1"));
  EXPECT_EQ(b.request.body, R"({"aps":{"alert":"hi"}})");
}

TEST(ApnsRequest, LeavesOutUnsetOptionalHeaders) {
  const BuiltRequest b = buildApnsRequest(message(), opts("com.example.app"), "J");
  ASSERT_TRUE(b.ok);
  EXPECT_EQ(header(b.request, "apns-expiration"), "<absent>");
  EXPECT_EQ(header(b.request, "apns-collapse-id"), "<absent>");
}

TEST(ApnsRequest, BadDeviceTokensAndPayloadsArePermanentBeforeSending) {
  const ApnsOptions o = opts("com.example.app");
  EXPECT_EQ(buildApnsRequest(message(std::string(62, 'a')), o, "J").reason, "invalid device token");
  EXPECT_EQ(buildApnsRequest(message(std::string(63, 'a') + "g"), o, "J").reason, "invalid device token");
  EXPECT_EQ(buildApnsRequest(message(std::string(65, 'a')), o, "J").reason, "invalid device token");
  EXPECT_EQ(buildApnsRequest(message(std::string(202, 'a')), o, "J").reason, "invalid device token");
  EXPECT_EQ(buildApnsRequest(message(""), o, "J").reason, "invalid device token");
  EXPECT_TRUE(buildApnsRequest(message(std::string(200, 'F')), o, "J").ok);
  EXPECT_EQ(buildApnsRequest(message(kToken, "[1]"), o, "J").reason, "payload is not a JSON object");
  EXPECT_EQ(buildApnsRequest(message(kToken, "{bad"), o, "J").reason, "payload is not a JSON object");
  const std::string big = R"({"aps":{},"x":")" + std::string(4100, 'x') + "\"}";
  EXPECT_EQ(buildApnsRequest(message(kToken, big), o, "J").reason, "payload over 4096 bytes");
  EXPECT_TRUE(buildApnsRequest(message(kToken, big), opts("com.example.app.voip", "voip"), "J").ok);
}

TEST(ApnsOptionsTest, RefusesWhatApnsWouldRefuse) {
  EXPECT_THROW(validateApnsOptions(opts("")), InvalidError);
  EXPECT_THROW(validateApnsOptions(opts("t", "shout")), InvalidError);
  EXPECT_THROW(validateApnsOptions(opts("t", "alert", 7)), InvalidError);
  EXPECT_THROW(validateApnsOptions(opts("t", "background", 10)), InvalidError);
  EXPECT_NO_THROW(validateApnsOptions(opts("t", "background", 5)));
  EXPECT_THROW(validateApnsOptions(opts("t", "alert", 10, -1)), InvalidError);
  EXPECT_THROW(validateApnsOptions(opts("t", "alert", 10, std::nullopt, std::string(65, 'c'))), InvalidError);
  EXPECT_NO_THROW(validateApnsOptions(opts("t", "alert", 10, 0, std::string(64, 'c'))));
}

// Every push type APNs documents is accepted, and each request carries the
// topic Apple requires for it: the bundle id plus the type's suffix.
TEST(ApnsOptionsTest, TakesEveryPushTypeWithItsTopic) {
  const std::pair<const char*, const char*> expected[] = {
      {"alert", "com.example.app"},
      {"background", "com.example.app"},
      {"location", "com.example.app.location-query"},
      {"voip", "com.example.app.voip"},
      {"complication", "com.example.app.complication"},
      {"fileprovider", "com.example.app.pushkit.fileprovider"},
      {"mdm", "com.example.app"},
      {"liveactivity", "com.example.app.push-type.liveactivity"},
      {"pushtotalk", "com.example.app.voip-ptt"},
      {"controls", "com.example.app.push-type.controls"},
      {"widgets", "com.example.app.push-type.widgets"},
  };
  ASSERT_EQ(apnsPushTypes().size(), std::size(expected));
  for (const auto& [type, topic] : expected) {
    SCOPED_TRACE(type);
    const int priority = std::string_view(type) == "background" ? 5 : 10;
    EXPECT_NO_THROW(validateApnsOptions(opts("com.example.app", type, priority)));
    const BuiltRequest b = buildApnsRequest(message(), opts("com.example.app", type, priority), "J");
    ASSERT_TRUE(b.ok) << b.reason;
    EXPECT_EQ(header(b.request, "apns-topic"), topic);
    EXPECT_EQ(header(b.request, "apns-push-type"), type);
    // A topic given with its suffix already is sent as it is, not doubled.
    EXPECT_NO_THROW(validateApnsOptions(opts(topic, type, priority)));
    EXPECT_EQ(header(buildApnsRequest(message(), opts(topic, type, priority), "J").request, "apns-topic"), topic);
    EXPECT_NE(std::find(apnsPushTypes().begin(), apnsPushTypes().end(), type), apnsPushTypes().end());
  }
}

// A topic carrying another push type's suffix would send the whole audience
// to the wrong topic (DeviceTokenNotForTopic for every token): refused at start.
TEST(ApnsOptionsTest, RefusesATopicMadeForAnotherPushType) {
  EXPECT_THROW(validateApnsOptions(opts("com.example.app.voip", "alert")), InvalidError);
  EXPECT_THROW(validateApnsOptions(opts("com.example.app.voip", "pushtotalk")), InvalidError);
  EXPECT_THROW(validateApnsOptions(opts("com.example.app.push-type.widgets", "controls")), InvalidError);
  EXPECT_THROW(validateApnsOptions(opts("com.example.app.complication", "widgets")), InvalidError);
  try {
    validateApnsOptions(opts("com.example.app.voip", "background", 5));
    ADD_FAILURE() << "no error";
  } catch (const InvalidError& e) {
    EXPECT_STREQ(e.what(),
                 "APNs topic 'com.example.app.voip' ends in '.voip', the suffix of push type voip, not background: "
                 "give the bundle id; Pacer appends the push type's suffix");
  }
  EXPECT_NO_THROW(validateApnsOptions(opts("com.example.app.voip-ptt", "pushtotalk")));
  try {
    validateApnsOptions(opts("t", "shout"));
    ADD_FAILURE() << "no error";
  } catch (const InvalidError& e) {
    EXPECT_NE(std::string(e.what()).find("(alert, background, location, voip, complication, fileprovider, mdm, "
                                         "liveactivity, pushtotalk, controls, widgets)"),
              std::string::npos)
        << e.what();
  }
}

TEST(ApnsId, IsAStableVersion5UuidOfTheMessageId) {
  // Expected values from Python's uuid.uuid5 with the same namespace
  // (6f1d3c2e-8a4b-4e57-9c0d-2b7a5e91f3a8): an independent implementation.
  EXPECT_EQ(apnsIdFor("msg-1"), "616fe600-a952-5d6e-b63d-0162f00f8139");
  EXPECT_EQ(apnsIdFor("msg-2"), "179bcd27-192c-5d67-953b-61b49795494d");
  EXPECT_EQ(apnsIdFor(""), "010cc728-f787-5966-ac08-9fbbbe59b359");
  EXPECT_EQ(apnsIdFor("campaign-7:42"), "2cc9343f-a629-568a-ba89-aa103265f39c");
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    const std::string id = apnsIdFor("m" + std::to_string(i));
    EXPECT_EQ(apnsIdFor("m" + std::to_string(i)), id) << "same id, same UUID";
    ASSERT_EQ(id.size(), 36u);
    EXPECT_EQ(id[14], '5') << "version 5";
    EXPECT_NE(std::string("89ab").find(id[19]), std::string::npos) << "RFC 4122 variant: " << id;
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 1000u) << "different ids, different UUIDs";
}

struct Row {
  int status;
  std::string body;
  std::optional<Nanos> retry_after;
  SendOutcome outcome;
  bool refresh = false;
  bool credential_failure = false;
  AnswerScope scope = AnswerScope::kProvider;  // whom a throttle concerns
};

TEST(ApnsAnswer, ClassifiesEveryRowOfTheTable) {
  using O = SendOutcome;
  const Row rows[] = {
      {410, R"({"reason":"Unregistered","timestamp":1700000000123})", {}, O::kInvalidToken},
      {410, R"({"reason":"ExpiredToken"})", {}, O::kInvalidToken},
      {400, R"({"reason":"BadDeviceToken"})", {}, O::kInvalidToken},
      {400, R"({"reason":"DeviceTokenNotForTopic"})", {}, O::kInvalidToken},
      {400, R"({"reason":"BadCollapseId"})", {}, O::kPermanent},
      {400, R"({"reason":"TopicDisallowed"})", {}, O::kPermanent},
      {413, R"({"reason":"PayloadTooLarge"})", {}, O::kPermanent},
      {404, R"({"reason":"BadPath"})", {}, O::kPermanent},
      {403, R"({"reason":"ExpiredProviderToken"})", {}, O::kFault, true},
      {403, R"({"reason":"InvalidProviderToken"})", {}, O::kFault, false, true},
      {403, R"({"reason":"MissingProviderToken"})", {}, O::kFault, false, true},
      {403, R"({"reason":"BadCertificateEnvironment"})", {}, O::kPermanent},
      // Too many notifications to this one device token: the token waits, not the provider.
      {429, R"({"reason":"TooManyRequests"})", seconds(30), O::kThrottled, false, false, AnswerScope::kRecipient},
      {429, R"({"reason":"TooManyRequests"})", {}, O::kThrottled, false, false, AnswerScope::kRecipient},
      {429, R"({"reason":"TooManyProviderTokenUpdates"})", {}, O::kThrottled},
      {429, "", {}, O::kThrottled},
      {500, R"({"reason":"InternalServerError"})", {}, O::kFault},
      {503, R"({"reason":"ServiceUnavailable"})", {}, O::kFault},
      {503, R"({"reason":"ServiceUnavailable"})", seconds(5), O::kThrottled},
      {502, "", {}, O::kFault},
      {408, "", {}, O::kFault},
  };
  for (const Row& row : rows) {
    const PushVerdict v = classifyApnsAnswer(row.status, row.body, row.retry_after, "id");
    SCOPED_TRACE(std::to_string(row.status) + " " + row.body);
    EXPECT_EQ(v.result.outcome, row.outcome) << outcomeName(v.result.outcome);
    EXPECT_EQ(v.refresh_credential, row.refresh);
    EXPECT_EQ(v.credential_failure, row.credential_failure);
    EXPECT_EQ(v.result.scope, row.scope);
    EXPECT_EQ(v.result.status, row.status);
    EXPECT_EQ(v.result.retry_after, row.outcome == O::kThrottled ? row.retry_after.value_or(Nanos{0}) : Nanos{0});
    const std::string reason = nlohmann::json::parse(row.body.empty() ? "{}" : row.body).value("reason", "");
    EXPECT_EQ(v.result.reason, "APNs " + std::to_string(row.status) + (reason.empty() ? "" : " " + reason));
  }
}

TEST(ApnsAnswer, DeliveredCarriesTheApnsIdAnd410TheTimestamp) {
  const PushVerdict ok = classifyApnsAnswer(200, "", {}, "616fe600-a952-5d6e-b63d-0162f00f8139");
  EXPECT_EQ(ok.result.outcome, SendOutcome::kDelivered);
  EXPECT_EQ(ok.result.provider_message_id, "616fe600-a952-5d6e-b63d-0162f00f8139");
  const PushVerdict gone = classifyApnsAnswer(410, R"({"reason":"Unregistered","timestamp":1700000000123})", {}, "");
  EXPECT_EQ(gone.result.invalid_since_ms, 1'700'000'000'123);
  EXPECT_EQ(classifyApnsAnswer(410, R"({"reason":"Unregistered"})", {}, "").result.invalid_since_ms, 0);
}

TEST(ApnsAnswer, AnUnreadableBodyIsShownBoundedAndPrintable) {
  const PushVerdict v = classifyApnsAnswer(400, std::string("oops\n\x01") + std::string(300, 'z'), {}, "");
  EXPECT_EQ(v.result.outcome, SendOutcome::kPermanent);
  EXPECT_EQ(v.result.reason.rfind("APNs 400 oops??zzz", 0), 0u) << v.result.reason;
  EXPECT_EQ(v.result.reason.size(), std::string("APNs 400 ").size() + 200);
}

TEST(ApnsRequest, AMessageDeadlineBecomesApnsExpirationUnlessTheCampaignsIsEarlier) {
  Message m = message();
  m.expires_at_ms = 1'795'707'000'999;
  const BuiltRequest alone = buildApnsRequest(m, opts("com.example.app"), "JWT");
  ASSERT_TRUE(alone.ok) << alone.reason;
  EXPECT_EQ(header(alone.request, "apns-expiration"), "1795707000") << "whole seconds, never after the deadline";
  const BuiltRequest later = buildApnsRequest(m, opts("com.example.app", "alert", 10, 1'795'800'000), "JWT");
  EXPECT_EQ(header(later.request, "apns-expiration"), "1795707000");
  const BuiltRequest earlier = buildApnsRequest(m, opts("com.example.app", "alert", 10, 1'795'600'000), "JWT");
  EXPECT_EQ(header(earlier.request, "apns-expiration"), "1795600000");
}

}  // namespace
}  // namespace pacer::push
