// The SMPP sink against pacer-fake-smsc on loopback (label "integration"):
// real sockets, real binds; waits are bounded loops on the sink's own
// wait(), never fixed sleeps.
#include "pacer/sinks/smpp_sink.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "pacer/error.h"
#include "pacer/fakes/fake_smsc.h"

namespace pacer::sink {
namespace {

using namespace std::chrono_literals;

Message msg(std::string id, std::string to, std::string text) {
  Message m;
  m.id = std::move(id);
  m.campaign = "c1";
  m.recipient = std::move(to);
  m.payload = std::move(text);
  return m;
}

fake::FakeSmscOptions smscOptions() {
  fake::FakeSmscOptions o;
  o.accounts = {{"pacer", "secret", 0}};
  return o;
}

SmppSinkOptions sinkOptions(int port) {
  SmppSinkOptions o;
  o.port = port;
  o.system_id = "pacer";
  o.password = "secret";
  o.provider = "smsc-test";
  o.response_timeout = 2s;
  o.reconnect_backoff_min = 20ms;
  o.reconnect_backoff_max = 100ms;
  o.seed = 7;
  return o;
}

// Polls until `want` results and `receipts` receipts arrived, or 10 s.
void drive(SinkInterface& sink, std::vector<SendResult>& results, std::size_t want,
           std::vector<DeliveryReceipt>* receipts = nullptr, std::size_t want_receipts = 0) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    sink.poll(results);
    if (receipts != nullptr) sink.pollReceipts(*receipts);
    if (results.size() >= want && (receipts == nullptr || receipts->size() >= want_receipts)) return;
    sink.wait(20ms);
  }
}

std::uint64_t acc(const nlohmann::json& report, const char* key) {
  return report["accounts"]["pacer"][key].get<std::uint64_t>();
}

// Drives the sink until `done()` or 10 s; what finishes meanwhile is
// appended to `results` and `receipts`. Returns done().
bool driveUntil(SinkInterface& sink, const std::function<bool()>& done, std::vector<SendResult>& results,
                std::vector<DeliveryReceipt>& receipts) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    sink.poll(results);
    sink.pollReceipts(receipts);
    sink.wait(20ms);
  }
  return done();
}

std::set<std::string> idsOf(const std::vector<DeliveryReceipt>& receipts) {
  std::set<std::string> ids;
  for (const auto& r : receipts) ids.insert(r.provider_message_id);
  return ids;
}

TEST(SmppSinkIntegration, DeliversAndReportsTheReceipt) {
  fake::FakeSmsc smsc(smscOptions());
  const int port = smsc.start();
  auto sink = makeSmppSink(sinkOptions(port));
  ASSERT_TRUE(sink->submit(msg("m1", "+4915112345678", "Hello"), 1));
  std::vector<SendResult> results;
  std::vector<DeliveryReceipt> receipts;
  drive(*sink, results, 1, &receipts, 1);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].ticket, 1u);
  EXPECT_EQ(results[0].outcome, SendOutcome::kDelivered) << results[0].reason;
  ASSERT_FALSE(results[0].provider_message_id.empty());
  ASSERT_EQ(receipts.size(), 1u);
  EXPECT_EQ(receipts[0].provider_message_id, results[0].provider_message_id);
  EXPECT_EQ(receipts[0].status, ReceiptStatus::kDelivered);
  EXPECT_EQ(receipts[0].provider, "smsc-test");
  EXPECT_GT(receipts[0].received_at_ms, 0);
  EXPECT_NE(receipts[0].ack, 0u);
  EXPECT_EQ(sink->inFlight(), 0u);
  EXPECT_EQ(sink->stats().binds_up, 1u);
}

TEST(SmppSinkIntegration, MultiSegmentMessageIsAllItsSegments) {
  auto o = smscOptions();
  const std::string record = ::testing::TempDir() + "smpp_record.tsv";
  o.record_path = record;
  fake::FakeSmsc smsc(o);
  const int port = smsc.start();
  auto so = sinkOptions(port);
  so.window = 2;  // three segments through a window of two
  auto sink = makeSmppSink(so);
  ASSERT_TRUE(sink->submit(msg("m1", "123", std::string(400, 'x')), 9));
  std::vector<SendResult> results;
  drive(*sink, results, 1);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].outcome, SendOutcome::kDelivered) << results[0].reason;
  smsc.stop();
  const auto report = smsc.report();
  EXPECT_EQ(acc(report, "accepted"), 3u);
  EXPECT_EQ(acc(report, "window_exceeded"), 0u);
  EXPECT_EQ(report["accounts"]["pacer"]["receipts_sent"]["delivered"].get<int>(), 1);  // only the first segment asked
  std::ifstream in(record);
  std::string line, all;
  int lines = 0;
  while (std::getline(in, line)) ++lines, all += line + "\n";
  EXPECT_EQ(lines, 3);
  EXPECT_NE(all.find("\t1/3\tESME_ROK"), std::string::npos) << all;
  EXPECT_NE(all.find("\t3/3\tESME_ROK"), std::string::npos) << all;
  // The first segment's id is the message's.
  EXPECT_NE(all.find(results[0].provider_message_id + "\t123\t1/3"), std::string::npos) << all;
}

