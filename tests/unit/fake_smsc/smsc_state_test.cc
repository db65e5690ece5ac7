// pacer-fake-smsc's decisions on hand-made time points: passwords, the
// strict sliding quota in segments, the window, error rates, receipts.
#include "smsc_state.h"

#include <gtest/gtest.h>

#include "pacer/smpp/receipt.h"

namespace pacer::fake {
namespace {

using namespace std::chrono_literals;

FakeSmscOptions options() {
  FakeSmscOptions o;
  o.accounts = {{"a", "pa", 3}, {"b", "pb", 0}};
  return o;
}

smpp::Pdu submit(std::uint8_t registered_delivery = 0) {
  smpp::Pdu p;
  p.command_id = smpp::cmd::kSubmitSm;
  p.source_addr = "S";
  p.destination_addr = "123";
  p.registered_delivery = registered_delivery;
  return p;
}

TEST(FakeSmscState, BindChecksAccountAndPassword) {
  SmscState s(options());
  smpp::Pdu bind;
  std::uint32_t st = 0;
  bind.system_id = "nobody";
  EXPECT_EQ(s.authenticate(bind, st), -1);
  EXPECT_EQ(st, smpp::status::kBindFail);
  bind.system_id = "a";
  bind.password = "wrong";
  EXPECT_EQ(s.authenticate(bind, st), -1);
  EXPECT_EQ(st, smpp::status::kInvPaswd);
  bind.password = "pa";
  EXPECT_EQ(s.authenticate(bind, st), 0);
  EXPECT_EQ(st, 0u);
  EXPECT_EQ(s.accounts()[0].binds, 1u);
  EXPECT_EQ(s.accounts()[0].bind_failures, 1u);
}

TEST(FakeSmscState, QuotaIsAStrictSlidingSecondInSegments) {
  SmscState s(options());
  const Clock::time_point t0{};
  std::string id;
  EXPECT_EQ(s.submit(0, submit(), false, t0, id), 0u);
  EXPECT_FALSE(id.empty());
  EXPECT_EQ(s.submit(0, submit(), false, t0 + 300ms, id), 0u);
  EXPECT_EQ(s.submit(0, submit(), false, t0 + 600ms, id), 0u);
  EXPECT_EQ(s.submit(0, submit(), false, t0 + 999ms, id), smpp::status::kThrottled);
  EXPECT_TRUE(id.empty());
  EXPECT_EQ(s.submit(0, submit(), false, t0 + 1000ms, id), 0u);  // t0's segment left the window
  EXPECT_EQ(s.submit(0, submit(), false, t0 + 1100ms, id), smpp::status::kThrottled);
  // Account b has no quota.
  for (int i = 0; i < 50; ++i) EXPECT_EQ(s.submit(1, submit(), false, t0, id), 0u);
  const auto r = s.report()["accounts"];
  EXPECT_EQ(r["a"]["accepted"], 4);
  EXPECT_EQ(r["a"]["throttled"], 2);
  EXPECT_EQ(r["a"]["max_segments_1s"], 3);
  EXPECT_EQ(r["b"]["max_segments_1s"], 50);
}

TEST(FakeSmscState, FullWindowIsThrottledAndCounted) {
  SmscState s(options());
  std::string id;
  EXPECT_EQ(s.submit(1, submit(), true, Clock::time_point{}, id), smpp::status::kThrottled);
  EXPECT_EQ(s.report()["accounts"]["b"]["window_exceeded"], 1);
}

TEST(FakeSmscState, ErrorRatesUseTheirStatus) {
  auto o = options();
  o.permanent_rate = 1;
  SmscState s(o);
  std::string id;
  EXPECT_EQ(s.submit(1, submit(), false, Clock::time_point{}, id), 0x0Bu);
  o.permanent_rate = 0;
  o.transient_rate = 1;
  o.transient_status = 0x45;
  SmscState t(o);
  EXPECT_EQ(t.submit(1, submit(), false, Clock::time_point{}, id), 0x45u);
}

TEST(FakeSmscState, ReceiptsOnlyWhenAskedAndParseBack) {
  auto o = options();
  o.receipt_delay_ms = 250;
  o.mix_delivered = 0;
  o.mix_expired = 1;
  SmscState s(o);
  std::string id;
  const Clock::time_point t0{};
  s.submit(1, submit(0), false, t0, id);
  EXPECT_TRUE(s.receipts().empty());
  s.submit(1, submit(1), false, t0, id);
  ASSERT_EQ(s.receipts().size(), 1u);
  EXPECT_EQ(s.receipts()[0].due, t0 + 250ms);
  smpp::Pdu d = s.receiptPdu(s.receipts()[0]);
  EXPECT_EQ(d.source_addr, "123");
  EXPECT_EQ(d.destination_addr, "S");
  d.receipted_message_id.reset();  // the text alone must say the same
  d.message_state.reset();
  const auto r = smpp::parseReceipt(d);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->message_id, id);
  EXPECT_EQ(r->status, ReceiptStatus::kExpired);
}

TEST(FakeSmscState, SegmentNumbersFromUdhOrSar) {
  smpp::Pdu p = submit();
  int n = 0, m = 0;
  segmentOf(p, n, m);
  EXPECT_EQ(n * 10 + m, 11);
  p.esm_class = smpp::kEsmClassUdhi;
  p.short_message = std::string("\x05\x00\x03\x07\x03\x02", 6) + "text";
  segmentOf(p, n, m);
  EXPECT_EQ(n, 2);
  EXPECT_EQ(m, 3);
  p.esm_class = 0;
  p.sar_total_segments = 4;
  p.sar_segment_seqnum = 4;
  segmentOf(p, n, m);
  EXPECT_EQ(n, 4);
  EXPECT_EQ(m, 4);
}

// Part `n` of `m` under UDH reference `ref` to `to`.
smpp::Pdu part(int n, int m, int ref, std::string to = "123") {
  smpp::Pdu p = submit();
  p.destination_addr = std::move(to);
  p.esm_class = smpp::kEsmClassUdhi;
  p.short_message =
      std::string("\x05\x00\x03", 3) + static_cast<char>(ref) + static_cast<char>(m) + static_cast<char>(n) + "text";
  return p;
}

// Submits a part and, if accepted, answers it (the resp went out).
std::uint32_t submitAnswered(SmscState& s, const smpp::Pdu& p) {
  std::string id;
  std::int64_t handle = -1;
  const std::uint32_t st = s.submit(1, p, false, Clock::time_point{}, id, &handle);
  s.answered(handle, st);
  return st;
}

TEST(FakeSmscState, ReferenceAndSegmentNumbersFromUdhAndSar) {
  int n = 0, m = 0, ref = 0;
  segmentOf(part(2, 3, 0xAB), n, m, ref);
  EXPECT_EQ(ref, 0xAB);
  smpp::Pdu p = submit();
  segmentOf(p, n, m, ref);
  EXPECT_EQ(ref, -1);
  p.sar_msg_ref_num = 0x1234;
  p.sar_total_segments = 2;
  p.sar_segment_seqnum = 1;
  segmentOf(p, n, m, ref);
  EXPECT_EQ(ref, 0x1234);
}

TEST(FakeSmscState, SegmentFaultAnswersTheChosenPartOnceAndPartsArePerReference) {
  FakeSmscOptions o = options();
  o.segment_fault_rate = 1;
  o.segment_fault_part = 2;
  SmscState s(o);
  EXPECT_EQ(submitAnswered(s, part(1, 3, 5)), 0u);
  EXPECT_EQ(submitAnswered(s, part(2, 3, 5)), smpp::status::kSysErr);
  EXPECT_EQ(submitAnswered(s, part(2, 3, 5)), 0u);  // sent again: accepted
  EXPECT_EQ(submitAnswered(s, part(3, 3, 5)), 0u);
  auto r = s.report()["accounts"]["b"]["concatenated"];
  EXPECT_EQ(r["messages"], 1);
  EXPECT_EQ(r["complete"], 1);
  EXPECT_EQ(r["orphan_parts"], 0);
  EXPECT_EQ(r["segment_faults"], 1);
  EXPECT_EQ(r["parts_out_of_turn"], 0);
  EXPECT_EQ(r["duplicate_parts"], 0);

  // The old client: part 3 after a failed part 2, and the whole message
  // again under a new reference. Part 1 and 3 of reference 6 stay orphans.
  EXPECT_EQ(submitAnswered(s, part(1, 3, 6)), 0u);
  EXPECT_EQ(submitAnswered(s, part(2, 3, 6)), smpp::status::kSysErr);
  EXPECT_EQ(submitAnswered(s, part(3, 3, 6)), 0u);
  for (int n = 1; n <= 3; ++n) EXPECT_EQ(submitAnswered(s, part(n, 3, 7)), n == 2 ? smpp::status::kSysErr : 0u);
  r = s.report()["accounts"]["b"]["concatenated"];
  EXPECT_EQ(r["messages"], 3);
  EXPECT_EQ(r["complete"], 1);
  EXPECT_EQ(r["incomplete"], 2);
  EXPECT_EQ(r["orphan_parts"], 4);
  EXPECT_EQ(r["parts_out_of_turn"], 2);
}

TEST(FakeSmscState, SegmentFaultTimesZeroFaultsThePartEveryTime) {
  FakeSmscOptions o = options();
  o.segment_fault_rate = 1;
  o.segment_fault_times = 0;
  SmscState s(o);
  EXPECT_EQ(submitAnswered(s, part(1, 2, 3)), 0u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(submitAnswered(s, part(2, 2, 3)), smpp::status::kSysErr);  // 2..m: part 2
  EXPECT_EQ(s.report()["accounts"]["b"]["concatenated"]["segment_faults"], 5);
}

TEST(FakeSmscState, APartBeforeThePreviousWasAnsweredIsOutOfTurnAndAReacceptedPartADuplicate) {
  SmscState s(options());
  std::string id;
  std::int64_t first = -1, handle = -1;
  ASSERT_EQ(s.submit(1, part(1, 2, 9, "456"), false, Clock::time_point{}, id, &first), 0u);
  ASSERT_EQ(s.submit(1, part(2, 2, 9, "456"), false, Clock::time_point{}, id, &handle), 0u);  // part 1's answer not out
  s.answered(first, 0);
  auto r = s.report()["accounts"]["b"]["concatenated"];
  EXPECT_EQ(r["parts_out_of_turn"], 1);
  EXPECT_EQ(r["complete"], 1);
  // The same reference again after completion is a new message.
  EXPECT_EQ(submitAnswered(s, part(1, 2, 9, "456")), 0u);
  EXPECT_EQ(submitAnswered(s, part(1, 2, 9, "456")), 0u);
  r = s.report()["accounts"]["b"]["concatenated"];
  EXPECT_EQ(r["messages"], 2);
  EXPECT_EQ(r["duplicate_parts"], 1);
  EXPECT_EQ(r["orphan_parts"], 1);
  ASSERT_EQ(s.concatenated().size(), 2u);
  EXPECT_EQ(s.concatenated()[1].destination, "456");
}

}  // namespace
}  // namespace pacer::fake
