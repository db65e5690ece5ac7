#include "pacer/smpp/text.h"

#include <gtest/gtest.h>

#include <random>

#include "hex.h"

namespace pacer::smpp {
namespace {

using testing::toHex;

std::string repeat(std::string_view s, std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out += s;
  return out;
}

TEST(SmppText, GsmBytesAreOneSeptetPerOctetWithEscapes) {
  EncodedText e;
  ASSERT_EQ(encodeText("@\u00A3$\u00A5 a\u20AC{\u00E0\n\u0394", e), TextError::kNone);
  EXPECT_EQ(e.coding, TextCoding::kGsm7);
  ASSERT_EQ(e.count, 1u);
  EXPECT_EQ(toHex(e.segments[0]), "00 01 02 03 20 61 1b 65 1b 28 7f 0a 10");
}

TEST(SmppText, Ucs2IsBigEndianUtf16WithSurrogatePairs) {
  EncodedText e;
  ASSERT_EQ(encodeText("\u0416a\U0001F600", e), TextError::kNone);
  EXPECT_EQ(e.coding, TextCoding::kUcs2);
  ASSERT_EQ(e.count, 1u);
  EXPECT_EQ(toHex(e.segments[0]), "04 16 00 61 d8 3d de 00");
}

TEST(SmppText, SegmentBoundariesInGsm) {
  EXPECT_EQ(countSegments("").segments, 1u);
  EXPECT_EQ(countSegments(repeat("a", 160)).segments, 1u);
  EXPECT_EQ(countSegments(repeat("a", 161)).segments, 2u);
  EXPECT_EQ(countSegments(repeat("a", 306)).segments, 2u);
  EXPECT_EQ(countSegments(repeat("a", 307)).segments, 3u);
  // An extension character costs two septets.
  EXPECT_EQ(countSegments(repeat("\u20AC", 80)).units, 160u);
  EXPECT_EQ(countSegments(repeat("\u20AC", 80)).segments, 1u);
  EXPECT_EQ(countSegments(repeat("\u20AC", 81)).segments, 2u);
}

TEST(SmppText, EscapePairIsNeverSplit) {
  // 152 septets then an escape pair: 154 > 153, so the pair opens segment 2.
  const std::string text = repeat("a", 152) + "\u20AC" + repeat("b", 10);
  EncodedText e;
  ASSERT_EQ(encodeText(text, e), TextError::kNone);
  ASSERT_EQ(e.count, 2u);
  EXPECT_EQ(e.segments[0], repeat("a", 152));
  EXPECT_EQ(toHex(e.segments[1].substr(0, 2)), "1b 65");
}

TEST(SmppText, SegmentBoundariesInUcs2AndSurrogates) {
  EXPECT_EQ(countSegments(repeat("\u0416", 70)).segments, 1u);
  EXPECT_EQ(countSegments(repeat("\u0416", 71)).segments, 2u);
  EXPECT_EQ(countSegments(repeat("\u0416", 134)).segments, 2u);
  EXPECT_EQ(countSegments(repeat("\u0416", 135)).segments, 3u);
  // 66 units then a surrogate pair: 68 > 67, so the pair opens segment 2.
  const std::string text = repeat("\u0416", 66) + "\U0001F600" + repeat("\u0416", 10);
  EncodedText e;
  ASSERT_EQ(encodeText(text, e), TextError::kNone);
  ASSERT_EQ(e.count, 2u);
  EXPECT_EQ(e.segments[0].size(), 66u * 2);
  EXPECT_EQ(toHex(e.segments[1].substr(0, 4)), "d8 3d de 00");
}

TEST(SmppText, OneNonGsmCharacterMakesTheWholeTextUcs2) {
  const SegmentCount c = countSegments(repeat("a", 100) + "\u0416");
  EXPECT_EQ(c.coding, TextCoding::kUcs2);
  EXPECT_EQ(c.units, 101u);
  EXPECT_EQ(c.segments, 2u);
}

TEST(SmppText, InvalidUtf8IsATypedErrorWithItsOffset) {
  for (const std::string& bad : {std::string("ab\xC3\x28"), std::string("ab\xC0\xAF"), std::string("ab\xED\xA0\x80"),
                                 std::string("ab\xE2\x82"), std::string("ab\xF4\x90\x80\x80"), std::string("ab\xFF")}) {
    const SegmentCount c = countSegments(bad);
    EXPECT_EQ(c.error, TextError::kInvalidUtf8) << toHex(bad);
    EXPECT_EQ(c.bad_offset, 2u);
    EncodedText e;
    std::size_t at = 99;
    EXPECT_EQ(encodeText(bad, e, &at), TextError::kInvalidUtf8);
    EXPECT_EQ(at, 2u);
    EXPECT_EQ(e.count, 0u);
  }
}

TEST(SmppText, MoreThan255SegmentsIsTooLong) {
  EXPECT_EQ(countSegments(repeat("a", 153 * 255)).error, TextError::kNone);
  EXPECT_EQ(countSegments(repeat("a", 153 * 255 + 1)).error, TextError::kTooLong);
}

// Random texts over a mixed alphabet: every segment within its size, each
// segment decodable on its own (so no pair is split), the segments joined
// give back the text, and the count agrees with countSegments().
TEST(SmppText, RandomTextsSegmentCorrectly) {
  const std::vector<std::string> gsm = {"a", "Z", "0", " ", "@", "\u00E9", "\u0394", "\n", "\u20AC", "{", "|", "^"};
  const std::vector<std::string> other = {"\u0416", "\u4E2D", "\U0001F600", "\u00E1", "\U00010348"};
  std::mt19937 rng(38);
  EncodedText e;
  for (int trial = 0; trial < 3000; ++trial) {
    const bool ucs = trial % 2 == 1;
    const std::size_t len = rng() % 700;
    std::string text;
    for (std::size_t i = 0; i < len; ++i) {
      text += (ucs && rng() % 4 == 0) ? other[rng() % other.size()] : gsm[rng() % gsm.size()];
    }
    const SegmentCount c = countSegments(text);
    ASSERT_EQ(encodeText(text, e), TextError::kNone);
    ASSERT_EQ(e.count, c.segments);
    const bool is_gsm = e.coding == TextCoding::kGsm7;
    const std::size_t one = is_gsm ? kGsmSingle : kUcs2Single * 2;
    const std::size_t part = is_gsm ? kGsmPart : kUcs2Part * 2;
    std::string joined, piece;
    for (std::size_t k = 0; k < e.count; ++k) {
      EXPECT_LE(e.segments[k].size(), e.count == 1 ? one : part);
      ASSERT_TRUE(decodeText(e.coding, e.segments[k], piece)) << "segment " << k << " split a pair";
      joined += piece;
    }
    ASSERT_EQ(joined, text);
  }
}

TEST(SmppText, DecodeRefusesBrokenInput) {
  std::string out;
  EXPECT_FALSE(decodeText(TextCoding::kGsm7, "a\x1b", out));
  EXPECT_FALSE(decodeText(TextCoding::kGsm7, "\x80", out));
  EXPECT_FALSE(decodeText(TextCoding::kUcs2, std::string("\xd8\x3d", 2), out));
  EXPECT_FALSE(decodeText(TextCoding::kUcs2, std::string("\x00", 1), out));
}

}  // namespace
}  // namespace pacer::smpp