TEST(SmppSinkIntegration, QuotaAnswersAreThrottledWithRetryAfter) {
  auto o = smscOptions();
  o.accounts[0].quota_per_s = 3;
  fake::FakeSmsc smsc(o);
  auto so = sinkOptions(smsc.start());
  so.throttle_retry_after = 1500ms;
  auto sink = makeSmppSink(so);
  for (std::uint64_t t = 0; t < 8; ++t) ASSERT_TRUE(sink->submit(msg("m", "123", "hi"), t));
  std::vector<SendResult> results;
  drive(*sink, results, 8);
  ASSERT_EQ(results.size(), 8u);
  int delivered = 0, throttled = 0;
  for (const auto& r : results) {
    if (r.outcome == SendOutcome::kDelivered) ++delivered;
    if (r.outcome == SendOutcome::kThrottled) {
      ++throttled;
      EXPECT_EQ(r.retry_after, 1500ms);
      EXPECT_EQ(r.status, 0x58);
    }
  }
  EXPECT_EQ(delivered, 3);
  EXPECT_EQ(throttled, 5);
}

TEST(SmppSinkIntegration, PermanentAndTransientErrorsAreClassified) {
  auto o = smscOptions();
  o.permanent_rate = 1.0;
  fake::FakeSmsc smsc(o);
  auto sink = makeSmppSink(sinkOptions(smsc.start()));
  ASSERT_TRUE(sink->submit(msg("m", "123", "hi"), 1));
  ASSERT_TRUE(sink->submit(msg("bad", "123", "bad \xff utf8"), 2));
  ASSERT_TRUE(sink->submit(msg("none", "", "no recipient"), 3));
  std::vector<SendResult> results;
  drive(*sink, results, 3);
  ASSERT_EQ(results.size(), 3u);
  for (const auto& r : results) {
    EXPECT_EQ(r.outcome, SendOutcome::kPermanent) << r.ticket;
    if (r.ticket == 1) {
      EXPECT_EQ(r.reason, "submit_sm_resp ESME_RINVDSTADR");
    } else if (r.ticket == 2) {
      EXPECT_EQ(r.reason, "text is not UTF-8 at byte 4");
    }
  }
}

TEST(SmppSinkIntegration, WrongPasswordFailsMessagesWithoutLeakingIt) {
  fake::FakeSmsc smsc(smscOptions());
  auto so = sinkOptions(smsc.start());
  so.password = "wrong";
  so.response_timeout = 300ms;
  std::vector<std::string> log;
  so.log = [&log](std::string_view line) { log.emplace_back(line); };
  auto sink = makeSmppSink(so);
  ASSERT_TRUE(sink->submit(msg("m", "123", "hi"), 1));
  std::vector<SendResult> results;
  drive(*sink, results, 1);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].outcome, SendOutcome::kFault);
  EXPECT_EQ(results[0].reason, "no SMPP bind available: bind refused: ESME_RINVPASWD");
  EXPECT_GE(sink->stats().bind_failures, 1u);
  for (const auto& l : log) EXPECT_EQ(l.find("wrong"), std::string::npos) << l;
}

TEST(SmppSinkIntegration, UnansweredSubmitTimesOut) {
  auto o = smscOptions();
  o.response_delay_ms = 3000;
  fake::FakeSmsc smsc(o);
  auto so = sinkOptions(smsc.start());
  so.response_timeout = 300ms;
  auto sink = makeSmppSink(so);
  ASSERT_TRUE(sink->submit(msg("m", "123", "hi"), 1));
  std::vector<SendResult> results;
  drive(*sink, results, 1);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].outcome, SendOutcome::kFault);
  EXPECT_EQ(results[0].reason, "response timeout");
}

