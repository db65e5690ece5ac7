// Hand-checked quiet-hours cases, most of them on the nights clocks change.
// Every expected instant is written in UTC with the local reading beside it.
#include "pacer/quiet_hours.h"

#include <gtest/gtest.h>

#include "support/wall_time.h"

namespace pacer {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

using test::utc;

QuietWindow win(const char* text) {
  const QuietWindowParse p = parseQuietWindow(text);
  EXPECT_TRUE(p.window) << p.error;
  return p.window.value_or(QuietWindow{});
}

class QuietHoursTest : public ::testing::Test {
 protected:
  static TimeZoneTablePtr sharedTable() {
    static const TimeZoneTablePtr t = TimeZoneTable::loadSystem();
    return t;
  }
  ZoneId zone(const char* name) { return sharedTable()->require(name); }
  QuietHours quiet{sharedTable()};
};

TEST_F(QuietHoursTest, FixedOffsetZoneWithAHalfHour) {
  const ZoneId z = zone("Asia/Kolkata");  // +05:30 all year
  const QuietWindow w = win("21:00-08:00");
  EXPECT_FALSE(quiet.isQuiet(z, w, utc(2024, 6, 1, 15, 29, 59)));                       // 20:59:59
  EXPECT_TRUE(quiet.isQuiet(z, w, utc(2024, 6, 1, 15, 30)));                            // 21:00
  EXPECT_EQ(quiet.nextAllowed(z, w, utc(2024, 6, 1, 15, 30)), utc(2024, 6, 2, 2, 30));  // 08:00
  EXPECT_TRUE(quiet.isQuiet(z, w, utc(2024, 6, 2, 2, 29, 59)));
  EXPECT_FALSE(quiet.isQuiet(z, w, utc(2024, 6, 2, 2, 30)));
  EXPECT_EQ(quiet.nextAllowed(z, w, utc(2024, 6, 2, 4, 0)), utc(2024, 6, 2, 4, 0));
}

TEST_F(QuietHoursTest, QuarterHourOffsetOfChatham) {
  const ZoneId z = zone("Pacific/Chatham");  // +13:45 in January
  const QuietWindow w = win("21:00-08:00");
  EXPECT_FALSE(quiet.isQuiet(z, w, utc(2024, 1, 15, 7, 14, 59)));
  EXPECT_TRUE(quiet.isQuiet(z, w, utc(2024, 1, 15, 7, 15)));
  EXPECT_EQ(quiet.nextAllowed(z, w, utc(2024, 1, 15, 12, 0)), utc(2024, 1, 15, 18, 15));
}

TEST_F(QuietHoursTest, NoWindowIsNeverQuiet) {
  const ZoneId z = zone("Europe/London");
  for (int h = 0; h < 24; ++h) {
    EXPECT_FALSE(quiet.isQuiet(z, QuietWindow{}, utc(2024, 3, 31, h, 0)));
    EXPECT_EQ(quiet.nextAllowed(z, QuietWindow{}, utc(2024, 3, 31, h, 7)), utc(2024, 3, 31, h, 7));
  }
}

// New York, 10 March 2024: 02:00 EST becomes 03:00 EDT at 07:00 UTC.
TEST_F(QuietHoursTest, SpringForwardEndInsideTheSkippedHourEndsAtTheChange) {
  const ZoneId z = zone("America/New_York");
  const QuietWindow w = win("22:00-02:30");
  EXPECT_FALSE(quiet.isQuiet(z, w, utc(2024, 3, 10, 2, 59, 59)));  // 9 Mar 21:59:59 EST
  EXPECT_TRUE(quiet.isQuiet(z, w, utc(2024, 3, 10, 3, 0)));        // 9 Mar 22:00 EST
  EXPECT_TRUE(quiet.isQuiet(z, w, utc(2024, 3, 10, 6, 59, 59)));   // 01:59:59 EST
  EXPECT_FALSE(quiet.isQuiet(z, w, utc(2024, 3, 10, 7, 0)));       // 03:00 EDT
  EXPECT_EQ(quiet.nextAllowed(z, w, utc(2024, 3, 10, 4, 0)), utc(2024, 3, 10, 7, 0));
}

TEST_F(QuietHoursTest, SpringForwardStartInsideTheSkippedHourStartsAtTheChange) {
  const ZoneId z = zone("America/New_York");
  const QuietWindow w = win("02:30-06:00");
  EXPECT_FALSE(quiet.isQuiet(z, w, utc(2024, 3, 10, 6, 59, 59)));                       // 01:59:59 EST
  EXPECT_TRUE(quiet.isQuiet(z, w, utc(2024, 3, 10, 7, 0)));                             // 03:00 EDT
  EXPECT_EQ(quiet.nextAllowed(z, w, utc(2024, 3, 10, 7, 0)), utc(2024, 3, 10, 10, 0));  // 06:00 EDT
}

TEST_F(QuietHoursTest, AWindowWhollyInsideTheSkippedHourDoesNotHappenThatNight) {
  const ZoneId z = zone("America/New_York");
  const QuietWindow w = win("02:00-02:30");
  for (WallTime t = utc(2024, 3, 10, 5, 0); t < utc(2024, 3, 10, 9, 0); t += minutes(1))
    EXPECT_FALSE(quiet.isQuiet(z, w, t));
  // The next night it is there again: 02:00 EDT is 06:00 UTC.
  EXPECT_FALSE(quiet.isQuiet(z, w, utc(2024, 3, 11, 5, 59)));
  EXPECT_TRUE(quiet.isQuiet(z, w, utc(2024, 3, 11, 6, 0)));
  EXPECT_EQ(quiet.nextAllowed(z, w, utc(2024, 3, 11, 6, 10)), utc(2024, 3, 11, 6, 30));
}

// New York, 3 November 2024: 02:00 EDT becomes 01:00 EST at 06:00 UTC, so
// 01:00-01:59 happens twice (05:00-05:59 UTC and 06:00-06:59 UTC).
TEST_F(QuietHoursTest, FallBackEndInsideTheRepeatedHourIsItsLastOccurrence) {
  const ZoneId z = zone("America/New_York");
  const QuietWindow w = win("21:00-01:30");
  EXPECT_TRUE(quiet.isQuiet(z, w, utc(2024, 11, 3, 1, 0)));  // 2 Nov 21:00 EDT
  // 01:45 EDT: the clock is past 01:30, but it will show 01:00-01:30 again;
  // the window stays shut instead of opening for 15 minutes.
  EXPECT_TRUE(quiet.isQuiet(z, w, utc(2024, 11, 3, 5, 45)));
  EXPECT_TRUE(quiet.isQuiet(z, w, utc(2024, 11, 3, 6, 29, 59)));  // 01:29:59 EST
  EXPECT_FALSE(quiet.isQuiet(z, w, utc(2024, 11, 3, 6, 30)));     // 01:30 EST
  EXPECT_EQ(quiet.nextAllowed(z, w, utc(2024, 11, 3, 2, 0)), utc(2024, 11, 3, 6, 30));
}

TEST_F(QuietHoursTest, FallBackStartInsideTheRepeatedHourIsItsFirstOccurrence) {
  const ZoneId z = zone("America/New_York");
  const QuietWindow w = win("01:30-06:00");
  EXPECT_FALSE(quiet.isQuiet(z, w, utc(2024, 11, 3, 5, 29)));                            // 01:29 EDT
  EXPECT_TRUE(quiet.isQuiet(z, w, utc(2024, 11, 3, 5, 30)));                             // 01:30 EDT
  EXPECT_TRUE(quiet.isQuiet(z, w, utc(2024, 11, 3, 6, 10)));                             // 01:10 EST: still shut
  EXPECT_EQ(quiet.nextAllowed(z, w, utc(2024, 11, 3, 5, 30)), utc(2024, 11, 3, 11, 0));  // 06:00 EST
}

TEST_F(QuietHoursTest, FallBackWindowInsideTheRepeatedHourCoversBothPasses) {
  const ZoneId z = zone("America/New_York");
  const QuietWindow w = win("01:00-01:30");
  EXPECT_FALSE(quiet.isQuiet(z, w, utc(2024, 11, 3, 4, 59)));
  EXPECT_TRUE(quiet.isQuiet(z, w, utc(2024, 11, 3, 5, 0)));                             // 01:00 EDT
  EXPECT_EQ(quiet.nextAllowed(z, w, utc(2024, 11, 3, 5, 0)), utc(2024, 11, 3, 6, 30));  // 01:30 EST
}

// Lord Howe Island moves its clocks by 30 minutes: on 7 April 2024 02:00
// (+11) becomes 01:30 (+10:30) at 15:00 UTC on 6 April; on 6 October 2024
// 02:00 (+10:30) becomes 02:30 (+11) at 15:30 UTC on 5 October.
TEST_F(QuietHoursTest, LordHoweHalfHourFallBack) {
  const ZoneId z = zone("Australia/Lord_Howe");
  const QuietWindow w = win("22:00-01:45");
  EXPECT_TRUE(quiet.isQuiet(z, w, utc(2024, 4, 6, 14, 50)));   // 01:50 +11, 01:30-01:45 comes again
  EXPECT_TRUE(quiet.isQuiet(z, w, utc(2024, 4, 6, 15, 10)));   // 01:40 +10:30
  EXPECT_FALSE(quiet.isQuiet(z, w, utc(2024, 4, 6, 15, 15)));  // 01:45 +10:30
  EXPECT_EQ(quiet.nextAllowed(z, w, utc(2024, 4, 6, 12, 0)), utc(2024, 4, 6, 15, 15));
}

TEST_F(QuietHoursTest, LordHoweHalfHourSpringForward) {
  const ZoneId z = zone("Australia/Lord_Howe");
  const QuietWindow w = win("23:00-02:15");                     // 02:15 does not exist on 6 October
  EXPECT_TRUE(quiet.isQuiet(z, w, utc(2024, 10, 5, 15, 29)));   // 01:59 +10:30
  EXPECT_FALSE(quiet.isQuiet(z, w, utc(2024, 10, 5, 15, 30)));  // 02:30 +11
  EXPECT_EQ(quiet.nextAllowed(z, w, utc(2024, 10, 5, 13, 0)), utc(2024, 10, 5, 15, 30));
}

// London, 31 March 2024: 01:00 GMT becomes 02:00 BST at 01:00 UTC.
TEST_F(QuietHoursTest, LondonWindowEndingInTheSkippedHour) {
  const ZoneId z = zone("Europe/London");
  const QuietWindow w = win("00:30-01:30");
  EXPECT_TRUE(quiet.isQuiet(z, w, utc(2024, 3, 31, 0, 30)));
  EXPECT_EQ(quiet.nextAllowed(z, w, utc(2024, 3, 31, 0, 45)), utc(2024, 3, 31, 1, 0));  // 02:00 BST
  EXPECT_FALSE(quiet.isQuiet(z, w, utc(2024, 3, 31, 1, 0)));
}

// Santiago falls back at midnight: on 7 April 2024 00:00 (-03) becomes
// 23:00 (-04) on 6 April, at 03:00 UTC.
TEST_F(QuietHoursTest, SantiagoMidnightFallBackKeepsTheWindowShut) {
  const ZoneId z = zone("America/Santiago");
  const QuietWindow w = win("23:30-06:00");
  EXPECT_FALSE(quiet.isQuiet(z, w, utc(2024, 4, 7, 2, 29)));                           // 23:29 -03
  EXPECT_TRUE(quiet.isQuiet(z, w, utc(2024, 4, 7, 2, 30)));                            // 23:30 -03
  EXPECT_TRUE(quiet.isQuiet(z, w, utc(2024, 4, 7, 3, 10)));                            // 23:10 -04 again: still shut
  EXPECT_EQ(quiet.nextAllowed(z, w, utc(2024, 4, 7, 2, 40)), utc(2024, 4, 7, 10, 0));  // 06:00 -04
}

// Samoa skipped Friday 30 December 2011: 29 Dec 24:00 (-10) became
// 31 Dec 00:00 (+14) at 10:00 UTC on 30 December.
TEST_F(QuietHoursTest, ApiaSkippedDayJoinsTheTwoNightsWindows) {
  const ZoneId z = zone("Pacific/Apia");
  const QuietWindow w = win("21:00-08:00");
  EXPECT_FALSE(quiet.isQuiet(z, w, utc(2011, 12, 30, 6, 59)));                            // 29 Dec 20:59 -10
  EXPECT_TRUE(quiet.isQuiet(z, w, utc(2011, 12, 30, 7, 0)));                              // 29 Dec 21:00 -10
  EXPECT_TRUE(quiet.isQuiet(z, w, utc(2011, 12, 30, 10, 0)));                             // 31 Dec 00:00 +14
  EXPECT_EQ(quiet.nextAllowed(z, w, utc(2011, 12, 30, 8, 0)), utc(2011, 12, 30, 18, 0));  // 31 Dec 08:00 +14
}

TEST_F(QuietHoursTest, MillisecondsAreKeptAndTheWaitIsExact) {
  const ZoneId z = zone("Europe/Berlin");  // +02:00 in July
  const QuietWindow w = win("22:00-07:00");
  const WallTime t = utc(2024, 7, 1, 20, 0) + std::chrono::milliseconds(123);  // 22:00:00.123
  const QuietCheck c = quiet.check(z, w, t);
  EXPECT_TRUE(c.quiet);
  EXPECT_EQ(c.allowed_at, utc(2024, 7, 2, 5, 0));  // 07:00
  EXPECT_TRUE(quiet.isQuiet(z, w, utc(2024, 7, 2, 5, 0) - std::chrono::milliseconds(1)));
}

TEST_F(QuietHoursTest, InstantsFarOutsideTheCalendarDoNotBreakIt) {
  const ZoneId z = zone("America/New_York");
  const QuietWindow w = win("21:00-08:00");
  const QuietCheck lo = quiet.check(z, w, WallTime::min());
  const QuietCheck hi = quiet.check(z, w, WallTime::max());
  EXPECT_GE(lo.allowed_at, WallTime::min());
  EXPECT_GE(hi.allowed_at, utc(9999, 12, 30, 0, 0));
}

}  // namespace
}  // namespace pacer
