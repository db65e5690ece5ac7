// "A multi-part SMS goes whole or not at all" (issue 22), judged from
// pacer-fake-smsc's own record of what arrived per concatenation reference:
// the SMSC answers ESME_RSYSERR (or a permanent error, or drops the
// connection) in the middle of multi-part messages; the sink sends no
// segment after a failed one, and the retry (played here as the worker
// plays it: the same message again) sends only the missing segments under
// the same reference, so no part is left an orphan (label "integration").
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "pacer/fakes/fake_smsc.h"
#include "pacer/retry.h"
#include "pacer/sinks/smpp_sink.h"

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

fake::FakeSmscOptions smscOptions(const std::string& record) {
  fake::FakeSmscOptions o;
  o.accounts = {{"pacer", "secret", 0}};
  o.record_path = record;
  o.response_delay_ms = 2;  // so that a segment sent before its predecessor's answer shows as out of turn
  return o;
}

SmppSinkOptions sinkOptions(int port) {
  SmppSinkOptions o;
  o.port = port;
  o.system_id = "pacer";
  o.password = "secret";
  o.response_timeout = 2s;
  o.reconnect_backoff_min = 20ms;
  o.reconnect_backoff_max = 100ms;
  o.seed = 7;
  return o;
}

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

nlohmann::json concat(const fake::FakeSmsc& smsc) { return smsc.report()["accounts"]["pacer"]["concatenated"]; }

// The record's accepted lines: destination -> (part -> id), and the
// references each destination's accepted parts came under.
struct Accepted {
  std::map<std::string, std::map<int, std::string>> parts;
  std::map<std::string, std::set<std::string>> references;
};
Accepted readRecord(const std::string& path) {
  Accepted a;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string x; std::getline(ss, x, '\t');) f.push_back(x);
    if (f.size() < 7 || f[5] != "ESME_ROK") continue;
    a.parts[f[3]][std::stoi(f[4])] = f[2];
    a.references[f[3]].insert(f[6]);
  }
  return a;
}

std::string text(int segments) { return std::string(153 * static_cast<std::size_t>(segments) - 5, 'x'); }

// Every multi-part message gets ESME_RSYSERR on one random segment of 2..m
// once; two binds, so a retry may land on either. Each fault is retried
// like the worker does (the same message again) until delivered.
TEST(SmppWholeMessage, SysErrMidMessageLeavesNoOrphanAndTheRetryKeepsTheReference) {
  const std::string record = ::testing::TempDir() + "smpp_whole_record.tsv";
  auto o = smscOptions(record);
  o.segment_fault_rate = 1;
  fake::FakeSmsc smsc(o);
  auto so = sinkOptions(smsc.start());
  so.binds = 2;
  so.window = 4;
  so.max_in_flight = 32;  // more messages than the windows hold: they share them
  auto sink = makeSmppSink(so);
  constexpr int kMessages = 24;
  std::map<std::uint64_t, Message> messages;
  for (int i = 0; i < kMessages; ++i) {
    messages[static_cast<std::uint64_t>(i)] =
        msg("m" + std::to_string(i), "49151" + std::to_string(1000 + i), text(2 + i % 4));
    ASSERT_TRUE(sink->submit(messages[static_cast<std::uint64_t>(i)], static_cast<std::uint64_t>(i)));
  }
  std::vector<SendResult> results, delivered;
  std::vector<DeliveryReceipt> receipts;
  std::vector<std::string> fault_reasons;
  const bool all = driveUntil(
      *sink,
      [&] {
        for (SendResult& r : results) {
          if (r.outcome == SendOutcome::kDelivered) {
            delivered.push_back(std::move(r));
            continue;
          }
          EXPECT_EQ(r.outcome, SendOutcome::kFault) << r.reason;
          fault_reasons.push_back(r.reason);
          EXPECT_TRUE(sink->submit(messages[r.ticket], r.ticket));  // the worker's retry
        }
        results.clear();
        return delivered.size() == kMessages;
      },
      results, receipts);
  ASSERT_TRUE(all) << delivered.size() << " delivered";
  EXPECT_EQ(fault_reasons.size(), static_cast<std::size_t>(kMessages));  // one fault each, then done
  smsc.stop();

  const auto c = concat(smsc);
  EXPECT_EQ(c["segment_faults"], kMessages);
  EXPECT_EQ(c["messages"], kMessages);
  EXPECT_EQ(c["complete"], kMessages);
  EXPECT_EQ(c["orphan_parts"], 0) << c.dump();
  EXPECT_EQ(c["parts_out_of_turn"], 0) << c.dump();  // no segment before the previous one was accepted
  EXPECT_EQ(c["duplicate_parts"], 0) << c.dump();

  // From the record: each handset got every part once, all under one reference,
  // and the ledger's id (the first part's) is the one the SMSC gave it.
  const Accepted a = readRecord(record);
  ASSERT_EQ(a.parts.size(), static_cast<std::size_t>(kMessages));
  for (const SendResult& r : delivered) {
    const Message& m = messages[r.ticket];
    const int segments = 2 + static_cast<int>(r.ticket) % 4;
    const auto& parts = a.parts.at(m.recipient);
    EXPECT_EQ(parts.size(), static_cast<std::size_t>(segments)) << m.recipient;
    EXPECT_EQ(a.references.at(m.recipient).size(), 1u) << m.recipient;
    EXPECT_EQ(parts.at(1), r.provider_message_id);
  }
  // Each fault's reason names its segment and what the SMSC held by then.
  for (const std::string& reason : fault_reasons) {
    EXPECT_EQ(reason.rfind("submit_sm_resp ESME_RSYSERR (segment ", 0), 0u) << reason;
    EXPECT_NE(reason.find(" accepted, id"), std::string::npos) << reason;
  }
  EXPECT_GE(sink->stats().partial_faults, static_cast<std::uint64_t>(kMessages));
}

