#include "pacer/smpp/receipt.h"

#include <gtest/gtest.h>

namespace pacer::smpp {
namespace {

Pdu receiptPdu(std::string text) {
  Pdu p;
  p.command_id = cmd::kDeliverSm;
  p.esm_class = kEsmClassReceipt;
  p.short_message = std::move(text);
  return p;
}

TEST(SmppReceipt, ReadsTheAppendixBText) {
  const auto r = parseReceipt(receiptPdu(
      "id:0123456789 sub:001 dlvrd:001 submit date:2611241530 done date:2611241531 stat:DELIVRD err:000 text:Hello"));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->message_id, "0123456789");
  EXPECT_EQ(r->status, ReceiptStatus::kDelivered);
  EXPECT_EQ(r->stat, "DELIVRD");
  EXPECT_EQ(r->error_code, "000");
  EXPECT_EQ(r->submit_date, "2611241530");
  EXPECT_EQ(r->done_date, "2611241531");
  EXPECT_EQ(r->done_at_ms, 1795534260000);  // 2026-11-24 15:31:00 UTC
}

TEST(SmppReceipt, ToleratesCaseOrderAndMissingFields) {
  const auto r = parseReceipt(receiptPdu("STAT:undeliv Err:021 ID:ab-7"));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->message_id, "ab-7");
  EXPECT_EQ(r->status, ReceiptStatus::kUndelivered);
  EXPECT_EQ(r->stat, "UNDELIV");
  EXPECT_EQ(r->error_code, "021");
  EXPECT_TRUE(r->done_date.empty());
  EXPECT_EQ(r->done_at_ms, 0);
}

TEST(SmppReceipt, FieldsQuotedInTextDoNotCount) {
  const auto r = parseReceipt(receiptPdu("id:1 stat:EXPIRED text:stat:DELIVRD id:2"));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->message_id, "1");
  EXPECT_EQ(r->status, ReceiptStatus::kExpired);
}

TEST(SmppReceipt, TlvsWinOverTheText) {
  Pdu p = receiptPdu("id:999 stat:DELIVRD err:000");
  p.receipted_message_id = "A1B2";
  p.message_state = state::kRejected;
  const auto r = parseReceipt(p);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->message_id, "A1B2");
  EXPECT_EQ(r->status, ReceiptStatus::kRejected);
  EXPECT_EQ(r->stat, "REJECTD");
  EXPECT_EQ(r->error_code, "000");
}

TEST(SmppReceipt, TextInMessagePayloadAndNetworkErrorCode) {
  Pdu p = receiptPdu("");
  p.message_payload = "id:x9 stat:UNDELIV";
  p.network_error_code = std::string("\x03\x01\x02", 3);
  const auto r = parseReceipt(p);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->message_id, "x9");
  EXPECT_EQ(r->error_code, "3:258");
  EXPECT_EQ(r->text, "id:x9 stat:UNDELIV");
}

TEST(SmppReceipt, NotAReceiptOrNoIdGivesNothing) {
  Pdu mo = receiptPdu("id:1 stat:DELIVRD");
  mo.esm_class = 0;
  EXPECT_FALSE(parseReceipt(mo).has_value());
  EXPECT_FALSE(parseReceipt(receiptPdu("stat:DELIVRD")).has_value());
  EXPECT_FALSE(parseReceipt(receiptPdu("xid:5 stat:DELIVRD")).has_value());  // "id:" only at a word start
}

TEST(SmppReceipt, StatWordsMapToReceiptStatus) {
  EXPECT_EQ(receiptStatusFromStat("DELIVRD"), ReceiptStatus::kDelivered);
  EXPECT_EQ(receiptStatusFromStat("UNDELIV"), ReceiptStatus::kUndelivered);
  EXPECT_EQ(receiptStatusFromStat("DELETED"), ReceiptStatus::kUndelivered);
  EXPECT_EQ(receiptStatusFromStat("EXPIRED"), ReceiptStatus::kExpired);
  EXPECT_EQ(receiptStatusFromStat("REJECTD"), ReceiptStatus::kRejected);
  EXPECT_EQ(receiptStatusFromStat("ACCEPTD"), ReceiptStatus::kUnknown);
  EXPECT_EQ(receiptStatusFromStat("UNKNOWN"), ReceiptStatus::kUnknown);
  EXPECT_EQ(receiptStatusFromStat("ENROUTE"), ReceiptStatus::kUnknown);
  EXPECT_EQ(receiptStatusFromState(state::kDelivered), ReceiptStatus::kDelivered);
  EXPECT_EQ(receiptStatusFromState(state::kUndeliverable), ReceiptStatus::kUndelivered);
  EXPECT_EQ(receiptStatusFromState(state::kExpired), ReceiptStatus::kExpired);
  EXPECT_EQ(receiptStatusFromState(state::kAccepted), ReceiptStatus::kUnknown);
}

TEST(SmppReceipt, DatesReadAsUtc) {
  EXPECT_EQ(receiptDateToUnixMs("0001010000"), 946684800000);  // 2000-01-01
  EXPECT_EQ(receiptDateToUnixMs("240229235959"), 1709251199000);
  EXPECT_EQ(receiptDateToUnixMs("2413011200"), 0);  // month 13
  EXPECT_EQ(receiptDateToUnixMs("24010112"), 0);
  EXPECT_EQ(receiptDateToUnixMs("24O1011200"), 0);
}

TEST(SmppCommandStatus, ClassesFollowTheTable) {
  EXPECT_EQ(classifyCommandStatus(0x00), SendOutcome::kDelivered);
  EXPECT_EQ(classifyCommandStatus(0x58), SendOutcome::kThrottled);
  EXPECT_EQ(classifyCommandStatus(0x14), SendOutcome::kThrottled);
  for (std::uint32_t perm : {0x01u, 0x0Au, 0x0Bu, 0x104u, 0x43u, 0x50u, 0x62u})
    EXPECT_EQ(classifyCommandStatus(perm), SendOutcome::kPermanent) << perm;
  for (std::uint32_t fault : {0x08u, 0x45u, 0x04u, 0xFFu, 0x400u, 0x12345u})
    EXPECT_EQ(classifyCommandStatus(fault), SendOutcome::kFault) << fault;
  EXPECT_EQ(commandStatusName(0x58), "ESME_RTHROTTLED");
  EXPECT_EQ(commandStatusName(0x401), "0x00000401");
}

}  // namespace
}  // namespace pacer::smpp
