// Snapshot -> Prometheus text, the rate window, and the Grafana dashboard's
// queries against the metrics pacerd renders.
#include "pacer/admin/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

namespace pacer::admin {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

MonoTime at(double s) { return MonoTime{std::chrono::duration_cast<Nanos>(std::chrono::duration<double>(s))}; }

// A snapshot with one of everything (quota and Redis included).
MetricsSnapshot full() {
  SnapshotBuilder b("1.2.3", "http", "redis", 1700000000.0);
  WorkerStats w;
  w.read = 1000;
  w.skipped_finished = 7;
  w.sent = 900;
  w.rejected = 5;  // 3 of them promo's, 2 without a campaign
  w.ledger_rows = 905;
  w.ledger_writes = 12;
  w.ledger_errors = 1;
  w.pending_rows = 40;
  w.oldest_pending_row = at(9.5);
  w.unrecorded = 60;
  w.quota.batches = 33;
  w.cap_round_trips = 21;
  w.cap_faults = 2;
  CampaignStats promo;
  promo.id = "promo";
  promo.provider = "sms";
  promo.limit = RateLimit{250, 10};
  promo.sent = 900;
  promo.rejected = 3;
  promo.invalid_tokens = 6;
  promo.suppressed = 11;
  promo.deferred = 4;
  promo.quiet_waiting = 9;
  promo.priority_class = "bulk";
  promo.queued = 5;
  promo.retrying = 2;
  promo.to_park = 1;
  promo.parked_waiting = 100;
  promo.cap_waiting = 3;
  promo.in_flight = 8;
  CampaignStats odd;
  odd.id = "we\"ird\\id";
  odd.in_flight = 1;
  CampaignStats idle;  // known, never had a message here: left out
  idle.id = "idle";
  idle.queued = 0;
  idle.priority_class = "transactional";
  idle.limit = RateLimit{5, 1};
  ProviderStats sms;
  sms.id = "sms";
  sms.ceiling = 400;
  sms.effective = 200;
  sms.paused = true;
  sms.throttled = 4;
  sms.degraded = true;
  sms.recipient_throttled = 7;
  sms.dead_token_guard = true;
  sms.dead_token_ratio = 0.75;
  sms.dead_token_trips = 2;
  sms.dead_tokens_held = 40;
  RedisQuotaStats redis;
  redis.round_trips = 35;
  redis.timeouts = 2;
  redis.round_trip_buckets[3] = 30;  // <= 1 ms
  redis.round_trip_buckets[kRedisRoundTripBounds.size()] = 3;  // > 0.5 s
  redis.round_trip_count = 33;
  redis.round_trip_seconds = 1.6;
  std::vector<PartitionMetrics> parts{{"messages", 0, 100, 130}, {"messages", 1, -1, 50}};
  return b.build(at(10), w, {promo, odd, idle}, {sms}, &redis, parts, true, false);
}

// The value of the line "<series> <value>", or NaN when absent.
double sample(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  return std::nan("");
}

TEST(RenderMetricsTest, CampaignCountersAndGaugesCarryCampaignAndProviderLabels) {
  const std::string text = renderMetrics(full());
  EXPECT_THAT(text, HasSubstr("# TYPE pacer_campaign_sent_total counter"));
  EXPECT_EQ(sample(text, R"(pacer_campaign_sent_total{campaign="promo",provider="sms"})"), 900);
  EXPECT_EQ(sample(text, R"(pacer_campaign_rejected_total{campaign="promo",provider="sms"})"), 3);
  EXPECT_EQ(sample(text, R"(pacer_campaign_invalid_tokens_total{campaign="promo",provider="sms"})"), 6);
  EXPECT_EQ(sample(text, R"(pacer_campaign_send_rate{campaign="promo",provider="sms"})"), 250);
  // backlog = queued + retrying + to_park + parked_waiting + quiet_waiting
  EXPECT_EQ(sample(text, R"(pacer_campaign_backlog{campaign="promo",provider="sms"})"), 117);
  EXPECT_EQ(sample(text, R"(pacer_campaign_in_flight{campaign="promo",provider="sms"})"), 8);
  EXPECT_EQ(sample(text, "pacer_records_rejected_without_campaign_total"), 2);
}

// The console's held figure leaves out the parked-row estimate, which every
// worker finding the same unclaimed rows makes again.
TEST(SnapshotBuilderTest, HeldInMemoryIsTheBacklogWithoutTheParkedEstimate) {
  const MetricsSnapshot s = full();
  const auto it = std::find_if(s.campaigns.begin(), s.campaigns.end(), [](const auto& c) { return c.id == "promo"; });
  ASSERT_NE(it, s.campaigns.end());
  EXPECT_EQ(it->in_memory, 5u + 2 + 1 + 9 + 3) << "queued + retrying + to_park + quiet_waiting + cap_waiting";
  EXPECT_EQ(it->retrying, 2u);
  EXPECT_EQ(it->cap_waiting, 3u);
  EXPECT_EQ(it->backlog, 117u) << "the metric is as before";
}

TEST(RenderMetricsTest, PushAnswerScopeAndTheDeadTokenGuardPerProvider) {
  const std::string text = renderMetrics(full());
  EXPECT_THAT(text, HasSubstr("# TYPE pacer_provider_recipient_throttled_total counter"));
  EXPECT_THAT(text, HasSubstr("# TYPE pacer_provider_dead_token_guard gauge"));
  EXPECT_THAT(text, HasSubstr("# TYPE pacer_provider_dead_token_ratio gauge"));
  EXPECT_THAT(text, HasSubstr("# TYPE pacer_provider_dead_token_guard_trips_total counter"));
  EXPECT_THAT(text, HasSubstr("# TYPE pacer_provider_dead_tokens_held_total counter"));
  EXPECT_EQ(sample(text, R"(pacer_provider_recipient_throttled_total{provider="sms"})"), 7);
  EXPECT_EQ(sample(text, R"(pacer_provider_throttled_total{provider="sms"})"), 4) << "apart from the provider's";
  EXPECT_EQ(sample(text, R"(pacer_provider_dead_token_guard{provider="sms"})"), 1);
  EXPECT_EQ(sample(text, R"(pacer_provider_dead_token_ratio{provider="sms"})"), 0.75);
  EXPECT_EQ(sample(text, R"(pacer_provider_dead_token_guard_trips_total{provider="sms"})"), 2);
  EXPECT_EQ(sample(text, R"(pacer_provider_dead_tokens_held_total{provider="sms"})"), 40);
}

TEST(RenderMetricsTest, RecipientRuleFiguresPerCampaign) {
  const std::string text = renderMetrics(full());
  EXPECT_THAT(text, HasSubstr("# TYPE pacer_campaign_suppressed_total counter"));
  EXPECT_THAT(text, HasSubstr("# TYPE pacer_campaign_deferred_total counter"));
  EXPECT_THAT(text, HasSubstr("# TYPE pacer_campaign_quiet_waiting gauge"));
  EXPECT_EQ(sample(text, R"(pacer_campaign_suppressed_total{campaign="promo",provider="sms"})"), 11);
  EXPECT_EQ(sample(text, R"(pacer_campaign_deferred_total{campaign="promo",provider="sms"})"), 4);
  EXPECT_EQ(sample(text, R"(pacer_campaign_quiet_waiting{campaign="promo",provider="sms"})"), 9);
  EXPECT_EQ(sample(text, R"(pacer_campaign_suppressed_total{campaign="we\"ird\\id",provider=""})"), 0);
  // The worker's cap store: round trips per message is this over pacer_records_read_total.
  EXPECT_THAT(text, HasSubstr("# TYPE pacer_cap_round_trips_total counter"));
  EXPECT_EQ(sample(text, "pacer_cap_round_trips_total"), 21);
  EXPECT_EQ(sample(text, "pacer_cap_faults_total"), 2);
}

// Every class a known campaign is in has a series, idle ones included (at 0);
// a campaign without a class counts in "default".
TEST(RenderMetricsTest, ClassQueuedSumsQueuedByPriorityClass) {
  const std::string text = renderMetrics(full());
  EXPECT_THAT(text, HasSubstr("# TYPE pacer_class_queued gauge"));
  EXPECT_EQ(sample(text, R"(pacer_class_queued{class="bulk"})"), 5);
  EXPECT_EQ(sample(text, R"(pacer_class_queued{class="transactional"})"), 0);
  EXPECT_EQ(sample(text, R"(pacer_class_queued{class="default"})"), 0);

  SnapshotBuilder b("1", "null", "local", 0);
  CampaignStats a, c, e;
  a.id = "a", a.priority_class = "bulk", a.queued = 7;
  c.id = "c", c.priority_class = "bulk", c.queued = 5;
  e.id = "e", e.queued = 2;
  const MetricsSnapshot s = b.build(at(1), WorkerStats{}, {a, c, e}, {}, nullptr, {}, true, false);
  using Pairs = std::vector<std::pair<std::string, std::uint64_t>>;
  EXPECT_EQ(s.class_queued, (Pairs{{"bulk", 12}, {"default", 2}}));
}

TEST(RenderMetricsTest, AnUnlimitedRateIsLeftOutNotZero) {
  const std::string text = renderMetrics(full());
  EXPECT_THAT(text, Not(HasSubstr(R"(pacer_campaign_send_rate{campaign="we\"ird\\id")")));
  EXPECT_EQ(sample(text, R"(pacer_campaign_sent_total{campaign="we\"ird\\id",provider=""})"), 0)
      << "ids are escaped in label values:\n"
      << text;
}

TEST(SnapshotBuilderTest, OnlyCampaignsWithMessagesHereAreInAndThenStay) {
  EXPECT_THAT(renderMetrics(full()), Not(HasSubstr("campaign=\"idle\"")));
  SnapshotBuilder b("1", "null", "local", 0);
  CampaignStats c;
  c.id = "c";
  EXPECT_TRUE(b.build(at(1), WorkerStats{}, {c}, {}, nullptr, {}, true, false).campaigns.empty());
  c.queued = 3;
  EXPECT_EQ(b.build(at(2), WorkerStats{}, {c}, {}, nullptr, {}, true, false).campaigns.size(), 1u);
  c.queued = 0;
  EXPECT_EQ(b.build(at(3), WorkerStats{}, {c}, {}, nullptr, {}, true, false).campaigns.size(), 1u);
}

TEST(RenderMetricsTest, ProvidersLedgerOffsetsAndProcess) {
  const std::string text = renderMetrics(full());
  EXPECT_EQ(sample(text, R"(pacer_provider_send_rate{provider="sms"})"), 400);
  EXPECT_EQ(sample(text, R"(pacer_provider_effective_rate{provider="sms"})"), 200);
  EXPECT_EQ(sample(text, R"(pacer_provider_paused{provider="sms"})"), 1);
  EXPECT_EQ(sample(text, R"(pacer_provider_throttled_total{provider="sms"})"), 4);
  EXPECT_EQ(sample(text, R"(pacer_provider_quota_degraded{provider="sms"})"), 1);
  EXPECT_EQ(sample(text, "pacer_ledger_rows_written_total"), 905);
  EXPECT_EQ(sample(text, "pacer_ledger_errors_total"), 1);
  EXPECT_EQ(sample(text, "pacer_ledger_pending_rows"), 40);
  EXPECT_EQ(sample(text, "pacer_ledger_oldest_pending_seconds"), 0.5);
  EXPECT_EQ(sample(text, R"(pacer_kafka_offset_lag{topic="messages",partition="0"})"), 30);
  EXPECT_TRUE(std::isnan(sample(text, R"(pacer_kafka_offset_lag{topic="messages",partition="1"})")))
      << "no committed offset known: no lag series";
  EXPECT_EQ(sample(text, "pacer_up"), 1);
  EXPECT_EQ(sample(text, R"(pacer_build_info{version="1.2.3",sink="http",quota="redis"})"), 1);
}

TEST(RenderMetricsTest, RedisRoundTripsAreACumulativeHistogram) {
  const std::string text = renderMetrics(full());
  EXPECT_THAT(text, HasSubstr("# TYPE pacer_redis_round_trip_seconds histogram"));
  EXPECT_EQ(sample(text, R"(pacer_redis_round_trip_seconds_bucket{le="0.0005"})"), 0);
  EXPECT_EQ(sample(text, R"(pacer_redis_round_trip_seconds_bucket{le="0.001"})"), 30);
  EXPECT_EQ(sample(text, R"(pacer_redis_round_trip_seconds_bucket{le="0.5"})"), 30);
  EXPECT_EQ(sample(text, R"(pacer_redis_round_trip_seconds_bucket{le="+Inf"})"), 33);
  EXPECT_EQ(sample(text, "pacer_redis_round_trip_seconds_count"), 33);
  EXPECT_EQ(sample(text, "pacer_redis_round_trips_total"), 35);
  EXPECT_EQ(sample(text, R"(pacer_redis_errors_total{kind="timeout"})"), 2);
  EXPECT_EQ(sample(text, "pacer_quota_lease_batches_total"), 33);
}

TEST(RenderMetricsTest, WithoutAQuotaThereAreNoQuotaOrRedisFamilies) {
  SnapshotBuilder b("1", "null", "local", 0);
  const std::string text = renderMetrics(b.build(at(1), WorkerStats{}, {}, {}, nullptr, {}, false, false));
  EXPECT_THAT(text, Not(HasSubstr("pacer_quota_")));
  EXPECT_THAT(text, Not(HasSubstr("pacer_redis_")));
  EXPECT_THAT(text, Not(HasSubstr("pacer_campaign_")));  // no HELP/TYPE without a series
  EXPECT_EQ(sample(text, "pacer_up"), 1);
}

TEST(RenderMetricsTest, SmppSessionFiguresPerSink) {
  MetricsSnapshot s;
  sink::SmppSinkStats st;
  st.binds_up = 2;
  st.connects = 5;
  st.disconnects = 3;
  st.bind_failures = 1;
  st.protocol_errors = 4;
  st.submit_sm = 1234;
  st.window_in_use = 17;
  st.window_size = 20;
  st.submit_latency_ms = 100;
  s.smpp.push_back(SmppSinkMetrics{"providers.sms.sink", st, 10, 2});
  s.smpp.push_back(SmppSinkMetrics{"sink", sink::SmppSinkStats{}, 10, 1});  // nothing answered yet
  const std::string text = renderMetrics(s);
  const std::string l = R"({sink="providers.sms.sink"})";
  EXPECT_EQ(sample(text, "pacer_smpp_binds_up" + l), 2);
  EXPECT_EQ(sample(text, "pacer_smpp_binds_configured" + l), 2);
  EXPECT_EQ(sample(text, "pacer_smpp_connects_total" + l), 5);
  EXPECT_EQ(sample(text, "pacer_smpp_disconnects_total" + l), 3);
  EXPECT_EQ(sample(text, "pacer_smpp_bind_failures_total" + l), 1);
  EXPECT_EQ(sample(text, "pacer_smpp_protocol_errors_total" + l), 4);
  EXPECT_EQ(sample(text, "pacer_smpp_submit_sm_total" + l), 1234);
  EXPECT_EQ(sample(text, "pacer_smpp_window_in_use" + l), 17);
  EXPECT_EQ(sample(text, "pacer_smpp_window_size" + l), 20);
  EXPECT_DOUBLE_EQ(sample(text, "pacer_smpp_submit_latency_seconds" + l), 0.1);
  EXPECT_DOUBLE_EQ(sample(text, "pacer_smpp_window_capacity" + l), 200);  // 10 x 2 binds / 100 ms
  EXPECT_EQ(sample(text, R"(pacer_smpp_binds_up{sink="sink"})"), 0);
  EXPECT_THAT(text, Not(HasSubstr(R"(pacer_smpp_window_capacity{sink="sink"})")));
  EXPECT_THAT(renderMetrics(MetricsSnapshot{}), Not(HasSubstr("pacer_smpp_")));
}

TEST(SnapshotBuilderTest, AchievedRateIsTheSendRateOverTheLastTenSeconds) {
  SnapshotBuilder b("1", "null", "local", 0);
  CampaignStats c;
  c.id = "c";
  c.queued = 1;
  double last = 0;
  // 100 msg/s for 20 s, then nothing: a quarter-second apart, like the loop.
  for (int i = 0; i <= 160; ++i) {
    c.sent = static_cast<std::uint64_t>(std::min(i, 80) * 25);
    last = b.build(at(i * 0.25), WorkerStats{}, {c}, {}, nullptr, {}, true, false).campaigns[0].achieved_rate;
    if (i >= 41 && i <= 80) {
      EXPECT_NEAR(last, 100, 1e-9) << "at " << i * 0.25 << " s";
    }
  }
  EXPECT_EQ(last, 0) << "ten seconds without a send";
}

TEST(RateWindowTest, FewerThanTwoSamplesIsZeroAndASlowCallerStillGetsARate) {
  RateWindow w;
  EXPECT_EQ(w.rate(), 0);
  w.add(at(0), 0);
  EXPECT_EQ(w.rate(), 0);
  w.add(at(30), 300);  // 30 s later: older than the window, still used
  EXPECT_DOUBLE_EQ(w.rate(), 10);
}

TEST(SnapshotBuilderTest, ReadinessCountsDegradedProviders) {
  SnapshotBuilder b("1", "null", "redis", 0);
  ProviderStats a, c;
  a.id = "a";
  a.degraded = true;
  c.id = "c";
  WorkerStats w;
  w.store_failing = true;
  const Readiness r = b.build(at(1), w, {}, {a, c}, nullptr, {}, true, false).readiness;
  EXPECT_TRUE(r.joined);
  EXPECT_TRUE(r.store_failing);
  EXPECT_TRUE(r.quota);
  EXPECT_EQ(r.providers, 2u);
  EXPECT_EQ(r.degraded_providers, 1u);
}

// Every pacer_* name a dashboard query uses is one pacerd renders, and the
// datasource is a template variable.
TEST(GrafanaDashboardTest, IsValidJsonAndQueriesOnlyMetricsPacerdRenders) {
  std::ifstream f(std::string(PACER_SOURCE_DIR) + "/config/grafana/pacer-dashboard.json");
  ASSERT_TRUE(f) << "config/grafana/pacer-dashboard.json missing";
  const nlohmann::json d = nlohmann::json::parse(f);  // throws (fails) on invalid JSON
  bool datasource_variable = false;
  for (const auto& v : d.at("templating").at("list"))
    if (v.value("type", "") == "datasource" && v.value("query", "") == "prometheus") datasource_variable = true;
  EXPECT_TRUE(datasource_variable);

  std::set<std::string> rendered;
  const std::string text = renderMetrics(full());
  const std::regex name(R"(^(pacer_[a-z0-9_]+))");
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, name)) rendered.insert(m[1]);
  }
  const std::regex used(R"(pacer_[a-z0-9_]+)");
  int queries = 0;
  std::set<std::string> titles;
  for (const auto& panel : d.at("panels")) {
    if (panel.value("type", "") == "row") continue;
    titles.insert(panel.at("title").get<std::string>());
    EXPECT_EQ(panel.at("datasource").at("uid"), "${datasource}") << panel.at("title");
    for (const auto& t : panel.at("targets")) {
      const std::string expr = t.at("expr");
      ++queries;
      for (auto it = std::sregex_iterator(expr.begin(), expr.end(), used); it != std::sregex_iterator(); ++it)
        EXPECT_TRUE(rendered.contains(it->str())) << it->str() << " in \"" << expr << "\" is not a metric pacerd renders";
    }
  }
  EXPECT_GE(queries, 10);
  EXPECT_GE(titles.size(), 9u);
}

}  // namespace
}  // namespace pacer::admin
