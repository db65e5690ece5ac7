#include "pacer/smpp/submit.h"

#include <gtest/gtest.h>

#include <functional>

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

// Sends every segment next() allows and answers it at once with `answer(k)`.
void runAll(SegmentTally& t, const std::function<SendOutcome(std::size_t)>& answer) {
  for (std::size_t k = t.next(); k != SegmentTally::kNone; k = t.next()) {
    t.sent(k);
    const SendOutcome o = answer(k);
    t.done(k, o, o == SendOutcome::kDelivered ? 0 : 0x08, "id-" + std::to_string(k + 1), "submit_sm_resp X");
  }
}

TEST(SmppSegmentTally, DeliveredOnlyWhenEverySegmentIsAccepted) {
  SegmentTally t;
  t.begin(3);
  runAll(t, [](std::size_t) { return SendOutcome::kDelivered; });
  ASSERT_TRUE(t.finished());
  const SendResult r = t.result(77);
  EXPECT_EQ(r.ticket, 77u);
  EXPECT_EQ(r.outcome, SendOutcome::kDelivered);
  EXPECT_EQ(r.provider_message_id, "id-1");
  EXPECT_TRUE(r.reason.empty());
}

TEST(SmppSegmentTally, OneSegmentAtATimeEachAfterThePreviousWasAccepted) {
  SegmentTally t;
  t.begin(3);
  ASSERT_EQ(t.next(), 0u);
  t.sent(0);
  EXPECT_EQ(t.next(), SegmentTally::kNone);  // segment 1 is out: segment 2 waits for its answer
  EXPECT_FALSE(t.finished());
  t.done(0, SendOutcome::kDelivered, 0, "id-1", "");
  ASSERT_EQ(t.next(), 1u);
  t.sent(1);
  EXPECT_EQ(t.next(), SegmentTally::kNone);
  t.done(1, SendOutcome::kFault, 0x08, "", "submit_sm_resp ESME_RSYSERR");
  EXPECT_EQ(t.next(), SegmentTally::kNone);  // segment 3 never goes after a failed segment 2
  ASSERT_TRUE(t.finished());
  const SendResult r = t.result(1);
  EXPECT_EQ(r.outcome, SendOutcome::kFault);
  EXPECT_EQ(r.status, 0x08);
  EXPECT_EQ(r.reason, "submit_sm_resp ESME_RSYSERR (segment 2/3); segment 1 of 3 accepted, id id-1");
  EXPECT_EQ(r.provider_message_id, "id-1") << "the SMSC holds segment 1: its receipt joins the failed row";
}

TEST(SmppSegmentTally, TheGravestClassWinsWhenSeveralSegmentsFail) {
  SegmentTally t;  // segments answered out of turn (an owner that sent two) still add up
  t.begin(4);
  t.sent(0);
  t.done(0, SendOutcome::kFault, 0x08, "", "submit_sm_resp ESME_RSYSERR");
  t.done(1, SendOutcome::kThrottled, 0x58, "", "submit_sm_resp ESME_RTHROTTLED");
  ASSERT_TRUE(t.finished());
  const SendResult r = t.result(1);
  EXPECT_EQ(r.outcome, SendOutcome::kThrottled);
  EXPECT_EQ(r.status, 0x58);
  EXPECT_EQ(r.reason, "submit_sm_resp ESME_RTHROTTLED (segment 2/4)");
}

// Every failure a retry may overcome leaves the message resumable: its retry
// sends only what the SMSC does not hold, and is delivered under the first
// segment's id from the earlier attempt.
TEST(SmppSegmentTally, AfterAnyRetryableFailureTheRetrySendsOnlyTheMissingSegments) {
  for (const SendOutcome failure : {SendOutcome::kFault, SendOutcome::kThrottled}) {
    SegmentTally t;
    t.begin(4);
    runAll(t, [&](std::size_t k) { return k == 2 ? failure : SendOutcome::kDelivered; });
    ASSERT_TRUE(t.finished());
    ASSERT_TRUE(t.resumable());
    EXPECT_EQ(t.result(1).outcome, failure);
    EXPECT_EQ(t.result(1).reason, "submit_sm_resp X (segment 3/4); segments 1,2 of 4 accepted, ids id-1,id-2");
    const std::vector<std::string> held = t.acceptedIds();
    EXPECT_EQ(held, (std::vector<std::string>{"id-1", "id-2", "", ""}));

    SegmentTally retry;
    retry.begin(4);
    retry.restore(held);
    std::vector<std::size_t> sent;
    runAll(retry, [&](std::size_t k) {
      sent.push_back(k);
      return SendOutcome::kDelivered;
    });
    EXPECT_EQ(sent, (std::vector<std::size_t>{2, 3}));
    ASSERT_TRUE(retry.finished());
    EXPECT_EQ(retry.result(5).outcome, SendOutcome::kDelivered);
    EXPECT_EQ(retry.result(5).provider_message_id, "id-1");
  }
}

