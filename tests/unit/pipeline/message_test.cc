#include "pacer/message.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace pacer {
namespace {

using ::testing::HasSubstr;

RawMessage raw(std::optional<std::string> key, std::string value = "hello") {
  RawMessage r;
  r.position = Position{"messages", 2, 41};
  r.key = std::move(key);
  r.value = std::move(value);
  return r;
}

TEST(DecodeMessage, KeyIsTheCampaignAndHeadersGiveIdAndRecipient) {
  RawMessage r = raw("spring-sale", std::string("\x00\x01 binary payload", 17));
  r.headers = {{"message-id", "m-123"}, {"recipient", "+15550100"}, {"other", std::nullopt}};
  const Decoded d = decodeMessage(r, {});
  ASSERT_TRUE(d.message) << d.reason;
  EXPECT_EQ(d.message->campaign, "spring-sale");
  EXPECT_EQ(d.message->id, "m-123");
  EXPECT_EQ(d.message->recipient, "+15550100");
  EXPECT_EQ(d.message->payload, r.value);  // unchanged, binary included
  EXPECT_EQ(d.message->position.offset, 41);
}

TEST(DecodeMessage, WithoutAMessageIdHeaderTheIdIsItsPosition) {
  const Decoded d = decodeMessage(raw("c"), {});
  ASSERT_TRUE(d.message);
  EXPECT_EQ(d.message->id, "messages:2:41");
  EXPECT_EQ(d.message->recipient, "");
}

TEST(DecodeMessage, TheTzHeaderGivesTheRecipientsTimeZone) {
  RawMessage r = raw("c");
  r.headers = {{"message-id", "m-1"}, {"tz", "America/New_York"}};
  const Decoded d = decodeMessage(r, {});
  ASSERT_TRUE(d.message) << d.reason;
  EXPECT_EQ(d.message->time_zone, "America/New_York");
  EXPECT_EQ(decodeMessage(raw("c"), {}).message->time_zone, "");  // absent: the campaign's default
}

TEST(DecodeMessage, RejectsAnUnusableTzHeaderKeepingItsId) {
  RawMessage bad = raw("c");
  bad.headers = {{"message-id", "m-2"}, {"tz", std::string("Europe/\x01", 8)}};
  Decoded d = decodeMessage(bad, {});
  EXPECT_FALSE(d.message);
  EXPECT_THAT(d.reason, HasSubstr("undecodable tz header"));
  EXPECT_EQ(d.id, "m-2");
  RawMessage longer = raw("c");
  longer.headers = {{"tz", std::string(65, 'A')}};
  EXPECT_THAT(decodeMessage(longer, {}).reason, HasSubstr("at most 64 bytes"));
  longer.headers = {{"tz", std::string(64, 'A')}};  // the bound itself decodes (the core checks the name)
  EXPECT_TRUE(decodeMessage(longer, {}).message);
}

TEST(DecodeMessage, RejectsWithAReason) {
  EXPECT_THAT(decodeMessage(raw(std::nullopt), {}).reason, HasSubstr("Kafka key (campaign id) is empty"));
  EXPECT_THAT(decodeMessage(raw(""), {}).reason, HasSubstr("is empty"));
  EXPECT_THAT(decodeMessage(raw(std::string("bad\xff", 4)), {}).reason, HasSubstr("undecodable campaign id"));
  EXPECT_THAT(decodeMessage(raw("tab\tkey"), {}).reason, HasSubstr("undecodable campaign id"));
  EXPECT_THAT(decodeMessage(raw(std::string(300, 'k')), {}).reason, HasSubstr("at most 256 bytes"));
  RawMessage empty_id = raw("c");
  empty_id.headers = {{"message-id", ""}};
  EXPECT_THAT(decodeMessage(empty_id, {}).reason, HasSubstr("undecodable message-id"));
  RawMessage null_id = raw("c");
  null_id.headers = {{"message-id", std::nullopt}};
  EXPECT_FALSE(decodeMessage(null_id, {}).message);
  RawMessage bad_recipient = raw("c");
  bad_recipient.headers = {{"recipient", std::string("\xc3", 1)}};
  EXPECT_THAT(decodeMessage(bad_recipient, {}).reason, HasSubstr("undecodable recipient"));
}

TEST(DecodeMessage, ARejectedMessageIsRecordedUnderItsUsableIdElseItsPosition) {
  RawMessage with_id = raw(std::nullopt);
  with_id.headers = {{"message-id", "m-7"}};
  EXPECT_EQ(decodeMessage(with_id, {}).id, "m-7");
  RawMessage bad_recipient = raw("c");
  bad_recipient.headers = {{"message-id", "m-8"}, {"recipient", std::string("\x01", 1)}};
  const Decoded d = decodeMessage(bad_recipient, {});
  EXPECT_FALSE(d.message);
  EXPECT_EQ(d.id, "m-8");
  RawMessage bad_id = raw("c");
  bad_id.headers = {{"message-id", std::string("a\nb")}};
  EXPECT_EQ(decodeMessage(bad_id, {}).id, "messages:2:41");
  EXPECT_EQ(decodeMessage(raw(std::nullopt), {}).id, "messages:2:41");
}

TEST(DecodeMessage, OversizedMessagesAreRejectedCountingKeyAndHeaders) {
  DecodeOptions o;
  o.max_message_bytes = 20;
  RawMessage r = raw("campaign", std::string(12, 'x'));  // 8 + 12 = 20: fits
  EXPECT_TRUE(decodeMessage(r, o).message);
  r.headers = {{"recipient", "1"}};  // + 10
  EXPECT_THAT(decodeMessage(r, o).reason, HasSubstr("30 bytes is over max_message_bytes (20)"));
}

TEST(DecodeMessage, AcceptsMultiByteUtf8) {
  const Decoded d = decodeMessage(raw("распродажа-春"), {});
  ASSERT_TRUE(d.message) << d.reason;
  EXPECT_EQ(d.message->campaign, "распродажа-春");
}

TEST(DecodeMessage, TheExpiresAtHeaderTakesRfc3339OrEpochMilliseconds) {
  const auto deadline = [](std::string v) {
    RawMessage r = raw("c");
    r.headers = {{"message-id", "m-1"}, {"pacer-expires-at", std::move(v)}};
    const Decoded d = decodeMessage(r, {});
    EXPECT_TRUE(d.message) << d.reason;
    return d.message ? d.message->expires_at_ms : -1;
  };
  EXPECT_EQ(deadline("2026-11-26T15:30:00Z"), 1'795'707'000'000);
  EXPECT_EQ(deadline("2026-11-26t15:30:00.25z"), 1'795'707'000'250);
  EXPECT_EQ(deadline("2026-11-26T15:30:00.123456Z"), 1'795'707'000'123) << "below a millisecond: cut";
  EXPECT_EQ(deadline("2026-11-26T16:30:00+01:00"), 1'795'707'000'000);
  EXPECT_EQ(deadline("2026-11-26T10:00:00-05:30"), 1'795'707'000'000);
  EXPECT_EQ(deadline("1795707000000"), 1'795'707'000'000);
  EXPECT_EQ(decodeMessage(raw("c"), {}).message->expires_at_ms, 0) << "no header: no deadline";
}

TEST(DecodeMessage, AnUnusableExpiresAtHeaderIsRejectedNamingTheHeader) {
  for (const char* bad : {"soon", "", "2026-11-26 15:30:00Z", "2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z",
                          "2026-11-26T15:30:00", "2026-11-26T25:00:00Z", "2026-11-26T15:30:00+1:00", "0", "-5",
                          "1795707000000.5", "1234567890123456", "1969-12-31T23:59:59Z"}) {
    RawMessage r = raw("c");
    r.headers = {{"message-id", "m-1"}, {"pacer-expires-at", bad}};
    const Decoded d = decodeMessage(r, {});
    EXPECT_FALSE(d.message) << bad;
    EXPECT_THAT(d.reason, HasSubstr("undecodable pacer-expires-at header: ")) << bad;
    EXPECT_EQ(d.id, "m-1") << "recorded under its id";
  }
  RawMessage r = raw("c");
  r.headers = {{"pacer-expires-at", std::nullopt}};
  EXPECT_THAT(decodeMessage(r, {}).reason, HasSubstr("it has no value"));
}

TEST(FormatDeadline, IsRfc3339InUtcWithMilliseconds) {
  EXPECT_EQ(formatDeadline(1'795'707'000'250), "2026-11-26T15:30:00.250Z");
  std::string why;
  EXPECT_EQ(parseDeadline(formatDeadline(1'795'707'000'250), why), 1'795'707'000'250) << why;
}

}  // namespace
}  // namespace pacer