// A dropped connection returns the outstanding window as faults, and the
// sink binds again by itself.
TEST(SmppSinkIntegration, LostConnectionReturnsTheWindowAndReconnects) {
  auto o = smscOptions();
  o.response_delay_ms = 1000;
  fake::FakeSmsc smsc(o);
  auto sink = makeSmppSink(sinkOptions(smsc.start()));
  std::vector<SendResult> results;
  // Bind first (one message through), then fill the window and drop it.
  ASSERT_TRUE(sink->submit(msg("warm", "123", "hi"), 100));
  drive(*sink, results, 1);
  ASSERT_EQ(results.size(), 1u);
  ASSERT_EQ(results[0].outcome, SendOutcome::kDelivered);
  results.clear();
  for (std::uint64_t t = 0; t < 5; ++t) ASSERT_TRUE(sink->submit(msg("m", "123", "hi"), t));
  for (int i = 0; i < 5; ++i) sink->poll(results);  // sends them
  smsc.dropAll();
  drive(*sink, results, 5);
  ASSERT_EQ(results.size(), 5u);
  for (const auto& r : results) {
    EXPECT_EQ(r.outcome, SendOutcome::kFault);
    EXPECT_EQ(r.reason.rfind("connection lost", 0), 0u) << r.reason;
  }
  results.clear();
  ASSERT_TRUE(sink->submit(msg("after", "123", "hi"), 200));
  drive(*sink, results, 1);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].outcome, SendOutcome::kDelivered) << results[0].reason;
  EXPECT_GE(sink->stats().connects, 2u);
}

// Messages waiting for window room when the only bind is lost, with binds
// refused after it, come back as faults at once: they never reached the
// SMSC, and the worker retries them elsewhere (a failover provider) or holds
// them, rather than leaving them here until response_timeout.
TEST(SmppSinkIntegration, WaitingMessagesFailAtOnceWhenTheBindsAreDown) {
  auto o = smscOptions();
  o.response_delay_ms = 1000;  // the window stays full
  o.outage_at_ms = 200;        // then every bind dropped, and binds refused
  o.outage_ms = 20000;
  fake::FakeSmsc smsc(o);
  auto so = sinkOptions(smsc.start());
  so.window = 2;
  so.max_in_flight = 5;
  so.response_timeout = 8s;
  auto sink = makeSmppSink(so);
  for (std::uint64_t t = 0; t < 5; ++t) ASSERT_TRUE(sink->submit(msg("m" + std::to_string(t), "123", "hi"), t));
  const auto start = std::chrono::steady_clock::now();
  std::vector<SendResult> results;
  drive(*sink, results, 5);
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_EQ(results.size(), 5u);
  std::size_t lost = 0, no_bind = 0;
  for (const auto& r : results) {
    EXPECT_EQ(r.outcome, SendOutcome::kFault) << r.ticket;
    lost += r.reason.rfind("connection lost", 0) == 0 ? 1 : 0;
    no_bind += r.reason.rfind("no SMPP bind available: ", 0) == 0 ? 1 : 0;
  }
  EXPECT_EQ(lost, 2u);     // the window, sent and unanswered
  EXPECT_EQ(no_bind, 3u);  // the rest, never sent
  EXPECT_LT(took, so.response_timeout) << "the waiting messages sat out the response timeout";
  EXPECT_EQ(acc(smsc.report(), "submits"), 2u);
}

TEST(SmppSinkIntegration, UnbindFromSmscIsAnsweredAndTheSinkRebinds) {
  auto o = smscOptions();
  o.response_delay_ms = 1000;
  fake::FakeSmsc smsc(o);
  auto sink = makeSmppSink(sinkOptions(smsc.start()));
  std::vector<SendResult> results;
  ASSERT_TRUE(sink->submit(msg("warm", "123", "hi"), 100));
  drive(*sink, results, 1);
  results.clear();
  ASSERT_TRUE(sink->submit(msg("m", "123", "hi"), 1));
  sink->poll(results);
  smsc.unbindAll();
  drive(*sink, results, 1);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].outcome, SendOutcome::kFault);
  EXPECT_EQ(results[0].reason, "unbind from SMSC");
  results.clear();
  ASSERT_TRUE(sink->submit(msg("after", "123", "hi"), 2));
  drive(*sink, results, 1);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].outcome, SendOutcome::kDelivered) << results[0].reason;
}

