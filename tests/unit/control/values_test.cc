// pacerctl's value checks, state changes, NOTIFY payload and conninfo redaction.
#include "pacer/control/values.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>

#include "support/thrown.h"

namespace pacer::control {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The message of the InvalidValueError `fn` throws, a usage error.
template <typename Fn>
std::string refusal(Fn&& fn) {
  return test_support::thrownBy<InvalidValueError>(
      std::forward<Fn>(fn), [](const InvalidValueError& e) { EXPECT_EQ(e.code(), ExitCode::kUsage); });
}

TEST(ParseRate, AcceptsNumbersAboveZeroToTheLimitersMaximumAndUnlimited) {
  EXPECT_EQ(parseRate("unlimited", "--rate"), std::nullopt);
  EXPECT_THAT(refusal([] { parseRate("0", "--rate"); }),
              HasSubstr("a rate of 0 sends nothing (pause the campaign instead)"));
  EXPECT_EQ(parseRate("0.001", "--rate"), 0.001);
  EXPECT_EQ(parseRate("250", "--rate"), 250.0);
  EXPECT_EQ(parseRate("1e3", "--rate"), 1000.0);
  EXPECT_EQ(parseRate("10000000", "--rate"), 1e7);
}

TEST(ParseRate, TakesAUnitPerSecondMinuteOrHourAndKOrM) {
  EXPECT_EQ(parseRate("100/s", "--rate"), 100.0);
  EXPECT_EQ(parseRate("6000/min", "--rate"), 100.0);
  EXPECT_EQ(parseRate("360k/h", "--rate"), 100.0);
  EXPECT_EQ(parseRate("2k", "--rate"), 2000.0);
  EXPECT_EQ(parseRate("1M/h", "--rate"), 1e6 / 3600);
  EXPECT_THAT(refusal([] { parseRate("5/day", "--rate"); }), HasSubstr("unknown unit '/day' (use /s, /min or /h)"));
  EXPECT_THAT(refusal([] { parseRate("k/s", "--rate"); }), HasSubstr("not a number"));
  EXPECT_THAT(refusal([] { parseRate("20M", "--rate"); }), HasSubstr("above the largest rate, 10000000 per second"));
  EXPECT_THAT(refusal([] { parseRate("3/h", "--rate"); }), HasSubstr("below the smallest rate, 0.001 per second"));
}

TEST(ParseRate, RefusesNegativeNaNInfiniteTooLargeAndNonNumbersNamingTheFlag) {
  EXPECT_THAT(refusal([] { parseRate("-1", "--rate"); }), HasSubstr("--rate '-1': a rate cannot be negative"));
  EXPECT_THAT(refusal([] { parseRate("nan", "--rate"); }), HasSubstr("--rate 'nan': not a finite number"));
  EXPECT_THAT(refusal([] { parseRate("inf", "rate"); }), HasSubstr("rate 'inf': not a finite number"));
  EXPECT_THAT(refusal([] { parseRate("10000001", "--rate"); }), HasSubstr("above the largest rate, 10000000"));
  EXPECT_THAT(refusal([] { parseRate("1e308", "--rate"); }),
              HasSubstr("--rate '1e308': rate 1e+308 is above the largest rate, 10000000 per second"));
  EXPECT_THAT(refusal([] { parseRate("1e-300", "--rate"); }),
              HasSubstr("--rate '1e-300': rate 1e-300 is below the smallest rate, 0.001 per second"));
  EXPECT_THAT(refusal([] { parseRate("0.0009", "rate"); }), HasSubstr("below the smallest rate, 0.001"));
  EXPECT_THAT(refusal([] { parseRate("NaN", "--rate"); }), HasSubstr("--rate 'NaN': not a finite number"));
  EXPECT_THAT(refusal([] { parseRate("Infinity", "--rate"); }), HasSubstr("--rate 'Infinity': not a finite number"));
  EXPECT_THAT(refusal([] { parseRate("1e309", "--rate"); }), HasSubstr("--rate '1e309': not a"));
  EXPECT_THAT(refusal([] { parseRate("fast", "--rate"); }), HasSubstr("--rate 'fast': not a number"));
  EXPECT_THAT(refusal([] { parseRate("", "--rate"); }), HasSubstr("not a number"));
  EXPECT_THAT(refusal([] { parseRate("12x", "--rate"); }), HasSubstr("not a number"));
  EXPECT_THAT(refusal([] { parseRate(" 5", "--rate"); }), HasSubstr("not a number"));
  EXPECT_THAT(refusal([] { parseRate("Unlimited", "--rate"); }), HasSubstr("or unlimited"));
}

TEST(ParseCount, AcceptsWholeNumbersFromTheMinimumToATrillion) {
  EXPECT_EQ(parseCount("0", "--total", 0, "a total"), 0);
  EXPECT_EQ(parseCount("600", "--total", 0, "a total"), 600);
  EXPECT_EQ(parseCount("1000000000000", "--count", 1, "a count"), kMaxCount);
}

TEST(ParseCount, RefusesSignsFractionsExponentsEmptyAndOutOfRangeNamingTheFlag) {
  for (const char* bad : {"", "-1", "+5", "1.5", "1e3", " 7", "7 ", "x", "1000000000001", "99999999999999999999"}) {
    try {
      parseCount(bad, "--total", 0, "a total");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const InvalidValueError& e) {
      EXPECT_THAT(e.what(), HasSubstr(std::string("--total '") + bad + "': a total is a whole number of messages"));
    }
  }
  EXPECT_THROW(parseCount("0", "--count", 1, "a count"), InvalidValueError);
}

TEST(ParseBurst, NeedsAFiniteNumberOfAtLeastOne) {
  EXPECT_EQ(parseBurst("1", "--burst"), 1.0);
  EXPECT_EQ(parseBurst("12.5", "--burst"), 12.5);
  EXPECT_EQ(parseBurst("10000000", "--burst"), 1e7);
  for (const char* bad : {"0", "0.5", "-3", "nan", "inf", "", "ten", "10000001", "1e308"})
    EXPECT_THAT(refusal([&] { parseBurst(bad, "--burst"); }), HasSubstr("at least 1 and at most 10000000")) << bad;
}

TEST(ParseWeight, NeedsAFiniteNumberAboveZeroAndAtMostAMillion) {
  EXPECT_EQ(parseWeight("1", "--weight"), 1.0);
  EXPECT_EQ(parseWeight("0.25", "--weight"), 0.25);
  EXPECT_EQ(parseWeight("1000000", "--weight"), 1e6);
  for (const char* bad : {"0", "-1", "nan", "inf", "1000001", "heavy"})
    EXPECT_THAT(refusal([&] { parseWeight(bad, "--weight"); }), HasSubstr("above 0")) << bad;
}

TEST(DefaultBurst, IsTenMillisecondsOfTheRatePlusOne) {
  EXPECT_EQ(defaultBurst(std::nullopt), 1.0);
  EXPECT_EQ(defaultBurst(0.0), 1.0);
  EXPECT_EQ(defaultBurst(5.0), 2.0);
  EXPECT_EQ(defaultBurst(100.0), 2.0);
  EXPECT_EQ(defaultBurst(101.0), 3.0);
  EXPECT_EQ(defaultBurst(5000.0), 51.0);
  // Enough for pacerd's 5 ms tick to reach the rate: burst >= rate x tick + 1.
  for (double rate = 0.5; rate < 1e7; rate *= 1.7) EXPECT_GE(defaultBurst(rate), rate * 0.005 + 1) << rate;
}

TEST(MakeLimit, UsesTheDefaultBurstAndRefusesABurstWithoutARate) {
  EXPECT_EQ(makeLimit(200.0, std::nullopt).burst, 3.0);
  EXPECT_EQ(makeLimit(200.0, 7.0).burst, 7.0);
  EXPECT_EQ(makeLimit(std::nullopt, std::nullopt).rate, std::nullopt);
  EXPECT_THAT(refusal([] { makeLimit(std::nullopt, 5.0); }), HasSubstr("an unlimited rate has no burst"));
}

TEST(CheckId, TakesWhatAKafkaKeyMayBe) {
  EXPECT_NO_THROW(checkId("spring-sale", "campaign"));
  EXPECT_NO_THROW(checkId("été 2026", "campaign"));
  EXPECT_NO_THROW(checkId(std::string(256, 'a'), "campaign"));
  EXPECT_THAT(refusal([] { checkId("", "campaign"); }), HasSubstr("campaign id: empty"));
  EXPECT_THAT(refusal([] { checkId(std::string(257, 'a'), "provider"); }), HasSubstr("provider id: 257 bytes"));
  EXPECT_THAT(refusal([] { checkId("a\tb", "campaign"); }), HasSubstr("without control characters"));
  EXPECT_THAT(refusal([] { checkId("\xff", "campaign"); }), HasSubstr("UTF-8"));
  EXPECT_THAT(refusal([] { checkId("a\nb", "campaign"); }),
              HasSubstr("campaign id: must be 1 to 256 bytes of UTF-8 text without control characters"));
  EXPECT_THAT(refusal([] { checkId(std::string(10240, 'a'), "campaign"); }),
              HasSubstr("campaign id: 10240 bytes; at most 256"));
}

TEST(CheckName, AllowsEmptyAndRefusesControlCharactersAndHugeNames) {
  EXPECT_NO_THROW(checkName(""));
  EXPECT_NO_THROW(checkName("Spring sale: 20% off"));
  EXPECT_THAT(refusal([] { checkName("a\nb"); }), HasSubstr("--name"));
  EXPECT_NO_THROW(checkName(std::string(256, 'n')));
  EXPECT_THAT(refusal([] { checkName(std::string(257, 'n')); }), HasSubstr("--name: 257 bytes; at most 256"));
  EXPECT_THAT(refusal([] { checkName(std::string(10240, 'n')); }), HasSubstr("--name: 10240 bytes; at most 256"));
}

TEST(DecideTransition, FollowsTheTableForEveryActionAndState) {
  using K = Transition::Kind;
  struct Case {
    CampaignAction action;
    const char* state;
    K kind;
    const char* next;
  };
  const Case cases[] = {
      {CampaignAction::kPause, "active", K::kChange, "paused"},
      {CampaignAction::kPause, "paused", K::kAlready, "paused"},
      {CampaignAction::kPause, "cancelled", K::kRefused, ""},
      {CampaignAction::kPause, "completed", K::kRefused, ""},
      {CampaignAction::kResume, "paused", K::kChange, "active"},
      {CampaignAction::kResume, "active", K::kAlready, "active"},
      {CampaignAction::kResume, "cancelled", K::kRefused, ""},
      {CampaignAction::kResume, "completed", K::kRefused, ""},
      {CampaignAction::kCancel, "active", K::kChange, "cancelled"},
      {CampaignAction::kCancel, "paused", K::kChange, "cancelled"},
      {CampaignAction::kCancel, "cancelled", K::kAlready, "cancelled"},
      {CampaignAction::kCancel, "completed", K::kRefused, ""},
      {CampaignAction::kSetRate, "active", K::kChange, "active"},
      {CampaignAction::kSetRate, "paused", K::kChange, "paused"},
      {CampaignAction::kSetRate, "cancelled", K::kRefused, ""},
      {CampaignAction::kSetRate, "completed", K::kRefused, ""},
      {CampaignAction::kSetRules, "active", K::kChange, "active"},
      {CampaignAction::kSetRules, "paused", K::kChange, "paused"},
      {CampaignAction::kSetRules, "cancelled", K::kRefused, ""},
      {CampaignAction::kSetRules, "completed", K::kRefused, ""},
      {CampaignAction::kResume, "archived", K::kRefused, ""},
  };
  for (const Case& c : cases) {
    const Transition t = decideTransition(c.action, c.state, "c1");
    EXPECT_EQ(t.kind, c.kind) << actionName(c.action) << " " << c.state;
    EXPECT_EQ(t.next_state, c.next) << actionName(c.action) << " " << c.state;
    if (c.kind == K::kRefused)
      EXPECT_THAT(t.reason, HasSubstr("campaign 'c1'")) << actionName(c.action) << " " << c.state;
    else
      EXPECT_EQ(t.reason, "");
  }
}

TEST(DecideTransition, ARefusalSaysWhatToDoInstead) {
  EXPECT_THAT(decideTransition(CampaignAction::kResume, "cancelled", "c1").reason,
              HasSubstr("is cancelled and cannot be resumed; create a new campaign"));
  EXPECT_THAT(decideTransition(CampaignAction::kCancel, "completed", "c1").reason, HasSubstr("nothing to cancel"));
}

TEST(NotifyPayload, IsOneSmallJsonObjectWithEscapedId) {
  EXPECT_EQ(notifyPayload("campaign", "c1", "set-rate"), R"({"kind":"campaign","id":"c1","change":"set-rate"})");
  const auto j = nlohmann::json::parse(notifyPayload("provider", "a\"b\\c", "create"));
  EXPECT_EQ(j.at("id"), "a\"b\\c");
  EXPECT_EQ(j.at("kind"), "provider");
}

TEST(NotifyPayload, ReadsBackWhatPacerctlSends) {
  for (const auto& [kind, id, change] :
       {std::tuple<std::string, std::string, std::string>{"campaign", "c1", "set-rate"},
        {"campaign", "spring sale \"x\" \\ é", "pause"},
        {"provider", "sms", "create"}}) {
    const auto n = parseNotifyPayload(notifyPayload(kind, id, change));
    ASSERT_TRUE(n.has_value()) << notifyPayload(kind, id, change);
    EXPECT_EQ(n->kind, kind);
    EXPECT_EQ(n->id, id);
    EXPECT_EQ(n->change, change);
  }
}

TEST(NotifyPayload, IgnoresExtraFieldsAndUnknownChanges) {
  const auto n = parseNotifyPayload(R"({"change":"set-weight","id":"c1","kind":"campaign","by":"ops"})");
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(n->change, "set-weight");
}

TEST(NotifyPayload, RefusesWhatIsNotANotice) {
  for (const char* bad :
       {"", "hello", "[]", "{}", "null", R"({"kind":"campaign","id":"c1"})",
        R"({"kind":"campaign","id":"","change":"pause"})", R"({"kind":"topic","id":"t","change":"x"})",
        R"({"kind":"campaign","id":7,"change":"pause"})", R"({"kind":"campaign","id":"c1","change":"pause")"})
    EXPECT_FALSE(parseNotifyPayload(bad).has_value()) << bad;
}

}  // namespace
}  // namespace pacer::control
