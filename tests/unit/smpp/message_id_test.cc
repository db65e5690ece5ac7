#include "pacer/smpp/message_id.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <random>

namespace pacer::smpp {
namespace {

std::string converted(std::string_view in, int from, int to) {
  std::string out;
  return convertBase(in, from, to, out) ? out : "(refused)";
}

TEST(SmppMessageId, ConvertsBetweenHexAndDecimal) {
  EXPECT_EQ(converted("1A2B", 16, 10), "6699");
  EXPECT_EQ(converted("1a2b", 16, 10), "6699");
  EXPECT_EQ(converted("6699", 10, 16), "1A2B");
  EXPECT_EQ(converted("000000001A", 16, 10), "26");
  EXPECT_EQ(converted("0", 10, 16), "0");
  EXPECT_EQ(converted("000", 16, 10), "0");
  // Beyond 64 bits: 2^64 and 2^80.
  EXPECT_EQ(converted("18446744073709551616", 10, 16), "10000000000000000");
  EXPECT_EQ(converted("100000000000000000000", 16, 10), "1208925819614629174706176");
}

TEST(SmppMessageId, RefusesWhatIsNotANumberInItsBase) {
  EXPECT_EQ(converted("", 10, 16), "(refused)");
  EXPECT_EQ(converted("12A", 10, 16), "(refused)");
  EXPECT_EQ(converted("12G", 16, 10), "(refused)");
  EXPECT_EQ(converted("-12", 10, 16), "(refused)");
  EXPECT_EQ(converted("msg-7", 16, 10), "(refused)");
}

TEST(SmppMessageId, RoundTripsRandomNumbers) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 2000; ++i) {
    const std::uint64_t v = rng() >> (rng() % 64);
    char dec[32], hex[32];
    std::snprintf(dec, sizeof dec, "%llu", static_cast<unsigned long long>(v));
    std::snprintf(hex, sizeof hex, "%llX", static_cast<unsigned long long>(v));
    ASSERT_EQ(converted(dec, 10, 16), hex) << v;
    ASSERT_EQ(converted(hex, 16, 10), dec) << v;
  }
}

TEST(SmppMessageId, NamesParseBack) {
  for (IdConvention c :
       {IdConvention::kAsIs, IdConvention::kHexThenDecimal, IdConvention::kDecimalThenHex, IdConvention::kAuto})
    EXPECT_EQ(parseIdConvention(idConventionName(c)), c);
  EXPECT_EQ(parseIdConvention("hex"), std::nullopt);
}

TEST(SmppMessageId, AsIsLeavesReceiptIdsAlone) {
  ReceiptIdMatcher m;
  m.submitted("1A2B");
  std::string id = "6699";
  m.toSubmitForm(id);
  EXPECT_EQ(id, "6699");
}

TEST(SmppMessageId, HexSubmitDecimalReceiptMeetInTheSubmitForm) {
  ReceiptIdMatcher m(IdConvention::kHexThenDecimal);
  m.submitted("1A2B");
  std::string id = "6699";  // the receipt's "id:6699"
  m.toSubmitForm(id);
  EXPECT_EQ(id, "1A2B");
}

TEST(SmppMessageId, TheSubmitFormsPaddingAndCaseAreKept) {
  ReceiptIdMatcher m(IdConvention::kHexThenDecimal);
  m.submitted("00000000ff");
  std::string id = "26";
  m.toSubmitForm(id);
  EXPECT_EQ(id, "000000001a");
}

TEST(SmppMessageId, DecimalSubmitHexReceiptMeetInTheSubmitForm) {
  ReceiptIdMatcher m(IdConvention::kDecimalThenHex);
  m.submitted("6699");
  std::string id = "1a2b";
  m.toSubmitForm(id);
  EXPECT_EQ(id, "6699");
}

TEST(SmppMessageId, AnIdThatIsNoNumberPassesThrough) {
  ReceiptIdMatcher m(IdConvention::kHexThenDecimal);
  m.submitted("1A2B");
  std::string id = "abc-12";
  m.toSubmitForm(id);
  EXPECT_EQ(id, "abc-12");
}

// An SMSC counting ids up in hex, zero-padded to 10 digits, and writing
// receipts in decimal: ambiguous receipt by receipt ("26" is 0x1A, and 0x26
// is an id too), clear after a few.
TEST(SmppMessageId, AutoLearnsHexThenDecimalFromCountingIds) {
  ReceiptIdMatcher m(IdConvention::kAuto);
  char buf[16];
  for (int i = 1; i <= 300; ++i) {
    std::snprintf(buf, sizeof buf, "%010X", i);
    m.submitted(buf);
  }
  int passed_through = 0;
  for (int i = 200; i <= 300 && m.convention() == IdConvention::kAuto; ++i) {
    std::string id = std::to_string(i);
    m.toSubmitForm(id);
    ++passed_through;
  }
  EXPECT_EQ(m.convention(), IdConvention::kHexThenDecimal);
  EXPECT_LE(passed_through, 20);
  std::string id = "26";
  m.toSubmitForm(id);
  EXPECT_EQ(id, "000000001A");
}

TEST(SmppMessageId, AutoSettlesOnAsIsWhenReceiptsRepeatTheSubmitIds) {
  ReceiptIdMatcher m(IdConvention::kAuto);
  for (int i = 100; i < 200; ++i) m.submitted(std::to_string(i * 7919));
  for (int i = 100; i < 120; ++i) {
    std::string id = std::to_string(i * 7919);
    m.toSubmitForm(id);
    EXPECT_EQ(id, std::to_string(i * 7919));
  }
  EXPECT_EQ(m.convention(), IdConvention::kAsIs);
}

TEST(SmppMessageId, AutoLearnsDecimalThenHex) {
  ReceiptIdMatcher m(IdConvention::kAuto);
  for (int i = 1000; i < 1100; ++i) m.submitted(std::to_string(i * 4099));
  char buf[16];
  for (int i = 1000; i < 1100 && m.convention() == IdConvention::kAuto; ++i) {
    std::snprintf(buf, sizeof buf, "%x", i * 4099);
    std::string id = buf;
    m.toSubmitForm(id);
  }
  EXPECT_EQ(m.convention(), IdConvention::kDecimalThenHex);
  std::snprintf(buf, sizeof buf, "%x", 1234 * 4099);
  std::string id = buf;
  m.toSubmitForm(id);
  EXPECT_EQ(id, std::to_string(1234 * 4099));
}

TEST(SmppMessageId, AutoPassesIdsThroughUntilItDecides) {
  ReceiptIdMatcher m(IdConvention::kAuto);
  m.submitted("1A2B");
  std::string id = "6699";
  m.toSubmitForm(id);
  EXPECT_EQ(id, "6699");
  EXPECT_EQ(m.convention(), IdConvention::kAuto);
}

}  // namespace
}  // namespace pacer::smpp
