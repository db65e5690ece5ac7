#include "pacer/sim/scenario.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/thrown.h"

namespace pacer::sim {
namespace {

using ::testing::HasSubstr;

std::string errorOf(const std::string& yaml) {
  return test_support::thrownBy<ScenarioError>([&] { parseScenario(yaml); });
}

TEST(Scenario, ParsesTheDocumentedExample) {
  const Scenario s = parseScenario(R"(
duration_s: 60
tick_ms: 10
capacity_per_s: 5000
algorithm: token_bucket
window_s: 1
stalls: [{from_s: 4, to_s: 6}]
providers: [{id: sms, rate: 400, burst: 40}]
campaigns:
  - {id: a, provider: sms, rate: 300, burst: 30, weight: 1, messages: 10000, start_s: 0}
  - {id: b}
)");
  EXPECT_EQ(s.duration_s, 60);
  EXPECT_EQ(*s.capacity_per_s, 5000);
  ASSERT_EQ(s.stalls.size(), 1u);
  EXPECT_EQ(s.stalls[0].to_s, 6);
  ASSERT_EQ(s.campaigns.size(), 2u);
  EXPECT_EQ(*s.campaigns[0].provider, "sms");
  EXPECT_EQ(*s.campaigns[0].messages, 10000u);
  // Defaults: no provider, unlimited rate, weight 1, endless backlog, start at 0.
  EXPECT_FALSE(s.campaigns[1].provider);
  EXPECT_FALSE(s.campaigns[1].rate);
  EXPECT_EQ(s.campaigns[1].weight, 1);
  EXPECT_FALSE(s.campaigns[1].messages);
  EXPECT_EQ(s.campaigns[1].start_s, 0);
}

TEST(Scenario, JsonIsValidToo) {
  const Scenario s = parseScenario(R"({"duration_s": 2, "campaigns": [{"id": "x", "rate": 5}]})");
  EXPECT_EQ(s.tick_ms, 10);
  EXPECT_EQ(s.algorithm, Algorithm::kTokenBucket);
  EXPECT_EQ(*s.campaigns[0].rate, 5);
  EXPECT_EQ(s.campaigns[0].burst, defaultBurst(5, 10));
}

TEST(Scenario, DefaultBurstLetsATokenBucketReachItsRateAtThisTick) {
  EXPECT_EQ(defaultBurst(350, 10), 5);  // 3.5 per tick, rounded up, plus one
  EXPECT_EQ(defaultBurst(0.01, 10), 2);
  EXPECT_EQ(defaultBurst(0, 10), 1);
}

TEST(Scenario, ErrorsNameTheFieldAndWhatWasExpected) {
  EXPECT_THAT(errorOf("campaigns: [{id: a}]"), HasSubstr("duration_s: required"));
  EXPECT_THAT(errorOf("duration_s: -1\ncampaigns: [{id: a}]"), HasSubstr("duration_s (line 1): expected a number > 0"));
  EXPECT_THAT(errorOf("duration_s: 5\ncampaigns:\n  - {id: a, rate: fast}"),
              HasSubstr("campaigns[0].rate (line 3): expected a number, got 'fast'"));
  EXPECT_THAT(errorOf("duration_s: 5\ncampaigns:\n  - {id: a, rate: -3}"), HasSubstr("campaigns[0].rate"));
  EXPECT_THAT(errorOf("duration_s: 5\ncampaigns: [{id: a, provider: nope}]"),
              HasSubstr("campaigns[0].provider (line 2): no provider with id 'nope'"));
  EXPECT_THAT(errorOf("duration_s: 5\nalgorithm: bucket\ncampaigns: [{id: a}]"),
              HasSubstr("algorithm (line 2): unknown algorithm 'bucket'"));
  EXPECT_THAT(errorOf("duration_s: 5\ncampaigns: [{id: a, rat: 5}]"),
              HasSubstr("campaigns[0].rat (line 2): unknown key"));
  EXPECT_THAT(errorOf("duration_s: 5\ncampaigns: [{id: a}, {id: a}]"), HasSubstr("duplicate campaign id 'a'"));
  EXPECT_THAT(errorOf("duration_s: 5\ncampaigns: [{id: a, weight: 0}]"), HasSubstr("campaigns[0].weight"));
  EXPECT_THAT(errorOf("duration_s: 5\ncampaigns: [{id: a, burst: 0.5}]"), HasSubstr("campaigns[0].burst"));
  EXPECT_THAT(errorOf("duration_s: 5\ncampaigns: [{id: a, messages: 2.5}]"), HasSubstr("campaigns[0].messages"));
  EXPECT_THAT(errorOf("duration_s: 5\nstalls: [{from_s: 3, to_s: 1}]\ncampaigns: [{id: a}]"),
              HasSubstr("stalls[0].to_s"));
  EXPECT_THAT(errorOf("duration_s: 5\ncampaigns: []"), HasSubstr("campaigns: required"));
  EXPECT_THAT(errorOf("duration_s: 5\nalgorithm: sliding_log\nwindow_s: 1\ncampaigns: [{id: a, rate: 0.5}]"),
              HasSubstr("rate x window_s must be >= 1"));
  EXPECT_THAT(errorOf("duration_s: 0.0000000005\ncampaigns: [{id: a}]"),
              HasSubstr("duration_s (line 1): shorter than one tick"));
  EXPECT_THAT(errorOf("duration_s: 5\ncapacity_per_s: 1e30\ncampaigns: [{id: a}]"),
              HasSubstr("capacity_per_s (line 2): expected at most 1e10"));
  EXPECT_THAT(errorOf("duration_s: 5\ncampaigns: [{id: a, start_s: 1e30}]"),
              HasSubstr("campaigns[0].start_s (line 2): at or after the end"));
  EXPECT_THAT(errorOf("duration_s: 5\nwindow_s: 1e-12\ncampaigns: [{id: a}]"),
              HasSubstr("window_s (line 2): expected 0.001 to 86400"));
  EXPECT_THAT(errorOf("duration_s: 86400\ntick_ms: 0.001\ncampaigns: [{id: a}]"), HasSubstr("at most 100,000,000"));
  EXPECT_THAT(errorOf("duration_s: [5"), HasSubstr("not valid YAML"));
  EXPECT_THAT(errorOf("- 1\n- 2"), HasSubstr("expected a mapping at the top level"));
}

TEST(Scenario, LoadNamesAMissingFile) {
  try {
    loadScenario("/nonexistent/scenario.yaml");
    FAIL() << "expected an error";
  } catch (const ScenarioError& e) {
    EXPECT_THAT(e.what(), HasSubstr("/nonexistent/scenario.yaml: cannot open"));
  }
}

}  // namespace
}  // namespace pacer::sim