// A permanent refusal of segment 3 of 3: the message fails for good, its
// reason names segments 1 and 2 with their ids, no segment follows, and the
// receipts of the parts that went are handed out like any other (the
// daemon records receipts for ids no sent row has).
TEST(SmppWholeMessage, ARefusedLastSegmentNamesThePartsThatWentAndTheirReceiptsArrive) {
  const std::string record = ::testing::TempDir() + "smpp_whole_refused.tsv";
  auto o = smscOptions(record);
  o.segment_fault_rate = 1;
  o.segment_fault_part = 3;
  o.segment_fault_status = 0x0B;  // ESME_RINVDSTADR: permanent
  fake::FakeSmsc smsc(o);
  auto so = sinkOptions(smsc.start());
  so.submit.receipts = smpp::ReceiptRequest::kAll;
  auto sink = makeSmppSink(so);
  ASSERT_TRUE(sink->submit(msg("m1", "4915100001", text(3)), 1));
  std::vector<SendResult> results;
  std::vector<DeliveryReceipt> receipts;
  ASSERT_TRUE(driveUntil(
      *sink, [&] { return results.size() == 1 && receipts.size() == 2; }, results, receipts));
  EXPECT_EQ(results[0].outcome, SendOutcome::kPermanent);
  const Accepted a = readRecord(record);
  const auto& parts = a.parts.at("4915100001");
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(results[0].reason, "submit_sm_resp ESME_RINVDSTADR (segment 3/3); segments 1,2 of 3 accepted, ids " +
                                   parts.at(1) + "," + parts.at(2));
  EXPECT_EQ(receipts[0].provider_message_id + receipts[1].provider_message_id == parts.at(1) + parts.at(2) ||
                receipts[1].provider_message_id + receipts[0].provider_message_id == parts.at(1) + parts.at(2),
            true);
  const auto c = concat(smsc);
  EXPECT_EQ(c["orphan_parts"], 2);  // SMPP cannot take them back: the ledger row names them
  EXPECT_EQ(c["parts_out_of_turn"], 0);
}

