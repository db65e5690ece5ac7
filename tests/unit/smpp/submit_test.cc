#include "pacer/smpp/submit.h"

#include <gtest/gtest.h>

#include "hex.h"

namespace pacer::smpp {
namespace {

using testing::toHex;

TEST(SmppSubmit, SingleSegmentGsmMessage) {
  SubmitOptions o;
  o.source_addr = "Pacer";
  o.source_addr_ton = 5;
  EncodedText scratch;
  std::vector<Pdu> pdus;
  std::size_t n = 0;
  std::string reason;
  ASSERT_EQ(buildSubmits(o, "+4915112345678", "Hi", 1, scratch, pdus, n, reason), BuildError::kNone);
  ASSERT_EQ(n, 1u);
  EXPECT_EQ(pdus[0].destination_addr, "4915112345678");
  EXPECT_EQ(pdus[0].dest_addr_ton, 1);
  EXPECT_EQ(pdus[0].data_coding, 0);
  EXPECT_EQ(pdus[0].esm_class, 0);
  EXPECT_EQ(pdus[0].registered_delivery, 1);
  EXPECT_EQ(pdus[0].short_message, "Hi");
}

TEST(SmppSubmit, UdhConcatenationHeaders) {
  SubmitOptions o;
  EncodedText scratch;
  std::vector<Pdu> pdus;
  std::size_t n = 0;
  std::string reason;
  const std::string text(200, 'x');
  ASSERT_EQ(buildSubmits(o, "123", text, 0x1A7, scratch, pdus, n, reason), BuildError::kNone);
  ASSERT_EQ(n, 2u);
  for (std::size_t k = 0; k < n; ++k) {
    EXPECT_EQ(pdus[k].esm_class, kEsmClassUdhi);
    EXPECT_EQ(toHex(pdus[k].short_message.substr(0, 6)), k == 0 ? "05 00 03 a7 02 01" : "05 00 03 a7 02 02");
    EXPECT_FALSE(pdus[k].sar_msg_ref_num.has_value());
  }
  EXPECT_EQ(pdus[0].short_message.size(), 6u + 153);
  EXPECT_EQ(pdus[1].short_message.size(), 6u + 47);
  // Only the first segment asks for a receipt by default.
  EXPECT_EQ(pdus[0].registered_delivery, 1);
  EXPECT_EQ(pdus[1].registered_delivery, 0);
}

TEST(SmppSubmit, SarConcatenationUsesTlvs) {
  SubmitOptions o;
  o.concatenation = Concatenation::kSar;
  o.receipts = ReceiptRequest::kAll;
  EncodedText scratch;
  std::vector<Pdu> pdus;
  std::size_t n = 0;
  std::string reason;
  ASSERT_EQ(buildSubmits(o, "123", std::string(71, 'x') + "\u0416", 0x1A7, scratch, pdus, n, reason),
            BuildError::kNone);
  ASSERT_EQ(n, 2u);
  for (std::size_t k = 0; k < n; ++k) {
    EXPECT_EQ(pdus[k].esm_class, 0);
    EXPECT_EQ(pdus[k].data_coding, 8);
    EXPECT_EQ(pdus[k].sar_msg_ref_num.value_or(0), 0x1A7);
    EXPECT_EQ(pdus[k].sar_total_segments.value_or(0), 2);
    EXPECT_EQ(pdus[k].sar_segment_seqnum.value_or(0), k + 1);
    EXPECT_EQ(pdus[k].registered_delivery, 1);
  }
  EXPECT_EQ(pdus[0].short_message.size(), 67u * 2);
}

TEST(SmppSubmit, BadInputIsATypedError) {
  SubmitOptions o;
  EncodedText scratch;
  std::vector<Pdu> pdus;
  std::size_t n = 9;
  std::string reason;
  EXPECT_EQ(buildSubmits(o, "", "x", 1, scratch, pdus, n, reason), BuildError::kNoRecipient);
  EXPECT_EQ(n, 0u);
  EXPECT_EQ(buildSubmits(o, "+", "x", 1, scratch, pdus, n, reason), BuildError::kNoRecipient);
  EXPECT_EQ(buildSubmits(o, std::string(21, '1'), "x", 1, scratch, pdus, n, reason), BuildError::kBadRecipient);
  EXPECT_EQ(buildSubmits(o, "1", "bad \xff", 1, scratch, pdus, n, reason), BuildError::kInvalidUtf8);
  EXPECT_NE(reason.find("byte 4"), std::string::npos);
  EXPECT_EQ(buildSubmits(o, "1", std::string(153 * 256, 'a'), 1, scratch, pdus, n, reason), BuildError::kTooLong);
  o.source_addr = std::string(21, 'S');
  EXPECT_EQ(buildSubmits(o, "1", "x", 1, scratch, pdus, n, reason), BuildError::kBadOptions);
}

TEST(SmppSegmentTally, DeliveredOnlyWhenEverySegmentIsAccepted) {
  SegmentTally t;
  t.begin(3);
  for (int i = 0; i < 3; ++i) t.sent();
  t.done(1, SendOutcome::kDelivered, 0, "id-2", "");
  t.done(0, SendOutcome::kDelivered, 0, "id-1", "");
  EXPECT_FALSE(t.finished());
  t.done(2, SendOutcome::kDelivered, 0, "id-3", "");
  ASSERT_TRUE(t.finished());
  const SendResult r = t.result(77);
  EXPECT_EQ(r.ticket, 77u);
  EXPECT_EQ(r.outcome, SendOutcome::kDelivered);
  EXPECT_EQ(r.provider_message_id, "id-1");
}

TEST(SmppSegmentTally, AFailureStopsTheRestAndTheGravestClassWins) {
  SegmentTally t;
  t.begin(4);
  t.sent();
  t.sent();
  t.done(0, SendOutcome::kFault, 0x08, "", "submit_sm_resp ESME_RSYSERR");
  EXPECT_FALSE(t.mayContinue());
  EXPECT_FALSE(t.finished());  // segment 2 is still out
  t.done(1, SendOutcome::kThrottled, 0x58, "", "submit_sm_resp ESME_RTHROTTLED");
  ASSERT_TRUE(t.finished());
  const SendResult r = t.result(1);
  EXPECT_EQ(r.outcome, SendOutcome::kThrottled);
  EXPECT_EQ(r.status, 0x58);
  EXPECT_EQ(r.reason, "submit_sm_resp ESME_RTHROTTLED (segment 2/4)");
  EXPECT_TRUE(r.provider_message_id.empty());
}

TEST(SmppSegmentTally, APartlyAcceptedMessageIsRetriedWithOnlyItsThrottledSegments) {
  SegmentTally t;
  t.begin(3);
  for (int i = 0; i < 3; ++i) t.sent();
  t.done(0, SendOutcome::kDelivered, 0, "id-1", "");
  t.done(1, SendOutcome::kThrottled, 0x58, "", "submit_sm_resp ESME_RTHROTTLED");
  t.done(2, SendOutcome::kDelivered, 0, "id-3", "");
  ASSERT_TRUE(t.finished());
  ASSERT_TRUE(t.resumable());  // segments 1 and 3 are at the SMSC: never send them again
  EXPECT_EQ(t.result(1).outcome, SendOutcome::kThrottled);
  const std::vector<bool> accepted = t.acceptedSegments();
  EXPECT_EQ(accepted, (std::vector<bool>{true, false, true}));

  // The retry: only segment 2 goes; the message is delivered under segment 1's id.
  SegmentTally retry;
  retry.begin(3);
  retry.restore(accepted, t.firstId());
  EXPECT_FALSE(retry.finished());
  retry.sent();
  retry.done(1, SendOutcome::kDelivered, 0, "id-2b", "");
  ASSERT_TRUE(retry.finished());
  const SendResult r = retry.result(5);
  EXPECT_EQ(r.outcome, SendOutcome::kDelivered);
  EXPECT_EQ(r.provider_message_id, "id-1");
}

TEST(SmppSegmentTally, NothingAcceptedOrAnotherFailureIsNotResumed) {
  SegmentTally all_throttled;
  all_throttled.begin(2);
  all_throttled.sent();
  all_throttled.done(0, SendOutcome::kThrottled, 0x58, "", "throttled");
  ASSERT_TRUE(all_throttled.finished());
  EXPECT_FALSE(all_throttled.resumable());  // the worker retries the whole message

  SegmentTally with_fault;
  with_fault.begin(3);
  for (int i = 0; i < 3; ++i) with_fault.sent();
  with_fault.done(0, SendOutcome::kDelivered, 0, "id-1", "");
  with_fault.done(1, SendOutcome::kThrottled, 0x58, "", "throttled");
  with_fault.done(2, SendOutcome::kPermanent, 0x0B, "", "bad address");
  ASSERT_TRUE(with_fault.finished());
  EXPECT_FALSE(with_fault.resumable());
  EXPECT_EQ(with_fault.result(1).outcome, SendOutcome::kPermanent);
}

}  // namespace
}  // namespace pacer::smpp
