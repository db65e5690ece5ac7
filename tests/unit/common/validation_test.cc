#include "pacer/validation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

namespace pacer::validation {
namespace {

using ::testing::HasSubstr;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(Validation, RatesInsideTheBoundsAreUsable) {
  for (double r : {kMinRate, 0.5, 1.0, 150.0, 9'999'999.5, kMaxRate})
    EXPECT_EQ(rateProblem("rate", r), std::nullopt) << r;
}

TEST(Validation, EachRefusedRateNamesTheFieldTheValueAndTheBound) {
  struct Case {
    double rate;
    const char* value;
    const char* bound;
  };
  for (const Case& c :
       {Case{1e-300, "1e-300", "smallest rate, 0.001 per second"},
        Case{0.000999, "0.000999", "smallest rate, 0.001 per second"}, Case{0, "0", "smallest rate, 0.001 per second"},
        Case{-5, "-5", "smallest rate, 0.001 per second"}, Case{1e308, "1e+308", "largest rate, 10000000 per second"},
        Case{10'000'000.5, "10000000.5", "largest rate, 10000000 per second"},
        Case{kNaN, "NaN", "0.001 to 10000000 per second"}, Case{kInf, "Infinity", "0.001 to 10000000 per second"},
        Case{-kInf, "-Infinity", "0.001 to 10000000 per second"}}) {
    const auto why = rateProblem("send_rate", c.rate);
    ASSERT_TRUE(why.has_value()) << c.value;
    EXPECT_THAT(*why, HasSubstr(std::string("send_rate ") + c.value)) << *why;
    EXPECT_THAT(*why, HasSubstr(c.bound)) << *why;
  }
}

TEST(Validation, BurstsFromOneToTheLargest) {
  EXPECT_EQ(burstProblem("burst", 1), std::nullopt);
  EXPECT_EQ(burstProblem("burst", kMaxBurst), std::nullopt);
  for (double b : {0.999, 0.0, -1.0, kMaxBurst * 1.0000001, 1e308, kNaN, kInf}) {
    const auto why = burstProblem("--burst", b);
    ASSERT_TRUE(why.has_value()) << b;
    EXPECT_THAT(*why, HasSubstr("--burst")) << *why;
    EXPECT_THAT(*why, HasSubstr("from 1 to 10000000")) << *why;
  }
}

TEST(Validation, WeightsAboveZeroUpToTheLargest) {
  EXPECT_EQ(weightProblem("weight", 1e-9), std::nullopt);
  EXPECT_EQ(weightProblem("weight", kMaxWeight), std::nullopt);
  for (double w : {0.0, -1.0, kMaxWeight + 1, kNaN, kInf})
    EXPECT_THAT(weightProblem("weight", w).value_or(""), HasSubstr("weight")) << w;
}

TEST(Validation, IdsAreOneTo256BytesOfPrintableUtf8) {
  EXPECT_EQ(idProblem("campaign id", "spring-sale"), std::nullopt);
  EXPECT_EQ(idProblem("campaign id", std::string(256, 'a')), std::nullopt);
  EXPECT_EQ(idProblem("campaign id", "Frühling/日本"), std::nullopt);
  EXPECT_THAT(idProblem("campaign id", "").value_or(""), HasSubstr("campaign id: empty; give 1 to 256 bytes"));
  EXPECT_THAT(idProblem("campaign id", std::string(257, 'a')).value_or(""),
              HasSubstr("campaign id: 257 bytes; at most 256"));
  EXPECT_THAT(idProblem("provider id", std::string(10240, 'x')).value_or(""),
              HasSubstr("provider id: 10240 bytes; at most 256"));
  for (const char* bad : {"a\nb", "a\tb", "a\rb", "\x7f", "a\x1b[31m", "\xc2\x85", "\xff", "\xc3", "\xed\xa0\x80",
                          "\xe0\x80\x80", "\xf4\x90\x80\x80"}) {
    const auto why = idProblem("campaign id", bad);
    ASSERT_TRUE(why.has_value()) << validation::shownText(bad);
    EXPECT_THAT(*why, HasSubstr("campaign id: must be 1 to 256 bytes of UTF-8 text without control characters"));
  }
}

TEST(Validation, NamesAreAtMost256BytesAndMayBeEmpty) {
  EXPECT_EQ(nameProblem("--name", ""), std::nullopt);
  EXPECT_EQ(nameProblem("--name", std::string(256, 'n')), std::nullopt);
  EXPECT_THAT(nameProblem("--name", std::string(10240, 'n')).value_or(""),
              HasSubstr("--name: 10240 bytes; at most 256"));
  EXPECT_THAT(nameProblem("name", "Spring\nsale").value_or(""), HasSubstr("name: must be at most 256 bytes"));
}

TEST(Validation, ShownTextEscapesAndCuts) {
  EXPECT_EQ(shownText("plain"), "plain");
  EXPECT_EQ(shownText("a\nb\t\"c\"\\"), "a\\nb\\t\\\"c\\\"\\\\");
  EXPECT_EQ(shownText("\xff\x01ü"), "\\xff\\x01ü");
  EXPECT_EQ(shownText(std::string(10240, 'x'), 4), "xxxx... (10240 bytes)");
  for (unsigned c = 0; c < 256; ++c) {  // whatever the byte, the line stays one printable line
    const std::string shown = shownText(std::string(3, static_cast<char>(c)));
    EXPECT_TRUE(printableUtf8(shown)) << c;
  }
}

TEST(Validation, NumberTextNamesWhatJsonCannotCarry) {
  EXPECT_EQ(numberText(kNaN), "NaN");
  EXPECT_EQ(numberText(kInf), "Infinity");
  EXPECT_EQ(numberText(-kInf), "-Infinity");
  EXPECT_EQ(numberText(150), "150");
  EXPECT_EQ(numberText(1e-300), "1e-300");
}

}  // namespace
}  // namespace pacer::validation
