// The SMPP sink's carrier settings and session figures against
// pacer-fake-smsc on loopback (label "integration"): the figures pacerd's
// /metrics renders, from the sink's real stats after a known number of
// binds and dropped connections; the measured answer time; receipts whose
// ids the SMSC writes in decimal meeting their hex submit_sm_resp ids.
// Waits are bounded loops on the sink's own wait(), never fixed sleeps.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <set>
#include <sstream>

#include "pacer/admin/metrics.h"
#include "pacer/fakes/fake_smsc.h"
#include "pacer/sinks/smpp_sink.h"

namespace pacer::sink {
namespace {

using namespace std::chrono_literals;

Message msg(std::string id, std::string text = "Hello") {
  Message m;
  m.id = std::move(id);
  m.campaign = "c1";
  m.recipient = "+4915112345678";
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
  o.response_timeout = 2s;
  o.reconnect_backoff_min = 20ms;
  o.reconnect_backoff_max = 100ms;
  o.seed = 7;
  return o;
}

// Drives the sink until `done()` or 10 s. Returns done().
bool driveUntil(SmppSinkInterface& sink, const std::function<bool()>& done, std::vector<SendResult>& results,
                std::vector<DeliveryReceipt>& receipts) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    sink.poll(results);
    sink.pollReceipts(receipts);
    sink.wait(20ms);
  }
  return done();
}

// The value of "<series> <value>" in Prometheus text; NaN when absent.
double sample(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  return std::nan("");
}

std::string rendered(const SmppSinkInterface& sink, std::size_t window, std::size_t binds) {
  admin::MetricsSnapshot s;
  s.smpp.push_back(admin::SmppSinkMetrics{"providers.sms.sink", sink.stats(), window, binds});
  return admin::renderMetrics(s);
}

TEST(SmppCarrierIntegration, MetricsCountBindsAndDroppedConnections) {
  fake::FakeSmsc smsc(smscOptions());
  const int port = smsc.start();
  SmppSinkOptions o = sinkOptions(port);
  o.binds = 2;
  o.window = 7;
  auto sink = makeSmppSink(o);
  std::vector<SendResult> results;
  std::vector<DeliveryReceipt> receipts;
  ASSERT_TRUE(driveUntil(
      *sink, [&] { return sink->stats().binds_up == 2; }, results, receipts));
  const std::string l = R"({sink="providers.sms.sink"})";
  std::string text = rendered(*sink, o.window, o.binds);
  EXPECT_EQ(sample(text, "pacer_smpp_binds_up" + l), 2);
  EXPECT_EQ(sample(text, "pacer_smpp_connects_total" + l), 2);
  EXPECT_EQ(sample(text, "pacer_smpp_disconnects_total" + l), 0);
  EXPECT_EQ(sample(text, "pacer_smpp_window_size" + l), 14);

  for (int round = 1; round <= 2; ++round) {
    smsc.dropAll();
    ASSERT_TRUE(driveUntil(
        *sink, [&] { return sink->stats().disconnects == 2u * round && sink->stats().binds_up == 2; }, results,
        receipts));
  }
  text = rendered(*sink, o.window, o.binds);
  EXPECT_EQ(sample(text, "pacer_smpp_binds_up" + l), 2);
  EXPECT_EQ(sample(text, "pacer_smpp_connects_total" + l), 6);  // 2 binds + 2 x 2 rebinds
  EXPECT_EQ(sample(text, "pacer_smpp_disconnects_total" + l), 4);
  EXPECT_EQ(sample(text, "pacer_smpp_bind_failures_total" + l), 0);
  EXPECT_EQ(sample(text, "pacer_smpp_protocol_errors_total" + l), 0);
  EXPECT_EQ(sample(text, "pacer_smpp_window_in_use" + l), 0);
}

