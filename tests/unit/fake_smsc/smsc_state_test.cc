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

}  // namespace
}  // namespace pacer::fake
