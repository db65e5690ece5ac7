#include "pacer/sim/report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>

namespace pacer::sim {
namespace {

using ::testing::HasSubstr;

std::string jsonOf(const SimResult& r, bool bins) {
  char* buf = nullptr;
  std::size_t len = 0;
  std::FILE* f = open_memstream(&buf, &len);
  writeJson(f, r, bins, 12.5);
  std::fclose(f);
  std::string out(buf, len);
  std::free(buf);
  return out;
}

TEST(Report, JsonHasTheDocumentedShape) {
  const Scenario s = parseScenario(R"(
duration_s: 3
providers: [{id: "sms \"eu\"", rate: 10, burst: 2}]
campaigns:
  - {id: a, provider: "sms \"eu\"", rate: 5, burst: 2, messages: 7}
  - {id: b}
)");
  const SimResult r = simulate(s, true);
  const auto doc = nlohmann::json::parse(jsonOf(r, true));
  EXPECT_EQ(doc["tick_ms"], 10);
  EXPECT_EQ(doc["wall_ms"], 12.5);
  const auto& a = doc["campaigns"]["a"];
  EXPECT_EQ(a["sent"], 7);
  EXPECT_EQ(a["rate"], 5);
  EXPECT_EQ(a["burst"], 2);
  EXPECT_EQ(a["per_s"].size(), 3u);
  EXPECT_EQ(a["bins"].size(), 300u);
  EXPECT_TRUE(a["finished_s"].is_number());
  EXPECT_TRUE(doc["campaigns"]["b"]["finished_s"].is_null());
  EXPECT_TRUE(doc["campaigns"]["b"]["rate"].is_null());
  // Ids are escaped, and providers have no finished_s.
  const auto& p = doc["providers"]["sms \"eu\""];
  EXPECT_EQ(p["sent"], 7);
  EXPECT_FALSE(p.contains("finished_s"));
}

TEST(Report, BinsAreEmptyUnlessAskedFor) {
  const SimResult r = simulate(parseScenario("duration_s: 1\ncampaigns: [{id: a, rate: 5}]"), false);
  const auto doc = nlohmann::json::parse(jsonOf(r, false));
  EXPECT_TRUE(doc["campaigns"]["a"]["bins"].empty());
  EXPECT_EQ(doc["campaigns"]["a"]["per_s"][0], 5 + 1);  // 5/s plus a burst of one tick's tokens + 1
}

TEST(Report, SummaryShowsConfiguredAndAchievedRates) {
  const Scenario s =
      parseScenario("duration_s: 10\ncampaigns: [{id: slow, rate: 50, burst: 1, messages: 100}, {id: free}]");
  const std::string t = summaryTable(s, simulate(s, false));
  EXPECT_THAT(t, HasSubstr("achieved/s"));
  EXPECT_THAT(t, ::testing::ContainsRegex("slow +50 +5[0-9]\\.[0-9] +100 +1\\.98"));
  EXPECT_THAT(t, ::testing::ContainsRegex("free +unlimited"));
}

}  // namespace
}  // namespace pacer::sim
