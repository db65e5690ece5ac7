// Connection strings: passwords never shown, connect timeouts added in the right syntax.
#include "pacer/conninfo.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace pacer {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(RedactConninfo, HidesKeywordPasswordsInEveryQuotingStyle) {
  EXPECT_EQ(redactConninfo("host=db port=5432 user=pacer password=s3cret dbname=pacer"),
            "host=db port=5432 user=pacer password=*** dbname=pacer");
  EXPECT_EQ(redactConninfo("password = 's3 cr\\'et' host=db"), "password = *** host=db");
  EXPECT_EQ(redactConninfo("host=db PASSWORD=s3cret"), "host=db PASSWORD=***");
  EXPECT_EQ(redactConninfo("host=db password=a\\ b"), "host=db password=***");
  EXPECT_EQ(redactConninfo("host=db dbname=pacer"), "host=db dbname=pacer");
  EXPECT_EQ(redactConninfo(""), "");
}

TEST(RedactConninfo, HidesUriPasswordsInUserInfoAndQuery) {
  EXPECT_EQ(redactConninfo("postgresql://pacer:s3cret@db:5432/pacer"), "postgresql://pacer:***@db:5432/pacer");
  EXPECT_EQ(redactConninfo("postgres://pacer@db/pacer?password=s3cret&sslmode=require"),
            "postgres://pacer@db/pacer?password=***&sslmode=require");
  EXPECT_EQ(redactConninfo("postgresql://db/pacer"), "postgresql://db/pacer");
  // Unencoded '/' and '@' in the password: still hidden whole.
  const std::string odd = redactConninfo("postgresql://u:se/cr@et@db/pacer");
  EXPECT_THAT(odd, Not(HasSubstr("se/cr"))) << odd;
  EXPECT_THAT(odd, Not(HasSubstr("et@db/"))) << odd;
}

TEST(RedactConninfo, HidesWhatItCannotParse) {
  for (const char* bad : {"password=sec ret", "host=db password='unterminated", "justtext"}) {
    const std::string shown = redactConninfo(bad);
    EXPECT_THAT(shown, HasSubstr("hidden")) << bad;
    EXPECT_THAT(shown, Not(HasSubstr("sec"))) << bad;
    EXPECT_THAT(shown, Not(HasSubstr("unterminated"))) << bad;
  }
}

TEST(HidePasswords, ReplacesEveryPasswordInAMessage) {
  EXPECT_EQ(hidePasswords(R"(invalid percent-encoded token: "s3%zz")", "postgresql://u:s3%zz@db/pacer"),
            R"(invalid percent-encoded token: "***")");
  EXPECT_EQ(hidePasswords("bad: pw1 and pw2 and pw1", "host=db password=pw1 dbname=x"), "bad: *** and pw2 and ***");
  EXPECT_EQ(hidePasswords("bad: a b", "password='a b'"), "bad: ***");
  EXPECT_EQ(hidePasswords("x=pw2", "postgres://db/p?password=pw2"), "x=***");
  EXPECT_EQ(hidePasswords("no secret here", "host=db"), "no secret here");
  EXPECT_THAT(hidePasswords("sec ret", "password=sec ret"), Not(HasSubstr("sec")));
}

TEST(ConninfoParses, AcceptsKeywordsAndUrlsOnly) {
  EXPECT_TRUE(conninfoParses("host=db dbname=pacer"));
  EXPECT_TRUE(conninfoParses("postgresql://db/pacer"));
  EXPECT_FALSE(conninfoParses("pacer"));
  EXPECT_FALSE(conninfoParses("host=db password='open"));
}

TEST(WithConnectTimeout, AddsOneUnlessGiven) {
  EXPECT_EQ(withConnectTimeout("host=db", 5), "host=db connect_timeout=5");
  EXPECT_EQ(withConnectTimeout("host=db connect_timeout=9", 5), "host=db connect_timeout=9");
  EXPECT_EQ(withConnectTimeout("postgresql://db/pacer", 3), "postgresql://db/pacer?connect_timeout=3");
  EXPECT_EQ(withConnectTimeout("postgresql://db/pacer?sslmode=off", 3),
            "postgresql://db/pacer?sslmode=off&connect_timeout=3");
}

}  // namespace
}  // namespace pacer
