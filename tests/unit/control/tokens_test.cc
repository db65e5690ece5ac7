// The CSV and JSON of `pacerctl tokens export` and its --since times.
#include "pacer/control/tokens.h"

#include <gtest/gtest.h>

#include "pacer/control/values.h"

namespace pacer::control {
namespace {

InvalidTokenRow tokenRow() {
  InvalidTokenRow r;
  r.provider = "apns";
  r.token = "a1b2";
  r.reason = "invalid token: Unregistered";
  r.first_seen = "2026-11-20T08:00:00Z";
  r.last_seen = "2026-11-23T09:30:00Z";
  r.campaign = "spring";
  r.hits = 3;
  return r;
}

TEST(TokenCsv, PlainFieldsAreWrittenAsTheyAreAndAnAbsentTimestampIsEmpty) {
  EXPECT_EQ(tokenCsvLine(tokenRow()),
            "apns,a1b2,invalid token: Unregistered,2026-11-20T08:00:00Z,2026-11-23T09:30:00Z,,spring,3\n");
  EXPECT_EQ(tokenCsvHeader(), "provider,token,reason,first_seen,last_seen,provider_timestamp,campaign,hits\n");
}

TEST(TokenCsv, FieldsWithCommasQuotesOrNewlinesAreQuotedWithQuotesDoubled) {
  InvalidTokenRow r = tokenRow();
  r.reason = "said \"no\", twice";
  r.campaign = "line\nbreak";
  r.provider_timestamp = "2026-11-19T12:00:00Z";
  EXPECT_EQ(tokenCsvLine(r),
            "apns,a1b2,\"said \"\"no\"\", twice\",2026-11-20T08:00:00Z,2026-11-23T09:30:00Z,"
            "2026-11-19T12:00:00Z,\"line\nbreak\",3\n");
}

TEST(TokenJson, AnAbsentProviderTimestampIsNull) {
  const Json j = tokenJson(tokenRow());
  EXPECT_TRUE(j.at("provider_timestamp").is_null());
  EXPECT_EQ(j.at("hits"), 3);
  EXPECT_EQ(j.dump(), R"({"provider":"apns","token":"a1b2","reason":"invalid token: Unregistered",)"
                      R"("first_seen":"2026-11-20T08:00:00Z","last_seen":"2026-11-23T09:30:00Z",)"
                      R"("provider_timestamp":null,"campaign":"spring","hits":3})");
}

TEST(ParseSinceTime, TakesDatesTimesAndZonesAndMeansUtcWithoutOne) {
  EXPECT_EQ(parseSinceTime("2026-11-23", "--since"), "2026-11-23T00:00:00Z");
  EXPECT_EQ(parseSinceTime("2026-11-23T08:05", "--since"), "2026-11-23T08:05:00Z");
  EXPECT_EQ(parseSinceTime("2026-11-23 08:05:09", "--since"), "2026-11-23T08:05:09Z");
  EXPECT_EQ(parseSinceTime("2026-11-23T08:05:09.125Z", "--since"), "2026-11-23T08:05:09.125Z");
  EXPECT_EQ(parseSinceTime("2026-11-23T08:05:09+01:00", "--since"), "2026-11-23T08:05:09+01:00");
  EXPECT_EQ(parseSinceTime("2026-11-23T08:05:09-05:30", "--since"), "2026-11-23T08:05:09-05:30");
  EXPECT_EQ(parseSinceTime("2024-02-29", "--since"), "2024-02-29T00:00:00Z");
}

TEST(ParseSinceTime, RefusesAnythingElseNamingTheFlag) {
  for (const char* bad :
       {"", "yesterday", "2026-11-23T", "2026-13-01", "2026-02-29", "2026-11-31", "2026-11-23T24:00",
        "2026-11-23T08:60", "2026-11-23T08:00:61", "2026-11-23T08:00:00.", "2026-11-23Z1", "2026-11-23T08:00:00+1",
        "2026-11-23T08:00:00+15:00", "2026-11-23T08:00:00 UTC", "1700000000", "2026-11-23T08:00:00Zjunk"}) {
    try {
      parseSinceTime(bad, "--since");
      ADD_FAILURE() << "took '" << bad << "'";
    } catch (const InvalidValueError& e) {
      EXPECT_NE(std::string(e.what()).find("--since: '"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace pacer::control
