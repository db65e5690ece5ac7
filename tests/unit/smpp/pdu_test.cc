// The PDU codec against byte vectors written by hand from the SMPP 3.4
// field layouts (section 4), its typed errors, and random round trips.
#include "pacer/smpp/pdu.h"

#include <gtest/gtest.h>

#include <random>

#include "hex.h"

namespace pacer::smpp {
namespace {

using testing::hex;
using testing::toHex;

// length 16, enquire_link, status 0, sequence 1
const std::string kEnquireLink = hex("00000010 00000015 00000000 00000001");

// bind_transceiver "pacer"/"secret", system_type "", version 0x34, TON 0, NPI 0, range "".
const std::string kBindTrx =
    hex("00000022 00000009 00000000 00000001"
        "70 61 63 65 72 00"     // system_id "pacer"
        "73 65 63 72 65 74 00"  // password "secret"
        "00"                    // system_type ""
        "34 00 00"              // interface_version, addr_ton, addr_npi
        "00");                  // address_range ""

// submit_sm seq 7: from "Pacer" (TON 5, NPI 0) to 4915112345678 (1/1),
// registered_delivery 1, data_coding 0, short_message "Hi".
const std::string kSubmit =
    hex("00000035 00000004 00000000 00000007"
        "00"                                               // service_type ""
        "05 00 50 61 63 65 72 00"                          // source TON, NPI, "Pacer"
        "01 01 34 39 31 35 31 31 32 33 34 35 36 37 38 00"  // dest TON, NPI, "4915112345678"
        "00 00 00"                                         // esm_class, protocol_id, priority_flag
        "00 00"                                            // schedule_delivery_time "", validity_period ""
        "01 00 00 00"                                      // registered_delivery, replace, data_coding, default id
        "02 48 69");                                       // sm_length 2, "Hi"

TEST(SmppPdu, EncodesEnquireLinkAsBareHeader) {
  std::string out;
  ASSERT_EQ(encode(makeHeaderOnly(cmd::kEnquireLink, 1), out), EncodeError::kNone);
  EXPECT_EQ(toHex(out), toHex(kEnquireLink));
}

TEST(SmppPdu, EncodesBindTransceiverFieldByField) {
  Pdu p;
  p.command_id = cmd::kBindTransceiver;
  p.sequence_number = 1;
  p.system_id = "pacer";
  p.password = "secret";
  std::string out;
  ASSERT_EQ(encode(p, out), EncodeError::kNone);
  EXPECT_EQ(toHex(out), toHex(kBindTrx));
}

TEST(SmppPdu, EncodesAndDecodesSubmitSm) {
  Pdu p;
  p.command_id = cmd::kSubmitSm;
  p.sequence_number = 7;
  p.source_addr_ton = 5;
  p.source_addr = "Pacer";
  p.dest_addr_ton = 1;
  p.dest_addr_npi = 1;
  p.destination_addr = "4915112345678";
  p.registered_delivery = 1;
  p.short_message = "Hi";
  std::string out;
  ASSERT_EQ(encode(p, out), EncodeError::kNone);
  EXPECT_EQ(toHex(out), toHex(kSubmit));

  Pdu d;
  ASSERT_EQ(decode(kSubmit, d), DecodeError::kNone);
  EXPECT_EQ(d.command_id, cmd::kSubmitSm);
  EXPECT_EQ(d.sequence_number, 7u);
  EXPECT_EQ(d.source_addr, "Pacer");
  EXPECT_EQ(d.source_addr_ton, 5);
  EXPECT_EQ(d.destination_addr, "4915112345678");
  EXPECT_EQ(d.registered_delivery, 1);
  EXPECT_EQ(d.short_message, "Hi");
  EXPECT_FALSE(d.sar_msg_ref_num.has_value());
}

TEST(SmppPdu, DecodesSubmitSmRespWithMessageId) {
  Pdu d;
  ASSERT_EQ(decode(hex("00000017 80000004 00000000 00000007 61 62 63 31 32 33 00"), d), DecodeError::kNone);
  EXPECT_EQ(d.command_id, cmd::kSubmitSmResp);
  EXPECT_EQ(d.message_id, "abc123");
}

TEST(SmppPdu, ErrorResponseMayComeWithoutBody) {
  Pdu d;
  ASSERT_EQ(decode(hex("00000010 80000004 00000058 00000007"), d), DecodeError::kNone);
  EXPECT_EQ(d.command_status, 0x58u);
  EXPECT_TRUE(d.message_id.empty());
  // ... but a successful one must carry its message_id.
  EXPECT_EQ(decode(hex("00000010 80000004 00000000 00000007"), d), DecodeError::kTruncatedBody);
}

TEST(SmppPdu, DecodesReceiptTlvsAndSkipsUnknownOnes) {
  const std::string pdu =
      hex("00000049 00000005 00000000 00000003"
          "00 01 01 34 39 31 35 31 00 00 00 00"  // service_type "", src 1/1 "4915", dest 0/0 ""
          "04 00 00 00 00 00 00 00 00"           // esm_class 0x04 (receipt), pid, prio, times, flags, coding, default
          "00"                                   // sm_length 0
          "00 1e 00 07 61 62 63 31 32 33 00"     // receipted_message_id "abc123"
          "14 01 00 02 ff ee"                    // an unknown (vendor) TLV: skipped
          "04 27 00 01 02"                       // message_state DELIVERED
          "04 23 00 03 03 00 2a"                 // network_error_code GSM, 42
          "02 0c 00 02 12 34");                  // sar_msg_ref_num 0x1234
  Pdu d;
  ASSERT_EQ(decode(pdu, d), DecodeError::kNone) << decodeErrorName(decode(pdu, d));
  EXPECT_EQ(d.esm_class, kEsmClassReceipt);
  EXPECT_EQ(d.receipted_message_id.value_or(""), "abc123");
  EXPECT_EQ(d.message_state.value_or(0), 2);
  EXPECT_EQ(d.network_error_code.value_or(""), hex("03 00 2a"));
  EXPECT_EQ(d.sar_msg_ref_num.value_or(0), 0x1234);
}

TEST(SmppPdu, EncodesSarTlvsInOrder) {
  Pdu p;
  p.command_id = cmd::kSubmitSm;
  p.sequence_number = 1;
  p.sar_msg_ref_num = 0x0102;
  p.sar_total_segments = 3;
  p.sar_segment_seqnum = 2;
  std::string out;
  ASSERT_EQ(encode(p, out), EncodeError::kNone);
  EXPECT_EQ(toHex(out.substr(out.size() - 16)), "02 0c 00 02 01 02 02 0e 00 01 03 02 0f 00 01 02");
}

TEST(SmppPdu, TypedErrorsForBrokenInput) {
  Pdu d;
  EXPECT_EQ(decode(nullptr, 0, d), DecodeError::kTooShort);
  EXPECT_EQ(decode(kEnquireLink.substr(0, 15), d), DecodeError::kTooShort);
  EXPECT_EQ(decode(hex("0000000f 00000015 00000000 00000001"), d), DecodeError::kTooShort);
  EXPECT_EQ(decode(hex("00100000 00000015 00000000 00000001"), d), DecodeError::kTooLong);
  EXPECT_EQ(decode(hex("00000011 00000015 00000000 00000001"), d), DecodeError::kLengthMismatch);
  EXPECT_EQ(decode(hex("00000011 00000015 00000000 00000001 00"), d), DecodeError::kTrailingBytes);
  EXPECT_EQ(decode(hex("00000010 00000103 00000000 00000009"), d), DecodeError::kUnknownCommand);
  EXPECT_EQ(d.command_id, 0x103u);  // the header is still there for a generic_nack
  EXPECT_EQ(d.sequence_number, 9u);
  // system_id of 16 octets without its NUL (the field's maximum is 16 with it).
  EXPECT_EQ(decode(hex("00000020 80000009 00000000 00000001 41414141 41414141 41414141 41414141"), d),
            DecodeError::kUnterminatedString);
  // submit_sm whose sm_length says 3 but only 2 octets follow.
  std::string bad_sm = kSubmit;
  bad_sm[bad_sm.size() - 3] = 3;
  EXPECT_EQ(decode(bad_sm, d), DecodeError::kBadShortMessage);
  // A TLV header cut short, and a TLV longer than what is left.
  std::string tlv_cut = kSubmit + hex("02 0c 00");
  tlv_cut[3] = static_cast<char>(tlv_cut.size());
  EXPECT_EQ(decode(tlv_cut, d), DecodeError::kBadTlv);
  std::string tlv_long = kSubmit + hex("02 0c 00 09 01 02");
  tlv_long[3] = static_cast<char>(tlv_long.size());
  EXPECT_EQ(decode(tlv_long, d), DecodeError::kBadTlv);
  // sar_total_segments must be one octet.
  std::string tlv_len = kSubmit + hex("02 0e 00 02 01 02");
  tlv_len[3] = static_cast<char>(tlv_len.size());
  EXPECT_EQ(decode(tlv_len, d), DecodeError::kBadTlvLength);
}

TEST(SmppPdu, EncodeRefusesOverlongFieldsAndLeavesOutputAlone) {
  Pdu p;
  p.command_id = cmd::kSubmitSm;
  p.destination_addr = std::string(21, '1');
  std::string out = "keep";
  EXPECT_EQ(encode(p, out), EncodeError::kFieldTooLong);
  EXPECT_EQ(out, "keep");
  p.destination_addr = "1";
  p.short_message.assign(255, 'x');
  EXPECT_EQ(encode(p, out), EncodeError::kShortMessageTooLong);
  EXPECT_EQ(encode(makeHeaderOnly(0x103, 1), out), EncodeError::kUnknownCommand);
  EXPECT_EQ(out, "keep");
}

// Every prefix of every valid vector, and every single-octet corruption of
// them, decodes to some answer without reading outside the buffer (run under
// the asan preset this catches over-reads).
TEST(SmppPdu, TruncationsAndCorruptionsNeverCrash) {
  for (const std::string& v : {kEnquireLink, kBindTrx, kSubmit}) {
    Pdu d;
    for (std::size_t n = 0; n < v.size(); ++n) {
      const std::string cut = v.substr(0, n);
      EXPECT_NE(decode(reinterpret_cast<const std::uint8_t*>(cut.data()), cut.size(), d), DecodeError::kNone);
    }
    for (std::size_t i = 0; i < v.size(); ++i) {
      for (int b : {0x00, 0x01, 0x7f, 0x80, 0xff}) {
        std::string m = v;
        m[i] = static_cast<char>(b);
        (void)decode(m, d);
      }
    }
  }
}

Pdu randomSm(std::mt19937& rng) {
  auto str = [&](std::size_t max) {
    std::string s(rng() % max, 'a');
    for (char& c : s) c = static_cast<char>('0' + rng() % 75);
    return s;
  };
  Pdu p;
  p.command_id = rng() % 2 ? cmd::kSubmitSm : cmd::kDeliverSm;
  p.sequence_number = rng();
  p.service_type = str(limit::kServiceType);
  p.source_addr_ton = static_cast<std::uint8_t>(rng());
  p.source_addr = str(limit::kAddress);
  p.destination_addr = str(limit::kAddress);
  p.esm_class = static_cast<std::uint8_t>(rng());
  p.data_coding = static_cast<std::uint8_t>(rng());
  p.registered_delivery = static_cast<std::uint8_t>(rng());
  p.short_message.resize(rng() % 255);
  for (char& c : p.short_message) c = static_cast<char>(rng());  // any octet, NUL included
  if (rng() % 2) p.sar_msg_ref_num = static_cast<std::uint16_t>(rng());
  if (rng() % 2) p.sar_total_segments = static_cast<std::uint8_t>(rng());
  if (rng() % 2) p.receipted_message_id = str(limit::kMessageId);
  if (rng() % 2) p.message_state = static_cast<std::uint8_t>(rng());
  if (rng() % 3 == 0) p.message_payload = str(300);
  return p;
}

TEST(SmppPdu, RandomPdusRoundTrip) {
  std::mt19937 rng(14);
  for (int i = 0; i < 3000; ++i) {
    const Pdu p = randomSm(rng);
    std::string wire;
    ASSERT_EQ(encode(p, wire), EncodeError::kNone);
    Pdu d;
    ASSERT_EQ(decode(wire, d), DecodeError::kNone) << i;
    std::string again;
    ASSERT_EQ(encode(d, again), EncodeError::kNone);
    ASSERT_EQ(toHex(again), toHex(wire)) << i;
    EXPECT_EQ(d.short_message, p.short_message);
    EXPECT_EQ(d.sar_msg_ref_num, p.sar_msg_ref_num);
    EXPECT_EQ(d.receipted_message_id, p.receipted_message_id);
    EXPECT_EQ(d.message_payload, p.message_payload);
  }
}

TEST(SmppPdu, RandomBytesNeverCrash) {
  std::mt19937 rng(34);
  Pdu d;
  for (int i = 0; i < 20000; ++i) {
    std::string b(16 + rng() % 64, '\0');
    for (char& c : b) c = static_cast<char>(rng());
    // A plausible header most of the time, so bodies get exercised.
    const std::uint32_t ids[] = {cmd::kSubmitSm,     cmd::kDeliverSm,           cmd::kBindTransceiver,
                                 cmd::kSubmitSmResp, cmd::kBindTransceiverResp, cmd::kGenericNack};
    const std::uint32_t id = ids[rng() % 6];
    const auto len = static_cast<std::uint32_t>(b.size());
    for (int k = 0; k < 4; ++k) {
      b[k] = static_cast<char>(len >> (24 - 8 * k));
      b[4 + k] = static_cast<char>(id >> (24 - 8 * k));
    }
    (void)decode(b, d);
  }
}

}  // namespace
}  // namespace pacer::smpp
