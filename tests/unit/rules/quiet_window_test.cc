#include <gtest/gtest.h>

#include "pacer/quiet_hours.h"

namespace pacer {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

TEST(QuietWindowParse, ReadsAWrappingWindow) {
  const QuietWindowParse p = parseQuietWindow("21:00-08:00");
  ASSERT_TRUE(p.window) << p.error;
  EXPECT_EQ(p.window->start, hours(21));
  EXPECT_EQ(p.window->end, hours(8));
  EXPECT_TRUE(p.window->wraps());
  EXPECT_FALSE(p.window->none());
}

TEST(QuietWindowParse, ReadsSecondsSpacesAndMidnightAsEnd) {
  const QuietWindowParse p = parseQuietWindow(" 22:15:30 - 24:00 ");
  ASSERT_TRUE(p.window) << p.error;
  EXPECT_EQ(p.window->start, hours(22) + minutes(15) + seconds(30));
  EXPECT_EQ(p.window->end, seconds(0));
  EXPECT_EQ(formatQuietWindow(*p.window), "22:15:30-00:00");
}

TEST(QuietWindowParse, EmptyNoneAndEqualEndsMeanNoQuietHours) {
  for (const char* text : {"", "none", "  ", "09:00-09:00"}) {
    const QuietWindowParse p = parseQuietWindow(text);
    ASSERT_TRUE(p.window) << text << ": " << p.error;
    EXPECT_TRUE(p.window->none()) << text;
  }
  EXPECT_EQ(formatQuietWindow(QuietWindow{}), "none");
}

TEST(QuietWindowParse, RejectsMalformedTextWithAReason) {
  for (const char* text : {"21:00", "21-08", "25:00-08:00", "21:60-08:00", "24:00-08:00", "21:00-24:01", "9:00-10:00",
                           "21:00-08:00:7", "aa:bb-cc:dd", "21:00--08:00", "21.00-08.00"}) {
    const QuietWindowParse p = parseQuietWindow(text);
    EXPECT_FALSE(p.window) << text;
    EXPECT_NE(p.error.find("quiet window"), std::string::npos) << text;
  }
}

TEST(QuietWindowParse, FormatRoundTrips) {
  for (const char* text : {"21:00-08:00", "00:00-06:30", "23:59:59-00:00:01", "08:00-21:00"}) {
    const QuietWindowParse p = parseQuietWindow(text);
    ASSERT_TRUE(p.window) << text;
    EXPECT_EQ(formatQuietWindow(*p.window), text);
  }
}

TEST(QuietWindow, ValidOnlyWithinOneDay) {
  EXPECT_TRUE((QuietWindow{hours(21), hours(8)}.valid()));
  EXPECT_FALSE((QuietWindow{hours(24), hours(8)}.valid()));
  EXPECT_FALSE((QuietWindow{seconds(-1), hours(8)}.valid()));
}

}  // namespace
}  // namespace pacer