TEST(SmppSinkIntegration, TransmitterAndReceiverBindsWithMixedReceipts) {
  auto o = smscOptions();
  o.mix_delivered = 1;
  o.mix_undelivered = 1;
  o.receipt_tlvs = false;  // the text alone must do
  fake::FakeSmsc smsc(o);
  auto so = sinkOptions(smsc.start());
  so.bind_mode = SmppBindMode::kTransmitterReceiver;
  so.binds = 2;
  auto sink = makeSmppSink(so);
  for (std::uint64_t t = 0; t < 20; ++t) ASSERT_TRUE(sink->submit(msg("m", "123", "hi"), t));
  std::vector<SendResult> results;
  std::vector<DeliveryReceipt> receipts;
  drive(*sink, results, 20, &receipts, 20);
  ASSERT_EQ(results.size(), 20u);
  ASSERT_EQ(receipts.size(), 20u);
  std::set<std::string> ids;
  for (const auto& r : results) ids.insert(r.provider_message_id);
  int delivered = 0, undelivered = 0;
  for (const auto& r : receipts) {
    EXPECT_TRUE(ids.count(r.provider_message_id)) << r.provider_message_id;
    delivered += r.status == ReceiptStatus::kDelivered;
    undelivered += r.status == ReceiptStatus::kUndelivered;
  }
  EXPECT_EQ(delivered + undelivered, 20);
  const auto report = smsc.report();
  EXPECT_EQ(acc(report, "binds"), 4u);
  EXPECT_EQ(report["accounts"]["pacer"]["receipts_sent"]["delivered"].get<int>(), delivered);
  EXPECT_EQ(sink->stats().binds_up, 4u);
  // Answered on the receiver binds they came on, once recorded.
  EXPECT_EQ(acc(report, "receipts_acked"), 0u);
  sink->receiptsRecorded(receipts);
  EXPECT_EQ(sink->stats().receipts_answered, 20u);
  std::vector<DeliveryReceipt> more;
  auto all_acked = [&] { return acc(smsc.report(), "receipts_acked") == 20; };
  EXPECT_TRUE(driveUntil(*sink, all_acked, results, more));
  EXPECT_EQ(acc(smsc.report(), "receipts_unacked"), 0u);
  EXPECT_TRUE(more.empty());
}

// Receipts the owner never reports recorded (pacerd killed, PostgreSQL down)
// are never answered: when the bind goes, the SMSC sends them again on the
// next one, and only there can they be answered.
TEST(SmppSinkIntegration, UnrecordedReceiptsStayUnansweredAndComeAgainOnTheNextBind) {
  fake::FakeSmsc smsc(smscOptions());
  auto sink = makeSmppSink(sinkOptions(smsc.start()));
  for (std::uint64_t t = 0; t < 3; ++t) ASSERT_TRUE(sink->submit(msg("m" + std::to_string(t), "123", "hi"), t));
  std::vector<SendResult> results;
  std::vector<DeliveryReceipt> first;
  drive(*sink, results, 3, &first, 3);
  ASSERT_EQ(results.size(), 3u);
  ASSERT_EQ(first.size(), 3u);
  std::set<std::uint64_t> first_acks;
  for (const auto& r : first) first_acks.insert(r.ack);
  EXPECT_EQ(first_acks.size(), 3u);
  EXPECT_EQ(first_acks.count(0), 0u);
  // A while of polling without receiptsRecorded(): still nothing answered.
  std::vector<DeliveryReceipt> none;
  const auto until = std::chrono::steady_clock::now() + 300ms;
  while (std::chrono::steady_clock::now() < until) {
    sink->poll(results);
    sink->pollReceipts(none);
    sink->wait(20ms);
  }
  EXPECT_TRUE(none.empty());
  auto report = smsc.report();
  EXPECT_EQ(acc(report, "receipts_acked"), 0u);
  EXPECT_EQ(acc(report, "receipts_unacked"), 3u);
  EXPECT_EQ(sink->stats().receipts_unanswered, 3u);

  smsc.dropAll();
  std::vector<DeliveryReceipt> again;
  auto all_again = [&] { return again.size() >= 3; };
  ASSERT_TRUE(driveUntil(*sink, all_again, results, again));
  EXPECT_EQ(again.size(), 3u);
  EXPECT_EQ(idsOf(again), idsOf(first));
  EXPECT_GE(sink->stats().connects, 2u);
  for (const auto& r : again) EXPECT_EQ(first_acks.count(r.ack), 0u) << "a new bind gives new handles";
  EXPECT_EQ(acc(smsc.report(), "receipts_resent"), 3u);

  // The first bind's handles answer nothing on the new one; the new ones do.
  sink->receiptsRecorded(first);
  EXPECT_EQ(sink->stats().receipts_answered, 0u);
  sink->receiptsRecorded(again);
  EXPECT_EQ(sink->stats().receipts_answered, 3u);
  EXPECT_EQ(sink->stats().receipts_unanswered, 0u);
  auto three_acked = [&] { return acc(smsc.report(), "receipts_acked") == 3; };
  ASSERT_TRUE(driveUntil(*sink, three_acked, results, again));
  report = smsc.report();
  EXPECT_EQ(acc(report, "receipts_unacked"), 0u);
  EXPECT_EQ(acc(report, "receipts_pending"), 0u);
  EXPECT_EQ(report["accounts"]["pacer"]["receipts_sent"]["delivered"].get<int>(), 3);  // counted once each
}

