// The scenario keys for recipient rules (issue 16): classes, arrivals, caps,
// quiet hours, and the errors for bad values, naming the field and line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "pacer/sim/scenario.h"
#include "support/thrown.h"

namespace pacer::sim {
namespace {

using ::testing::HasSubstr;

std::string errorOf(const std::string& yaml) {
  return test_support::thrownBy<ScenarioError>([&] { parseScenario(yaml); });
}

TEST(SimRulesScenario, ParsesEveryRuleKey) {
  const Scenario s = parseScenario(R"(
duration_s: 600
start_utc: "2024-03-09T12:00:00Z"
classes: [urgent, normal, low]
campaigns:
  - {id: a, class: urgent, arrival_per_s: 50, messages: 100}
  - id: b
    class: low
    recipients: 3000
    cap: "3/24h"
    cap_policy: defer
    quiet_hours: "21:00-08:00"
    time_zones: [Europe/London, America/New_York]
  - {id: c, quiet_hours: "22:00-07:30"}
)");
  using namespace std::chrono;
  EXPECT_EQ(s.classes, (std::vector<std::string>{"urgent", "normal", "low"}));
  EXPECT_EQ(s.start_utc, WallTime{sys_days{2024y / March / 9} + hours{12}});
  const CampaignScenario& a = s.campaigns[0];
  EXPECT_EQ(a.class_name, "urgent");
  EXPECT_EQ(a.priority, 0u);
  EXPECT_EQ(*a.arrival_per_s, 50);
  const CampaignScenario& b = s.campaigns[1];
  EXPECT_EQ(b.priority, 2u);
  EXPECT_EQ(b.recipients, 3000u);
  EXPECT_EQ(*b.cap, (FrequencyCapRule{3, hours{24}}));
  EXPECT_EQ(b.cap_policy, CapPolicy::kDefer);
  EXPECT_EQ(*b.quiet_hours, (QuietWindow{hours{21}, hours{8}}));
  EXPECT_EQ(b.time_zones, (std::vector<std::string>{"Europe/London", "America/New_York"}));
  ASSERT_NE(s.zones, nullptr);
  // No bulk class here: a campaign without a class takes the last one.
  EXPECT_EQ(s.campaigns[2].class_name, "low");
  // Quiet hours without zones: UTC.
  EXPECT_EQ(s.campaigns[2].time_zones, (std::vector<std::string>{"UTC"}));
}

TEST(SimRulesScenario, Defaults) {
  const Scenario s = parseScenario("duration_s: 5\ncampaigns: [{id: a}, {id: b, class: critical}]\n");
  EXPECT_EQ(s.classes, (std::vector<std::string>{"critical", "transactional", "bulk"}));
  EXPECT_EQ(s.start_utc, Scenario::kDefaultStartUtc);
  EXPECT_EQ(s.campaigns[0].class_name, "bulk");
  EXPECT_EQ(s.campaigns[0].priority, 2u);
  EXPECT_EQ(s.campaigns[1].priority, 0u);
  EXPECT_FALSE(s.campaigns[0].arrival_per_s);
  EXPECT_FALSE(s.campaigns[0].cap);
  EXPECT_FALSE(s.campaigns[0].quiet_hours);
  EXPECT_EQ(s.campaigns[0].cap_policy, CapPolicy::kSuppress);
  EXPECT_EQ(s.zones, nullptr);  // no zones named: the tz database is not read
}

TEST(SimRulesScenario, RefusesBadValuesNamingFieldAndLine) {
  EXPECT_THAT(errorOf("duration_s: 5\ncampaigns:\n  - {id: a, class: vip}\n"),
              HasSubstr("campaigns[0].class (line 3): unknown class 'vip' (classes: critical, transactional, bulk)"));
  EXPECT_THAT(errorOf("duration_s: 5\ncampaigns:\n  - {id: a, recipients: 10, cap: lots}\n"),
              HasSubstr("campaigns[0].cap (line 3): "));
  EXPECT_THAT(errorOf("duration_s: 5\ncampaigns:\n  - {id: a, recipients: 10, cap: \"0/24h\"}\n"),
              HasSubstr("campaigns[0].cap (line 3): "));
  EXPECT_THAT(errorOf("duration_s: 5\ncampaigns:\n  - {id: a, cap: \"3/24h\"}\n"),
              HasSubstr("campaigns[0].cap (line 3): needs recipients"));
  EXPECT_THAT(errorOf("duration_s: 5\ncampaigns:\n  - {id: a, recipients: 10, cap: \"3/24h\", cap_policy: drop}\n"),
              HasSubstr("campaigns[0].cap_policy (line 3): expected suppress or defer, got 'drop'"));
  EXPECT_THAT(errorOf("duration_s: 5\ncampaigns:\n  - {id: a, cap_policy: defer}\n"),
              HasSubstr("campaigns[0].cap_policy (line 3): needs a cap"));
  EXPECT_THAT(errorOf("duration_s: 5\ncampaigns:\n  - {id: a, quiet_hours: \"25:00-08:00\"}\n"),
              HasSubstr("campaigns[0].quiet_hours (line 3): "));
  EXPECT_THAT(errorOf("duration_s: 5\ncampaigns:\n  - {id: a, quiet_hours: \"late\"}\n"),
              HasSubstr("campaigns[0].quiet_hours (line 3): "));
  EXPECT_THAT(errorOf("duration_s: 5\ncampaigns:\n  - id: a\n    quiet_hours: \"21:00-08:00\"\n"
                      "    time_zones: [Europe/London, Mars/Olympus_Mons]\n"),
              HasSubstr("campaigns[0].time_zones[1] (line 5): unknown time zone 'Mars/Olympus_Mons'"));
  EXPECT_THAT(errorOf("duration_s: 5\ncampaigns:\n  - {id: a, time_zones: []}\n"),
              HasSubstr("campaigns[0].time_zones (line 3): expected a non-empty list"));
  EXPECT_THAT(errorOf("duration_s: 5\ncampaigns:\n  - {id: a, arrival_per_s: 0}\n"),
              HasSubstr("campaigns[0].arrival_per_s (line 3): expected a number > 0"));
  EXPECT_THAT(errorOf("duration_s: 5\ncampaigns:\n  - {id: a, recipients: 1.5}\n"),
              HasSubstr("campaigns[0].recipients (line 3): expected a whole number"));
}

TEST(SimRulesScenario, RefusesBadTopLevelRuleKeys) {
  EXPECT_THAT(errorOf("duration_s: 5\nclasses: [a, b, a]\ncampaigns: [{id: x, class: a}]\n"),
              HasSubstr("classes[2] (line 2): duplicate class 'a'"));
  EXPECT_THAT(errorOf("duration_s: 5\nclasses: []\ncampaigns: [{id: x}]\n"),
              HasSubstr("classes (line 2): expected a non-empty list"));
  EXPECT_THAT(errorOf("duration_s: 5\nclasses: [a, b, c, d, e, f, g, h, i]\ncampaigns: [{id: x}]\n"),
              HasSubstr("classes (line 2): at most 8 classes"));
  for (const char* bad : {"2024-03-09", "2024-02-30T12:00:00Z", "2024-03-09T12:00:00", "2024-03-09T24:00:00Z",
                          "1969-12-31T23:59:59Z", "2024-03-09T12:00:00Z junk"}) {
    EXPECT_THAT(errorOf(std::string("duration_s: 5\nstart_utc: \"") + bad + "\"\ncampaigns: [{id: x}]\n"),
                HasSubstr("start_utc (line 2): expected a UTC instant like 2024-03-09T12:00:00Z"))
        << bad;
  }
  EXPECT_THAT(errorOf("duration_s: 3000000\ncampaigns: [{id: x}]\n"),
              HasSubstr("duration_s (line 1): expected at most 2592000 simulated seconds"));
  EXPECT_THAT(errorOf("duration_s: 5\ncampaigns:\n  - {id: a, klass: bulk}\n"),
              HasSubstr("campaigns[0].klass (line 3): unknown key (expected one of: id, provider, rate, burst, weight, "
                        "messages, start_s, class, arrival_per_s, recipients, cap, cap_policy, quiet_hours, "
                        "time_zones, ttl_s, message_ttl_s)"));
}

}  // namespace
}  // namespace pacer::sim
