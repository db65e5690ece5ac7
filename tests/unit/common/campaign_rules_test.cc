#include "pacer/campaign_rules.h"

#include <gtest/gtest.h>

namespace pacer {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

TEST(FrequencyCapText, ParsesEachUnit) {
  EXPECT_EQ(parseFrequencyCap("3/24h", nullptr), (FrequencyCapRule{3, hours(24)}));
  EXPECT_EQ(parseFrequencyCap("1/30m", nullptr), (FrequencyCapRule{1, minutes(30)}));
  EXPECT_EQ(parseFrequencyCap("10/7d", nullptr), (FrequencyCapRule{10, hours(24 * 7)}));
  EXPECT_EQ(parseFrequencyCap("1000/90s", nullptr), (FrequencyCapRule{1000, seconds(90)}));
}

TEST(FrequencyCapText, RefusesWhatItCannotReadAndSaysWhy) {
  for (const char* bad : {"", "3", "3/", "/24h", "0/24h", "1001/1h", "3/24", "3/0h", "3/24x", "-1/2h", "3/367d",
                          "3 /24h", "3/24h ", "99999999999/1h"}) {
    std::string why;
    EXPECT_FALSE(parseFrequencyCap(bad, &why)) << bad;
    EXPECT_NE(why.find("frequency cap '"), std::string::npos) << bad << ": " << why;
  }
  EXPECT_TRUE(parseFrequencyCap("3/366d", nullptr));
}

TEST(FrequencyCapText, FormatsWithTheLargestWholeUnitAndRoundTrips) {
  EXPECT_EQ(formatFrequencyCap({3, hours(24)}), "3/1d");
  EXPECT_EQ(formatFrequencyCap({3, hours(36)}), "3/36h");
  EXPECT_EQ(formatFrequencyCap({2, seconds(90)}), "2/90s");
  EXPECT_EQ(formatFrequencyCap({2, milliseconds(1500)}), "2/1500ms");
  for (const char* text : {"3/24h", "1/30m", "10/7d", "5/90s", "7/61m"}) {
    const auto rule = parseFrequencyCap(text, nullptr);
    ASSERT_TRUE(rule) << text;
    EXPECT_EQ(parseFrequencyCap(formatFrequencyCap(*rule), nullptr), rule) << text;
  }
}

TEST(CapPolicyText, NamesRoundTripAndOthersAreRefused) {
  EXPECT_EQ(parseCapPolicy("suppress"), CapPolicy::kSuppress);
  EXPECT_EQ(parseCapPolicy("defer"), CapPolicy::kDefer);
  EXPECT_EQ(capPolicyName(CapPolicy::kDefer), "defer");
  EXPECT_EQ(capPolicyName(CapPolicy::kSuppress), "suppress");
  EXPECT_FALSE(parseCapPolicy("Defer"));
  EXPECT_FALSE(parseCapPolicy(""));
}

}  // namespace
}  // namespace pacer