TEST(SmppCarrierIntegration, RefusedBindsAreCounted) {
  fake::FakeSmsc smsc(smscOptions());
  SmppSinkOptions o = sinkOptions(smsc.start());
  o.password = "wrong";
  auto sink = makeSmppSink(o);
  std::vector<SendResult> results;
  std::vector<DeliveryReceipt> receipts;
  ASSERT_TRUE(driveUntil(
      *sink, [&] { return sink->stats().bind_failures >= 2; }, results, receipts));
  const std::string text = rendered(*sink, o.window, o.binds);
  EXPECT_GE(sample(text, R"(pacer_smpp_bind_failures_total{sink="providers.sms.sink"})"), 2);
  EXPECT_EQ(sample(text, R"(pacer_smpp_binds_up{sink="providers.sms.sink"})"), 0);
}

// A slow SMSC: every submit_sm answered 60 ms late. The window fills (the
// figure counts what is out), the latency is measured, and the capacity is
// window / latency.
TEST(SmppCarrierIntegration, ASlowSmscShowsItsLatencyAndAFullWindow) {
  auto so = smscOptions();
  so.response_delay_ms = 60;
  fake::FakeSmsc smsc(so);
  SmppSinkOptions o = sinkOptions(smsc.start());
  o.window = 4;
  auto sink = makeSmppSink(o);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(sink->submit(msg("m" + std::to_string(i)), i + 1));
  std::vector<SendResult> results;
  std::vector<DeliveryReceipt> receipts;
  ASSERT_TRUE(driveUntil(
      *sink, [&] { return sink->stats().window_in_use == 4; }, results, receipts));
  ASSERT_TRUE(driveUntil(
      *sink, [&] { return results.size() == 4; }, results, receipts));
  const SmppSinkStats st = sink->stats();
  EXPECT_EQ(st.window_in_use, 0u);
  EXPECT_GE(st.submit_latency_ms, 60.0);
  EXPECT_LT(st.submit_latency_ms, 2000.0);  // not the response timeout
  const std::string text = rendered(*sink, o.window, o.binds);
  EXPECT_DOUBLE_EQ(sample(text, R"(pacer_smpp_submit_latency_seconds{sink="providers.sms.sink"})"),
                   st.submit_latency_ms / 1000);
  EXPECT_DOUBLE_EQ(sample(text, R"(pacer_smpp_window_capacity{sink="providers.sms.sink"})"),
                   4 * 1000.0 / st.submit_latency_ms);
}

// submit_sm_resp "000000001a", receipt "id:26": with receipt_ids
// hex-decimal the receipt lands on the id the ledger holds; as-is it does not.
TEST(SmppCarrierIntegration, DecimalReceiptIdsMeetTheirHexSubmitIds) {
  auto so = smscOptions();
  so.receipt_ids_decimal = true;
  so.receipt_delay_ms = 100;  // after the submit_sm_resp, as from an SMSC (the fake sends them first otherwise)
  fake::FakeSmsc smsc(so);
  const int port = smsc.start();
  for (const smpp::IdConvention c : {smpp::IdConvention::kHexThenDecimal, smpp::IdConvention::kAsIs}) {
    SmppSinkOptions o = sinkOptions(port);
    o.receipt_ids = c;
    auto sink = makeSmppSink(o);
    std::vector<SendResult> results;
    std::vector<DeliveryReceipt> receipts;
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(sink->submit(msg("m" + std::to_string(i)), i + 1));
    ASSERT_TRUE(driveUntil(
        *sink, [&] { return results.size() == 10 && receipts.size() == 10; }, results, receipts));
    std::set<std::string> sent, received;
    for (const SendResult& r : results) sent.insert(r.provider_message_id);
    for (const DeliveryReceipt& r : receipts) received.insert(r.provider_message_id);
    if (c == smpp::IdConvention::kHexThenDecimal)
      EXPECT_EQ(received, sent);
    else
      EXPECT_NE(received, sent);
    sink->receiptsRecorded(receipts);
  }
}

}  // namespace
}  // namespace pacer::sink
