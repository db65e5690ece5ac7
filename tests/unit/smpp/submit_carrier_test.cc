// The carrier settings in the submit_sm the builder makes: TON/NPI (given
// or implied by the sender), service_type, validity_period, priority_flag,
// checked on the encoded bytes.
#include <gtest/gtest.h>

#include "hex.h"
#include "pacer/smpp/submit.h"

namespace pacer::smpp {
namespace {

using testing::hex;
using testing::toHex;

// The one submit_sm `o` makes for "Hi" to +4915112345678, encoded with sequence number 7.
std::string encodedSubmit(const SubmitOptions& o) {
  EncodedText scratch;
  std::vector<Pdu> pdus;
  std::size_t n = 0;
  std::string reason;
  EXPECT_EQ(buildSubmits(o, "+4915112345678", "Hi", 1, scratch, pdus, n, reason), BuildError::kNone) << reason;
  EXPECT_EQ(n, 1u);
  pdus[0].sequence_number = 7;
  std::string out;
  EXPECT_EQ(encode(pdus[0], out), EncodeError::kNone);
  return out;
}

TEST(SmppSubmitCarrier, EveryCarrierSettingLandsInItsField) {
  SubmitOptions o;
  o.service_type = "CMT";
  o.source_addr = "ACME";  // a name: TON 5, NPI 0 implied
  o.dest_addr_ton = 2;
  o.dest_addr_npi = 8;
  o.priority_flag = 3;
  o.validity_period = "000002030000000R";  // 2 days 3 hours
  EXPECT_EQ(toHex(encodedSubmit(o)),
            toHex(hex("00000047 00000004 00000000 00000007"
                      "43 4d 54 00"                                         // service_type "CMT"
                      "05 00 41 43 4d 45 00"                                // source TON 5, NPI 0, "ACME"
                      "02 08 34 39 31 35 31 31 32 33 34 35 36 37 38 00"     // dest TON 2, NPI 8
                      "00 00 03"                                            // esm_class, protocol_id, priority_flag 3
                      "00"                                                  // schedule_delivery_time ""
                      "30 30 30 30 30 32 30 33 30 30 30 30 30 30 30 52 00"  // validity_period
                      "01 00 00 00"                                         // registered_delivery ... default id
                      "02 48 69")));
}

TEST(SmppSubmitCarrier, AnInternationalSenderGoesWithoutItsPlusAs1And1) {
  SubmitOptions o;
  o.source_addr = "+4930123";
  EXPECT_EQ(toHex(encodedSubmit(o)),
            toHex(hex("00000037 00000004 00000000 00000007"
                      "00"                                               // service_type ""
                      "01 01 34 39 33 30 31 32 33 00"                    // source 1/1 "4930123"
                      "01 01 34 39 31 35 31 31 32 33 34 35 36 37 38 00"  // dest 1/1
                      "00 00 00 00 00 01 00 00 00 02 48 69")));
}

TEST(SmppSubmitCarrier, GivenTonAndNpiWinOverTheImpliedOnes) {
  SubmitOptions o;
  o.source_addr = "ACME";
  o.source_addr_ton = 0;
  o.source_addr_npi = 1;
  const std::string bytes = encodedSubmit(o);
  EXPECT_EQ(toHex(bytes.substr(17, 7)), toHex(hex("00 01 41 43 4d 45 00")));
}

TEST(SmppSubmitCarrier, TheSenderImpliesItsTonAndNpi) {
  EXPECT_EQ(sourceAddressType(""), (AddressType{0, 0}));
  EXPECT_EQ(sourceAddressType("ACME"), (AddressType{5, 0}));
  EXPECT_EQ(sourceAddressType("Shop24"), (AddressType{5, 0}));
  EXPECT_EQ(sourceAddressType("+49 301"), (AddressType{5, 0}));  // not digits: sent as a name
  EXPECT_EQ(sourceAddressType("+4915112345678"), (AddressType{1, 1}));
  EXPECT_EQ(sourceAddressType("4915112345678"), (AddressType{1, 1}));
  EXPECT_EQ(sourceAddressType("491511234"), (AddressType{1, 1}));  // 9 digits
  EXPECT_EQ(sourceAddressType("0301234567"), (AddressType{2, 1}));
  EXPECT_EQ(sourceAddressType("12345678"), (AddressType{3, 0}));  // 8 digits: a short code
  EXPECT_EQ(sourceAddressType("7890"), (AddressType{3, 0}));
}

TEST(SmppSubmitCarrier, ValidityPeriodMustBeARelativeTime) {
  EXPECT_EQ(validityPeriodError(""), nullptr);
  EXPECT_EQ(validityPeriodError("000002000000000R"), nullptr);
  EXPECT_EQ(validityPeriodError("000000001500000R"), nullptr);  // 15 minutes
  EXPECT_EQ(validityPeriodError("991130235959000R"), nullptr);
  EXPECT_NE(validityPeriodError("000002000000000"), nullptr);   // 15 characters
  EXPECT_NE(validityPeriodError("260101120000004+"), nullptr);  // absolute
  EXPECT_NE(validityPeriodError("00000200000000AR"), nullptr);  // not digits
  EXPECT_NE(validityPeriodError("000002000000100R"), nullptr);  // tenths set
  EXPECT_NE(validityPeriodError("001200000000000R"), nullptr);  // 12 months
  EXPECT_NE(validityPeriodError("000000240000000R"), nullptr);  // 24 hours
  EXPECT_NE(validityPeriodError("000000006000000R"), nullptr);  // 60 minutes
  EXPECT_NE(validityPeriodError("000000000000000R"), nullptr);  // zero
  EXPECT_NE(validityPeriodError("48h"), nullptr);
}

TEST(SmppSubmitCarrier, UnusableSettingsAreRefusedForEveryMessage) {
  EncodedText scratch;
  std::vector<Pdu> pdus;
  std::size_t n = 0;
  std::string reason;
  SubmitOptions o;
  o.priority_flag = 4;
  EXPECT_EQ(buildSubmits(o, "1", "x", 1, scratch, pdus, n, reason), BuildError::kBadOptions);
  o.priority_flag = 0;
  o.validity_period = "2 days";
  EXPECT_EQ(buildSubmits(o, "1", "x", 1, scratch, pdus, n, reason), BuildError::kBadOptions);
  o.validity_period.clear();
  o.service_type = "TOOLONG";
  EXPECT_EQ(buildSubmits(o, "1", "x", 1, scratch, pdus, n, reason), BuildError::kBadOptions);
}

TEST(SmppSubmitCarrier, DefinedNpiValues) {
  int defined = 0;
  for (int v = 0; v < 256; ++v) defined += isDefinedNpi(static_cast<std::uint8_t>(v)) ? 1 : 0;
  EXPECT_EQ(defined, 10);
  EXPECT_TRUE(isDefinedNpi(18));
  EXPECT_FALSE(isDefinedNpi(2));
}

}  // namespace
}  // namespace pacer::smpp