TEST(SmppSinkIntegration, RecordedReceiptsAreAnsweredOnceAndNotSentAgain) {
  fake::FakeSmsc smsc(smscOptions());
  auto sink = makeSmppSink(sinkOptions(smsc.start()));
  for (std::uint64_t t = 0; t < 3; ++t) ASSERT_TRUE(sink->submit(msg("m" + std::to_string(t), "123", "hi"), t));
  std::vector<SendResult> results;
  std::vector<DeliveryReceipt> receipts;
  drive(*sink, results, 3, &receipts, 3);
  ASSERT_EQ(receipts.size(), 3u);
  sink->receiptsRecorded(receipts);
  EXPECT_EQ(sink->stats().receipts_answered, 3u);
  std::vector<DeliveryReceipt> later;
  auto three_acked = [&] { return acc(smsc.report(), "receipts_acked") == 3; };
  ASSERT_TRUE(driveUntil(*sink, three_acked, results, later));
  EXPECT_EQ(acc(smsc.report(), "receipts_unacked"), 0u);
  sink->receiptsRecorded(receipts);  // told again (it is not, by the worker): nothing more is written
  EXPECT_EQ(sink->stats().receipts_answered, 3u);

  smsc.dropAll();
  ASSERT_TRUE(driveUntil(
      *sink, [&] { return acc(smsc.report(), "binds") == 2 && sink->stats().binds_up == 1; }, results, later));
  // The SMSC would send anything unanswered at once on the new bind (it does
  // in the test above); give it time to.
  const auto until = std::chrono::steady_clock::now() + 300ms;
  while (std::chrono::steady_clock::now() < until) {
    sink->poll(results);
    sink->pollReceipts(later);
    sink->wait(20ms);
  }
  EXPECT_TRUE(later.empty()) << later.size() << " receipts came again";
  const auto report = smsc.report();
  EXPECT_EQ(acc(report, "receipts_acked"), 3u);
  EXPECT_EQ(acc(report, "receipts_resent"), 0u);
  EXPECT_EQ(acc(report, "receipts_pending"), 0u);
  EXPECT_EQ(results.size(), 3u);
}

TEST(SmppSinkIntegration, SmscWindowIsNeverExceeded) {
  auto o = smscOptions();
  o.window = 4;
  o.response_delay_ms = 5;
  fake::FakeSmsc smsc(o);
  auto so = sinkOptions(smsc.start());
  so.window = 4;
  so.max_in_flight = 40;
  auto sink = makeSmppSink(so);
  for (std::uint64_t t = 0; t < 40; ++t) ASSERT_TRUE(sink->submit(msg("m", "123", "hi"), t));
  std::vector<SendResult> results;
  drive(*sink, results, 40);
  ASSERT_EQ(results.size(), 40u);
  for (const auto& r : results) EXPECT_EQ(r.outcome, SendOutcome::kDelivered) << r.reason;
  EXPECT_EQ(acc(smsc.report(), "window_exceeded"), 0u);
}

TEST(SmppSinkIntegration, BadOptionsThrowWithoutThePassword) {
  SmppSinkOptions o = sinkOptions(1);
  o.window = 0;
  o.password = "hunter2";
  try {
    makeSmppSink(o);
    FAIL() << "expected InvalidError";
  } catch (const InvalidError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalid);
    EXPECT_EQ(std::string(e.what()).find("hunter2"), std::string::npos);
  }
  o.window = 10;
  o.host = "no-such-host.invalid";
  EXPECT_THROW(makeSmppSink(o), InvalidError);
}

}  // namespace
}  // namespace pacer::sink