// Segment 2 of 3 fails every time: the worker's retry decision gives up
// after its attempts, and the reason it writes to the ledger row names the
// part that reached the handset, with its id. Segment 1 went once, segment
// 3 never.
TEST(SmppWholeMessage, AMessageAbandonedAfterItsRetriesNamesThePartsThatWent) {
  const std::string record = ::testing::TempDir() + "smpp_whole_abandoned.tsv";
  auto o = smscOptions(record);
  o.segment_fault_rate = 1;
  o.segment_fault_part = 2;
  o.segment_fault_times = 0;
  fake::FakeSmsc smsc(o);
  auto sink = makeSmppSink(sinkOptions(smsc.start()));
  const Message m = msg("m1", "4915100003", text(3));
  RetryPolicy policy;
  policy.max_attempts = 3;
  AttemptHistory history;
  history.attempts = 0;
  RetryDecision d;
  std::vector<SendResult> results;
  std::vector<DeliveryReceipt> receipts;
  for (int attempt = 1; attempt <= 5; ++attempt) {
    results.clear();
    ASSERT_TRUE(sink->submit(m, static_cast<std::uint64_t>(attempt)));
    ASSERT_TRUE(driveUntil(
        *sink, [&] { return results.size() == 1; }, results, receipts));
    ++history.attempts;
    history.faults += results[0].outcome == SendOutcome::kFault ? 1 : 0;
    d = decideRetry(policy, results[0], history, 0.5);
    if (d.kind != RetryDecision::Kind::kRetry) break;
  }
  ASSERT_EQ(d.kind, RetryDecision::Kind::kFail);
  smsc.stop();
  const Accepted a = readRecord(record);
  const auto& parts = a.parts.at("4915100003");
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(d.reason,
            "gave up after 3 attempts (3 failed); last: submit_sm_resp ESME_RSYSERR (segment 2/3); "
            "segment 1 of 3 accepted, id " +
                parts.at(1));
  const auto c = concat(smsc);
  EXPECT_EQ(c["segment_faults"], 3);
  EXPECT_EQ(c["orphan_parts"], 1);  // what the reason names
  EXPECT_EQ(c["duplicate_parts"], 0);
  EXPECT_EQ(c["parts_out_of_turn"], 0);
  std::ifstream in(record);
  std::string line;
  while (std::getline(in, line)) EXPECT_EQ(line.find("\t3/3\t"), std::string::npos) << line;
}

// The connection drops while segment 2 of 3 waits for its answer (accepted
// by the SMSC, the answer lost): a fault; the retry goes over the new bind,
// sends segments 2 and 3 only, under the first attempt's reference. Part 2
// reaches the SMSC twice under one reference (the handset keeps one), never
// under two.
TEST(SmppWholeMessage, ALostConnectionMidMessageResumesOnTheNewBindUnderTheSameReference) {
  const std::string record = ::testing::TempDir() + "smpp_whole_dropped.tsv";
  auto o = smscOptions(record);
  o.response_delay_ms = 300;
  fake::FakeSmsc smsc(o);
  auto sink = makeSmppSink(sinkOptions(smsc.start()));
  const Message m = msg("m1", "4915100002", text(3));
  ASSERT_TRUE(sink->submit(m, 1));
  std::vector<SendResult> results;
  std::vector<DeliveryReceipt> receipts;
  ASSERT_TRUE(driveUntil(
      *sink, [&] { return smsc.report()["accounts"]["pacer"]["submits"].get<int>() == 2; }, results, receipts));
  smsc.dropAll();
  ASSERT_TRUE(driveUntil(
      *sink, [&] { return results.size() == 1; }, results, receipts));
  EXPECT_EQ(results[0].outcome, SendOutcome::kFault);
  EXPECT_EQ(results[0].reason.rfind("connection lost", 0), 0u) << results[0].reason;
  EXPECT_NE(results[0].reason.find("(segment 2/3); segment 1 of 3 accepted, id "), std::string::npos)
      << results[0].reason;
  results.clear();
  ASSERT_TRUE(sink->submit(m, 2));
  ASSERT_TRUE(driveUntil(
      *sink, [&] { return results.size() == 1; }, results, receipts));
  EXPECT_EQ(results[0].outcome, SendOutcome::kDelivered) << results[0].reason;
  EXPECT_GE(sink->stats().connects, 2u);
  smsc.stop();
  const auto c = concat(smsc);
  EXPECT_EQ(c["complete"], 1);
  EXPECT_EQ(c["orphan_parts"], 0) << c.dump();
  EXPECT_EQ(c["parts_out_of_turn"], 0) << c.dump();
  EXPECT_LE(c["duplicate_parts"], 1) << c.dump();
  const Accepted a = readRecord(record);
  EXPECT_EQ(a.references.at("4915100002").size(), 1u);
  EXPECT_EQ(a.parts.at("4915100002").at(1), results[0].provider_message_id);
}

}  // namespace
}  // namespace pacer::sink