TEST(SmppSegmentTally, AFailedRetryStillNamesThePartsOfEveryAttempt) {
  SegmentTally retry;
  retry.begin(3);
  retry.restore({"id-1", "", ""});
  runAll(retry, [](std::size_t k) { return k == 1 ? SendOutcome::kDelivered : SendOutcome::kFault; });
  ASSERT_TRUE(retry.resumable());
  EXPECT_EQ(retry.result(1).reason, "submit_sm_resp X (segment 3/3); segments 1,2 of 3 accepted, ids id-1,id-2");
}

TEST(SmppSegmentTally, ARefusedSegmentEndsTheMessageAndItsReasonNamesWhatWent) {
  SegmentTally t;
  t.begin(3);
  runAll(t, [](std::size_t k) { return k == 1 ? SendOutcome::kPermanent : SendOutcome::kDelivered; });
  ASSERT_TRUE(t.finished());
  EXPECT_FALSE(t.resumable());  // no retry comes
  const SendResult r = t.result(1);
  EXPECT_EQ(r.outcome, SendOutcome::kPermanent);
  EXPECT_EQ(r.reason, "submit_sm_resp X (segment 2/3); segment 1 of 3 accepted, id id-1");
}

TEST(SmppSegmentTally, ANothingAcceptedFailureIsResumableButASingleSegmentIsNot) {
  SegmentTally none;  // an unanswered first segment may be at the SMSC: keep the reference
  none.begin(2);
  none.sent(0);
  none.done(0, SendOutcome::kFault, 0, "", "response timeout");
  ASSERT_TRUE(none.finished());
  EXPECT_TRUE(none.resumable());
  EXPECT_EQ(none.result(1).reason, "response timeout (segment 1/2)");  // nothing accepted to name

  SegmentTally single;
  single.begin(1);
  single.sent(0);
  single.done(0, SendOutcome::kFault, 0x08, "", "submit_sm_resp ESME_RSYSERR");
  ASSERT_TRUE(single.finished());
  EXPECT_FALSE(single.resumable());
}

TEST(SmppSegmentTally, AcceptedSummary) {
  EXPECT_EQ(acceptedSummary({"", ""}), "");
  EXPECT_EQ(acceptedSummary({"a", ""}), "segment 1 of 2 accepted, id a");
  EXPECT_EQ(acceptedSummary({"a", "", "c"}), "segments 1,3 of 3 accepted, ids a,c");
}

TEST(SmppValidity, AbsoluteTimeIsSmpp34InUtcWithTenths) {
  // 2026-11-26T15:30:00.250Z: YYMMDDhhmmss, tenths 2, 00 quarter hours, '+'.
  EXPECT_EQ(absoluteTime(1'795'707'000'250), "261126153000200+");
  EXPECT_EQ(absoluteTime(1'795'707'000'999), "261126153000900+") << "tenths rounded down";
  EXPECT_EQ(absoluteTime(946'684'800'000), "000101000000000+") << "2000-01-01";
  EXPECT_EQ(absoluteTime(946'684'799'999), "") << "1999: no two-digit year for it";
}

TEST(SmppValidity, TheDeadlineWinsOnlyWhenItEndsBeforeTheConfiguredRelativePeriod) {
  constexpr std::int64_t kNow = 1'795'707'000'000;  // 2026-11-26T15:30:00Z
  EXPECT_EQ(relativeMillis("000001000000000R"), 86'400'000);
  EXPECT_EQ(relativeMillis("000000001030000R"), 630'000);
  EXPECT_EQ(validityFor("", 0, kNow), "") << "no deadline: the SMSC's default";
  EXPECT_EQ(validityFor("000000010000000R", 0, kNow), "000000010000000R");
  EXPECT_EQ(validityFor("", kNow + 90'000, kNow), "261126153130000+");
  EXPECT_EQ(validityFor("000000010000000R", kNow + 90'000, kNow), "261126153130000+") << "90 s before 1 h";
  EXPECT_EQ(validityFor("000000000100000R", kNow + 90'000, kNow), "000000000100000R") << "1 min before 90 s";
}

TEST(SmppValidity, TheDeadlineReachesTheSubmitSmBytes) {
  SubmitOptions o;
  EncodedText scratch;
  std::vector<Pdu> pdus;
  std::size_t n = 0;
  std::string reason;
  ASSERT_EQ(buildSubmits(o, "4915112345678", "Hi", 1, scratch, pdus, n, reason), BuildError::kNone);
  pdus[0].validity_period = validityFor(o.validity_period, 1'795'707'090'000, 1'795'707'000'000);
  std::string bytes;
  ASSERT_EQ(encode(pdus[0], bytes), EncodeError::kNone);
  // schedule_delivery_time (empty: one NUL) then validity_period, NUL-terminated.
  const std::string nul(1, '\0');
  EXPECT_NE(bytes.find(nul + "261126153130000+" + nul), std::string::npos) << toHex(bytes);
  Pdu back;
  ASSERT_EQ(decode(bytes, back), DecodeError::kNone);
  EXPECT_EQ(back.validity_period, "261126153130000+");
}

}  // namespace
}  // namespace pacer::smpp
