#include <gtest/gtest.h>

#include "pacer/quiet_hours.h"

namespace pacer {
namespace {

const TimeZoneTable& table() {
  static const TimeZoneTablePtr t = TimeZoneTable::loadSystem();
  return *t;
}

TEST(TimeZoneTable, LoadsTheOsDatabase) {
  EXPECT_GT(table().size(), 300u);
  EXPECT_NE(table().version(), "");
}

TEST(TimeZoneTable, FindsCanonicalNamesAndBackwardLinks) {
  for (const char* name : {"Europe/London", "America/New_York", "Asia/Kolkata", "Asia/Calcutta", "US/Eastern",
                           "Australia/Lord_Howe", "Pacific/Chatham", "UTC", "Etc/UTC", "Etc/GMT+5"}) {
    const std::optional<ZoneId> z = table().find(name);
    ASSERT_TRUE(z) << name;
    EXPECT_EQ(table().name(*z), name);
  }
}

TEST(TimeZoneTable, UnknownNamesAreNotFound) {
  for (const char* name : {"", "Mars/Olympus_Mons", "europe/london", "Europe/London ", "localtime", "posixrules",
                           "../../etc/passwd", "Europe/London\n"}) {
    EXPECT_FALSE(table().find(name)) << name;
  }
}

TEST(TimeZoneTable, ResolvePrefersTheMessageZoneAndNeverHidesAnUnknownOne) {
  const ZoneResolution own = table().resolve("Asia/Tokyo", "Europe/Paris");
  ASSERT_EQ(own.status, ZoneStatus::kOk);
  EXPECT_EQ(table().name(own.zone), "Asia/Tokyo");
  EXPECT_FALSE(own.from_default);

  const ZoneResolution dflt = table().resolve("", "Europe/Paris");
  ASSERT_EQ(dflt.status, ZoneStatus::kOk);
  EXPECT_EQ(table().name(dflt.zone), "Europe/Paris");
  EXPECT_TRUE(dflt.from_default);

  // A zone the message names but the database lacks is an error, not a
  // silent fall-back to the campaign's zone.
  const ZoneResolution bad = table().resolve("Europe/Atlantis", "Europe/Paris");
  EXPECT_EQ(bad.status, ZoneStatus::kUnknownZone);
  EXPECT_FALSE(bad.from_default);
  EXPECT_EQ(toString(bad.status), "unknown time zone");

  EXPECT_EQ(table().resolve("", "").status, ZoneStatus::kNoZone);
  EXPECT_EQ(table().resolve("", "Nowhere/City").status, ZoneStatus::kUnknownZone);
}

TEST(TimeZoneTable, RequireThrowsATypedErrorNamingTheZone) {
  EXPECT_EQ(table().name(table().require("Pacific/Auckland")), "Pacific/Auckland");
  try {
    table().require("Pacific/Nowhere");
    FAIL() << "no exception";
  } catch (const TimeZoneError& e) {
    EXPECT_NE(std::string(e.what()).find("Pacific/Nowhere"), std::string::npos);
  }
}

TEST(TimeZoneTable, TwoLoadsNumberZonesAlike) {
  const TimeZoneTablePtr other = TimeZoneTable::loadSystem();
  ASSERT_EQ(other->size(), table().size());
  for (const char* name : {"Africa/Abidjan", "Europe/London", "Pacific/Wake", "Zulu"})
    EXPECT_EQ(other->find(name), table().find(name)) << name;
}

}  // namespace
}  // namespace pacer
