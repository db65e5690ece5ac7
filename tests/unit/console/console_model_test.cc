// The console's pure half: what limits a campaign, the 15-minute series, the
// state document's scopes, event framing, paths and control bodies.
#include "pacer/console/console_model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

namespace pacer::console {
namespace {

using ::testing::HasSubstr;

CampaignView campaign(std::string id, std::optional<double> rate, std::optional<double> achieved,
                      std::optional<std::int64_t> total = 1000, std::int64_t sent = 100) {
  CampaignView c;
  c.row.id = id;
  c.row.state = "active";
  c.row.limit.rate = rate;
  c.row.provider = "sms";
  c.row.total = total;
  c.top.id = id;
  c.top.state = "active";
  c.top.send_rate = rate;
  c.top.total = total;
  c.top.sent = sent;
  c.top.achieved = achieved;
  return c;
}

ProviderView provider(std::optional<double> rate) {
  ProviderView p;
  p.row.id = "sms";
  p.row.limit.rate = rate;
  return p;
}

TEST(LimitedByTest, SaysWhatHoldsACampaignBack) {
  ProviderView p = provider(400);
  CampaignView c = campaign("c", 100, 98);
  EXPECT_EQ(limitedBy(c, &p, 98).code, "campaign_rate");
  c.top.achieved = 50;
  EXPECT_EQ(limitedBy(c, &p, 395).code, "provider_rate") << "the provider's 400/s is used up by its campaigns";
  EXPECT_EQ(limitedBy(c, &p, 200).code, "below_limits");
  p.shared_effective = 200;
  EXPECT_EQ(limitedBy(c, &p, 195).code, "provider_rate");
  EXPECT_THAT(limitedBy(c, &p, 195).text, HasSubstr("lowered after throttling"));
  p.shared_paused_s = 0.5;
  EXPECT_EQ(limitedBy(c, &p, 0).code, "provider_paused");
  c.row.state = "paused";
  EXPECT_EQ(limitedBy(c, &p, 0).code, "paused");
}

TEST(LimitedByTest, DoneNoInputUnknownAndARateOfZero) {
  CampaignView done = campaign("c", 100, 0, 100, 100);
  EXPECT_EQ(limitedBy(done, nullptr, 0).code, "done");
  CampaignView idle = campaign("c", 100, 0, std::nullopt);
  EXPECT_EQ(limitedBy(idle, nullptr, 0).code, "no_input") << "total unknown and nothing parked";
  CampaignView fresh = campaign("c", 100, std::nullopt);
  EXPECT_EQ(limitedBy(fresh, nullptr, 0).code, "unknown");
  CampaignView zero = campaign("c", 0, 0);
  EXPECT_EQ(limitedBy(zero, nullptr, 0).code, "campaign_rate");
  ProviderView paused_here = provider(400);
  paused_here.worker = ProviderView::Worker{};
  paused_here.worker->paused = true;
  EXPECT_EQ(limitedBy(campaign("c", 100, 10), &paused_here, 10).code, "provider_paused");
}

// The facts integration.console_truth makes true against a real pacerd: a
// provider answering only 500s opens its breaker while campaigns still have
// messages and send at a fraction of their rate.
TEST(LimitedByTest, AnOpenBreakerIsNamedBeforeTheRates) {
  ProviderView failing = provider(200);
  failing.worker = ProviderView::Worker{};
  failing.worker->circuit_open = true;
  failing.worker->server_errors = 4200;
  CampaignView blast = campaign("blast", 200, 3.5, 3000, 0);
  blast.top.failed = 40;
  const LimitedBy why = limitedBy(blast, &failing, 3.5);
  EXPECT_EQ(why.code, "provider_breaker");
  EXPECT_THAT(why.text, HasSubstr("sms"));
  EXPECT_THAT(why.text, HasSubstr("circuit breaker is open"));
  failing.worker->paused = true;  // the breaker pauses its provider: the breaker is named, not a 429/503
  EXPECT_EQ(limitedBy(blast, &failing, 0).code, "provider_breaker");
  blast.row.state = "paused";
  EXPECT_EQ(limitedBy(blast, &failing, 0).code, "paused");
  failing.worker->paused = false;
  failing.worker->circuit_open = false;
  blast.row.state = "active";
  EXPECT_EQ(limitedBy(blast, &failing, 3.5).code, "below_limits") << "closed again: back to the rates";
}

// Seen with two workers: each counted 9,000+ held (their estimates
// of the same unclaimed parked rows included) while the ledger says 7,519
// are left, all of them parked.
TEST(HeldTest, TwoWorkersEachHoldingMoreThanIsLeftNeverShowMoreThanIsLeft) {
  CampaignView base = campaign("promo", 100, 20, 30000, 22481);  // 7,519 left
  base.top.parked = 7519;
  CampaignView a = base, b = base;
  // Read again after a rebalance: messages the other worker had already parked.
  a.worker = CampaignView::Worker{.backlog = 9834, .in_memory = 2315};
  b.worker = CampaignView::Worker{.backlog = 9384, .in_memory = 1865};
  const Json ja = stateJson("", 0, 5, {a}, {}, Sources{})["campaigns"][0];
  const Json jb = stateJson("", 0, 5, {b}, {}, Sources{})["campaigns"][0];
  const std::int64_t left = ja["backlog"].get<std::int64_t>();
  ASSERT_EQ(left, 7519);
  const auto held_a = ja["worker"]["backlog"].get<std::int64_t>(), held_b = jb["worker"]["backlog"].get<std::int64_t>();
  EXPECT_LE(held_a, left);
  EXPECT_LE(held_b, left);
  EXPECT_LE(held_a + held_b + ja["parked"].get<std::int64_t>(), left) << "held in memory plus parked, counted once";
  EXPECT_TRUE(ja["worker"]["backlog_capped"].get<bool>());
  EXPECT_EQ(ja["worker"]["backlog_reported"], 9834) << "the worker's own count stays visible beside it";
}

TEST(HeldTest, HeldInMemoryIsShownAsIsWhileItFitsWhatIsLeft) {
  CampaignView c = campaign("promo", 100, 20, 20000, 10000);  // 10,000 left
  c.top.parked = 4000;
  c.worker = CampaignView::Worker{.backlog = 9000, .in_memory = 5000};
  EXPECT_EQ(heldOf(c).shown, 5000u);
  EXPECT_FALSE(heldOf(c).capped);
  c.worker->in_memory = 6500;  // more than the 6,000 left beside the parked rows
  EXPECT_EQ(heldOf(c).shown, 6000u);
  EXPECT_TRUE(heldOf(c).capped);
  CampaignView unknown_total = campaign("open", 100, 20, std::nullopt, 10000);
  unknown_total.worker = CampaignView::Worker{};
  unknown_total.worker->in_memory = 6500;  // nothing to cap by: the ledger does not know what is left
  EXPECT_EQ(heldOf(unknown_total).shown, 6500u);
  EXPECT_EQ(heldOf(campaign("none", 100, 20)).shown, 0u) << "this worker has had none of its messages";
}

// The console's reasons from what a worker reports: the same function as top's.
TEST(LimitedByTest, RetriesAfter5xxQuietHoursAndCapsFromThisWorkersFigures) {
  ProviderView p = provider(400);
  p.worker = ProviderView::Worker{};
  p.server_errors_per_s = 4;
  CampaignView c = campaign("c", 100, 20);
  c.worker = CampaignView::Worker{};
  EXPECT_EQ(limitedBy(c, &p, 20).code, "below_limits");
  c.worker->cap_waiting = 12;
  EXPECT_EQ(limitedBy(c, &p, 20).code, "frequency_cap");
  c.worker->quiet_waiting = 300;
  EXPECT_EQ(limitedBy(c, &p, 20).code, "quiet_hours");
  c.worker->retrying = 25;
  c.cluster_retries = 720;
  const LimitedBy why = limitedBy(c, &p, 20);
  EXPECT_EQ(why.code, "server_errors");
  EXPECT_THAT(why.text, HasSubstr("720 retries in all")) << "every worker's, from Redis";
}

// Long waits are parked: the worker holds none of them, PostgreSQL has
// them (the same TopRow figures `pacerctl top` reads).
TEST(LimitedByTest, QuietHoursAndCapsFromTheParkedRowsWhenTheWorkerHoldsNone) {
  ProviderView p = provider(400);
  p.worker = ProviderView::Worker{};
  p.server_errors_per_s = 0;
  CampaignView c = campaign("c", 100, 0);
  c.worker = CampaignView::Worker{};
  c.top.parked = 700;
  c.top.parked_capped = 700;
  EXPECT_EQ(limitedBy(c, &p, 0).code, "frequency_cap");
  c.top.parked_capped = 0;
  c.top.parked_quiet = 700;
  EXPECT_EQ(limitedBy(c, &p, 0).code, "quiet_hours");
  c.worker.reset();
  EXPECT_EQ(limitedBy(c, &p, 0).code, "quiet_hours") << "a worker that never had one of its messages";
}

TEST(ProviderHealthTest, TheStateDocumentCarriesEachVerdict) {
  const auto health = [](const ProviderView& p) {
    return stateJson("", 0, 5, {}, {p}, Sources{})["providers"][0]["health"]["code"].get<std::string>();
  };
  ProviderView p = provider(400);
  EXPECT_EQ(health(p), "unknown") << "no worker has reported on it";
  p.worker = ProviderView::Worker{};
  p.server_errors_per_s = 0;
  EXPECT_EQ(health(p), "ok");
  p.server_errors_per_s = 2.5;
  EXPECT_EQ(health(p), "failing");
  p.shared_effective = 260;
  EXPECT_EQ(health(p), "throttled") << "its shared effective rate lowered below 400/s";
  p.worker->degraded = true;
  EXPECT_EQ(health(p), "degraded");
  p.worker->circuit_open = true;
  EXPECT_EQ(health(p), "breaker_open");
  p.cluster = ProviderView::Cluster{5, 70};
  EXPECT_THAT(stateJson("", 0, 5, {}, {p}, Sources{})["providers"][0]["health"]["text"].get<std::string>(),
              HasSubstr("5 429/503, 70 5xx in all"));
}

TEST(CountDeltasTest, AddsOnlyWhatGrewSinceTheLastAcknowledgedWrite) {
  CountDeltas d;
  const std::string f5xx = countField("provider_server_errors", "push:eu");
  EXPECT_EQ(f5xx, "provider_server_errors:push:eu") << "the kind ends at the first colon; the id is kept as is";
  CountFields now{{f5xx, 7}, {countField("campaign_retries", "c"), 0}};
  EXPECT_EQ(d.pending(now), (CountFields{{f5xx, 7}})) << "a counter at 0 adds nothing";
  d.acknowledge(now);
  EXPECT_TRUE(d.pending(now).empty());
  now[f5xx] = 10;
  EXPECT_EQ(d.pending(now), (CountFields{{f5xx, 3}}));
  // Not acknowledged (Redis did not answer): the next write sends the whole growth.
  now[f5xx] = 12;
  EXPECT_EQ(d.pending(now), (CountFields{{f5xx, 5}}));
  d.acknowledge(now);
  now[f5xx] = 2;  // not one process's counter any more: counted from 0
  EXPECT_EQ(d.pending(now), (CountFields{{f5xx, 2}}));
}

TEST(StateJsonTest, ClusterCountsFailedShareAndReceipts) {
  CampaignView c = campaign("c", 100, 50, 1000, 270);
  c.top.failed = 20;
  c.top.rejected = 5;
  c.top.invalid_token = 5;
  c.top.has_receipts = true;
  c.top.delivered = 200;
  c.top.undelivered = 10;
  c.top.receipts_pending = 60;
  c.cluster_retries = 720;
  ProviderView p = provider(400);
  p.cluster = ProviderView::Cluster{12, 345};
  const Json doc = stateJson("t", 1, 5, {c, campaign("fresh", 100, std::nullopt, 1000, 0)}, {p, provider(1)}, {});
  const Json& j = doc["campaigns"][0];
  EXPECT_EQ(j["failed_pct"], 10.0) << "30 failed of 300 finished";
  EXPECT_EQ(j["retries_total"], 720);
  EXPECT_EQ(j["receipts"]["delivered"], 200);
  EXPECT_EQ(j["receipts"]["pending"], 60);
  EXPECT_TRUE(doc["campaigns"][1]["failed_pct"].is_null()) << "nothing finished yet";
  EXPECT_TRUE(doc["campaigns"][1]["receipts"].is_null());
  EXPECT_TRUE(doc["campaigns"][1]["retries_total"].is_null()) << "no cluster counts: unknown, not 0";
  EXPECT_EQ(doc["providers"][0]["cluster"]["throttled_total"], 12);
  EXPECT_EQ(doc["providers"][0]["cluster"]["server_errors_total"], 345);
  EXPECT_TRUE(doc["providers"][1]["cluster"].is_null());
}

TEST(SeriesTest, KeepsFifteenMinutesInFiveSecondBucketsWithGaps) {
  Series s;
  for (int t = 0; t <= 2000; ++t) s.add(1000 + t, t % 2 ? 10.0 : 20.0);  // one refresh a second
  Json j = s.json();
  EXPECT_EQ(j["step"], Series::kStepS);
  EXPECT_EQ(j["v"].size(), Series::kMaxPoints) << "2,001 refreshes kept as 181 points";
  EXPECT_EQ(s.points(), Series::kMaxPoints);
  EXPECT_EQ(j["t0"], 3000 - Series::kSpanS) << "the bucket 15 minutes before the newest";
  EXPECT_EQ(j["v"][0], 16.0) << "the mean of the five refreshes in the bucket: 20, 10, 20, 10, 20";
  EXPECT_EQ(j["v"].back(), 20.0) << "the newest bucket holds one refresh so far (t = 3000)";
  EXPECT_EQ(s.latest(), 20.0) << "the newest bucket's mean";
  s.add(2500, 1);  // earlier than the last: dropped
  s.add(3006, std::nullopt);
  s.add(3011, std::nan(""));
  j = s.json();
  EXPECT_EQ(j["v"].size(), Series::kMaxPoints) << "two buckets more, two older than 15 minutes less";
  EXPECT_EQ(j["t0"], 3010 - Series::kSpanS);
  EXPECT_TRUE(j["v"][Series::kMaxPoints - 2].is_null()) << "unknown is a gap";
  EXPECT_TRUE(j["v"].back().is_null()) << "NaN is a gap";
  EXPECT_EQ(s.latest(), std::nullopt) << "a gap is not known";
}

TEST(SeriesTest, MergedBucketsAreMeansAlignedOnTheirSpan) {
  Series s;
  for (int t = 0; t < 60; t += 5) s.add(1000 + t, t < 30 ? 1.0 : std::optional<double>());
  const Json j = s.json(4);  // 20-s points, starting on a multiple of 20 s
  EXPECT_EQ(j["step"], 20.0);
  EXPECT_EQ(j["t0"], 1000.0);
  ASSERT_EQ(j["v"].size(), 3u);
  EXPECT_EQ(j["v"][0], 1.0);
  EXPECT_EQ(j["v"][1], 1.0) << "two known buckets and two gaps: the mean of the known";
  EXPECT_TRUE(j["v"][2].is_null());
}

TEST(HistoriesTest, ThisWorkersAnswersBecomeRatesAndARestartCountsFromZero) {
  Histories h;
  ProviderView p = provider(100);
  p.worker = ProviderView::Worker{};
  p.worker->throttled = 10;
  h.add(100, {}, {p});
  p.worker->throttled = 30;
  p.worker->server_errors = 4;
  h.add(110, {}, {p});
  p.worker->throttled = 5;  // pacerd restarted
  h.add(115, {}, {p});
  const Json j = h.json()["providers"]["sms"];
  EXPECT_TRUE(j["throttled_per_s"]["v"][0].is_null()) << "no earlier sample";
  EXPECT_DOUBLE_EQ(j["throttled_per_s"]["v"][2].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(j["server_errors_per_s"]["v"][2].get<double>(), 0.4);
  EXPECT_DOUBLE_EQ(j["throttled_per_s"]["v"][3].get<double>(), 1.0);
  EXPECT_EQ(j["rate"]["v"][0], 100);
  EXPECT_EQ(h.serverErrorsPerS("sms"), 0.0) << "the newest bucket: no 5xx since t = 110";
  p.worker->server_errors = 14;
  h.add(117, {}, {p});
  EXPECT_DOUBLE_EQ(h.serverErrorsPerS("sms").value_or(-1), 2.5) << "the bucket's mean of 0 and 5/s";
  EXPECT_EQ(h.serverErrorsPerS("other"), std::nullopt);
  h.add(2000, {}, {});
  EXPECT_TRUE(h.json()["providers"].empty()) << "forgotten after fifteen minutes unseen";
}

// The document stays within its bound however many campaigns there are: an
// hour of 3,000 campaigns refreshed every second.
TEST(HistoriesTest, BoundedWhateverTheNumberOfCampaigns) {
  Histories h;
  std::vector<CampaignView> cs;
  for (int i = 0; i < 3000; ++i) cs.push_back(campaign("c" + std::to_string(i), 100, 50 + i % 7));
  for (int t = 0; t < 3600; t += 1) {
    // The first 500 stop being seen after 10 minutes.
    if (t == 600) cs.erase(cs.begin(), cs.begin() + 500);
    h.add(1000 + t, t % 5 == 0 ? cs : std::vector<CampaignView>{}, {provider(400)});
  }
  const Json j = h.json();
  std::size_t values = 0;
  for (const auto& [id, c] : j["campaigns"].items())
    values += c["send_rate"]["v"].size() + c["achieved_rate"]["v"].size();
  for (const auto& [id, p] : j["providers"].items())
    for (const auto& [name, series] : p.items()) values += series["v"].size();
  EXPECT_EQ(j["campaigns"].size(), Histories::kMaxCampaigns);
  EXPECT_EQ(j["campaigns_left_out"], 2500 - Histories::kMaxCampaigns) << "the 500 unseen for 15 minutes are forgotten";
  EXPECT_LE(values, Histories::kMaxValues);
  EXPECT_GT(j["step_s"].get<double>(), Series::kStepS) << "buckets merged to stay within the bound";
  EXPECT_FALSE(j["campaigns"].contains("c0")) << "forgotten";
}

TEST(StateJsonTest, ClusterFiguresAtTheTopThisWorkersUnderWorker) {
  CampaignView c = campaign("<img src=x onerror=alert(1)>", 100, 40);
  c.row.name = "<b>\"quoted\"</b>";
  c.worker = CampaignView::Worker{.backlog = 9, .in_flight = 2, .retries = 3, .achieved_rate = 12.5, .in_memory = 7};
  ProviderView p = provider(400);
  p.shared_effective = 300;
  p.shared_paused_s = 1.5;
  p.worker = ProviderView::Worker{250.0, false, false, 9, 2};
  Sources s;
  s.redis = "ok";
  const Json j = stateJson("2026-11-24T10:00:00Z", 1795.5, 5, {c}, {p}, s);
  const Json& jc = j["campaigns"][0];
  EXPECT_EQ(jc["id"], "<img src=x onerror=alert(1)>") << "kept as data; the page renders it as text";
  EXPECT_EQ(jc["name"], "<b>\"quoted\"</b>");
  EXPECT_EQ(jc["backlog"], 900);
  EXPECT_EQ(jc["priority"], nullptr);
  EXPECT_EQ(jc["limited_by"]["code"], "provider_paused");
  EXPECT_EQ(jc["worker"]["backlog"], 7) << "held in memory; the parked ones are counted once, from PostgreSQL";
  EXPECT_EQ(jc["worker"]["backlog_reported"], 9);
  const Json& jp = j["providers"][0];
  EXPECT_EQ(jp["effective_rate"], 300.0);
  EXPECT_EQ(jp["effective_from"], "redis");
  EXPECT_EQ(jp["paused_from"], "redis");
  EXPECT_EQ(jp["achieved_rate"], 40.0);
  EXPECT_EQ(jp["circuit"], "closed");
  EXPECT_EQ(jp["worker"]["circuit_open"], false);
  EXPECT_EQ(jp["worker"]["throttled_total"], 9);
  EXPECT_EQ(j["sources"]["redis"], "ok");
  EXPECT_EQ(j["totals"]["backlog"], 900);
  p.shared_effective.reset();
  p.shared_paused_s = 0;
  EXPECT_EQ(stateJson("", 0, 5, {}, {p}, s)["providers"][0]["effective_from"], "worker");
  p.worker->circuit_open = true;
  EXPECT_EQ(stateJson("", 0, 5, {}, {p}, s)["providers"][0]["circuit"], "open")
      << "the worker's breaker, as it holds it";
  p.worker.reset();
  EXPECT_EQ(stateJson("", 0, 5, {}, {p}, s)["providers"][0]["circuit"], nullptr)
      << "a provider this worker does not know yet";
  EXPECT_EQ(stateJson("", 0, 5, {}, {p}, s)["providers"][0]["effective_from"], "configured");
}

// The priority class is the row's; a campaign's suppressed messages are
// cluster figures, and done like failed ones (the backlog shrinks).
// Failed over (docs/routes.md): the route and its reason are what holds the
// campaign, whatever its provider's rate says; on its own provider, as before.
TEST(StateJsonTest, AFailedOverCampaignSaysWhichRouteTakesItsTrafficAndWhy) {
  CampaignView c = campaign("otp", 100, 40);
  c.worker = CampaignView::Worker{7, 2, 3, 12.5, "sms-b", "sms-a: binds failing (2 refused or unanswered)"};
  ProviderView p = provider(400);
  p.shared_paused_s = 1.5;
  const Json j = stateJson("2026-11-24T10:00:00Z", 1795.5, 5, {c}, {p}, Sources{});
  const Json& jc = j["campaigns"][0];
  EXPECT_EQ(jc["limited_by"]["code"], "failover");
  EXPECT_EQ(jc["limited_by"]["text"], "via sms-b: sms-a: binds failing (2 refused or unanswered)");
  EXPECT_EQ(jc["worker"]["route"], "sms-b");
  c.worker->route = "sms-a";
  c.worker->route_reason.clear();
  const Json back = stateJson("2026-11-24T10:00:01Z", 1796.5, 5, {c}, {p}, Sources{});
  EXPECT_EQ(back["campaigns"][0]["limited_by"]["code"], "provider_paused");
  EXPECT_EQ(back["campaigns"][0]["worker"]["route_reason"], nullptr);
}

// A prefix route failed over (docs/routes.md): the state document lists
// every route with the provider taking its traffic and why, and its
// limited_by names the route; pacerctl top, reading that document, says the same.
TEST(StateJsonTest, AFailedOverPrefixRouteIsListedWithItsProviderAndWhy) {
  CampaignView c = campaign("otp", 100, 40);
  c.worker = CampaignView::Worker{7, 2, 3, 12.5, "sms-a", ""};
  c.worker->routes = {RouteStatus{{}, "sms-a", "sms-a", ""},
                      RouteStatus{{"44"}, "sms-uk", "sms-b", "sms-uk: binds failing (3 refused or unanswered)"}};
  const Json j = stateJson("2026-11-24T10:00:00Z", 1795.5, 5, {c}, {provider(400)}, Sources{});
  const Json& jc = j["campaigns"][0];
  EXPECT_EQ(jc["limited_by"]["code"], "failover");
  EXPECT_EQ(jc["limited_by"]["text"],
            "route 44 -> sms-uk; failover to sms-b: sms-uk: binds failing (3 refused or unanswered)");
  ASSERT_EQ(jc["worker"]["routes"].size(), 2u);
  EXPECT_EQ(jc["worker"]["routes"][0], (Json{{"prefixes", Json::array()}, {"provider", "sms-a"}, {"via", "sms-a"},
                                             {"reason", nullptr}}));
  EXPECT_EQ(jc["worker"]["routes"][1]["prefixes"], Json::array({"44"}));
  EXPECT_EQ(jc["worker"]["routes"][1]["via"], "sms-b");
  const std::optional<LimitedBy> top = control::failoverLimitOfState(jc["worker"]);
  ASSERT_TRUE(top);
  EXPECT_EQ(top->text, jc["limited_by"]["text"]);
  c.worker->routes[1].via = "sms-uk";
  c.worker->routes[1].reason.clear();
  const Json back = stateJson("2026-11-24T10:00:01Z", 1796.5, 5, {c}, {provider(400)}, Sources{});
  EXPECT_NE(back["campaigns"][0]["limited_by"]["code"], "failover");
  EXPECT_EQ(back["campaigns"][0]["worker"]["routes"][1]["reason"], nullptr);
}

TEST(StateJsonTest, PriorityClassAndSuppressedComeFromTheCluster) {
  CampaignView c = campaign("night", 100, 40);
  c.row.priority_class = "bulk";
  c.top.suppressed = 300;
  const Json j = stateJson("", 0, 5, {c}, {provider(400)}, Sources{});
  const Json& jc = j["campaigns"][0];
  EXPECT_EQ(jc["priority"], "bulk");
  EXPECT_EQ(jc["suppressed"], 300);
  EXPECT_EQ(jc["backlog"], 600);  // 1000 - (100 sent + 300 suppressed)
}

// This worker's queue per class as the metrics snapshot has it; the default
// class (labelled "default" there) is null, as a campaign's priority is.
TEST(StateJsonTest, ClassesCarryThisWorkersQueueWithTheDefaultClassAsNull) {
  const Json j = classesStateJson({{"bulk", 12}, {"default", 3}});
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["class"], "bulk");
  EXPECT_EQ(j[0]["worker"]["queued"], 12);
  EXPECT_EQ(j[1]["class"], nullptr);
  EXPECT_EQ(j[1]["worker"]["queued"], 3);
  EXPECT_TRUE(classesStateJson({}).is_array());
}

TEST(SseFrameTest, OneDataLinePerLineAndABlankLineAtTheEnd) {
  EXPECT_EQ(sseFrame("state", "{\"a\":1}"), "event: state\ndata: {\"a\":1}\n\n");
  EXPECT_EQ(sseFrame("x", "a\nb"), "event: x\ndata: a\ndata: b\n\n");
}

TEST(PercentDecodeTest, DecodesEscapesAndRefusesMalformedOnesAndControlCharacters) {
  EXPECT_EQ(percentDecode("a%2Fb"), "a/b");
  EXPECT_EQ(percentDecode("%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E"), "<img src=x onerror=alert(1)>");
  EXPECT_EQ(percentDecode("%e2%82%ac"), "\xe2\x82\xac");
  EXPECT_EQ(percentDecode("%"), std::nullopt);
  EXPECT_EQ(percentDecode("%4"), std::nullopt);
  EXPECT_EQ(percentDecode("%zz"), std::nullopt);
  EXPECT_EQ(percentDecode("a%0Ab"), std::nullopt);
  EXPECT_EQ(percentDecode("a%00"), std::nullopt);
}

TEST(ParseRouteTest, PagesApiAndControls) {
  EXPECT_EQ(parseRoute("GET", "/").kind, Route::Kind::kRedirect);
  EXPECT_EQ(parseRoute("GET", "/console").kind, Route::Kind::kRedirect);
  EXPECT_EQ(parseRoute("GET", "/console/").name, "index.html");
  EXPECT_EQ(parseRoute("GET", "/console/console.js").name, "console.js");
  EXPECT_EQ(parseRoute("GET", "/console/a/b").kind, Route::Kind::kNotFound);
  EXPECT_FALSE(parseRoute("POST", "/console/").method_ok);
  EXPECT_EQ(parseRoute("GET", "/metrics").kind, Route::Kind::kNotMine);
  EXPECT_EQ(parseRoute("GET", "/api/v1/state").kind, Route::Kind::kState);
  EXPECT_EQ(parseRoute("HEAD", "/api/v1/top").kind, Route::Kind::kTop);
  EXPECT_EQ(parseRoute("GET", "/api/v1/events").kind, Route::Kind::kEvents);
  EXPECT_FALSE(parseRoute("POST", "/api/v1/state").method_ok);
  EXPECT_EQ(parseRoute("GET", "/api/v2/state").kind, Route::Kind::kNotFound);
  EXPECT_EQ(parseRoute("GET", "/api/v1/nope").kind, Route::Kind::kNotFound);
  Route r = parseRoute("GET", "/api/v1/campaigns/a%2Fpause");
  EXPECT_EQ(r.kind, Route::Kind::kCampaign);
  EXPECT_EQ(r.id, "a/pause") << "an encoded slash is part of the id";
  r = parseRoute("POST", "/api/v1/campaigns/a%2Fb/pause");
  EXPECT_EQ(r.kind, Route::Kind::kCampaignAction);
  EXPECT_EQ(r.id, "a/b");
  EXPECT_EQ(r.action, "pause");
  EXPECT_FALSE(parseRoute("GET", "/api/v1/campaigns/c/pause").method_ok);
  EXPECT_STREQ(parseRoute("GET", "/api/v1/campaigns/c/pause").allow, "POST");
  EXPECT_EQ(parseRoute("POST", "/api/v1/campaigns/c/explode").kind, Route::Kind::kNotFound);
  EXPECT_EQ(parseRoute("POST", "/api/v1/campaigns/%zz/pause").kind, Route::Kind::kNotFound);
  EXPECT_EQ(parseRoute("POST", "/api/v1/providers/sms/rate").kind, Route::Kind::kProviderRate);
  EXPECT_EQ(parseRoute("GET", "/api/v1/providers/sms").kind, Route::Kind::kNotFound);
}

TEST(ParseLimitBodyTest, TakesWhatPacerctlTakes) {
  EXPECT_EQ(parseLimitBody(R"({"rate": 150})").rate, 150.0);
  EXPECT_EQ(parseLimitBody(R"({"rate": 150})").burst, control::defaultBurst(150.0)) << "pacerctl's default burst";
  EXPECT_EQ(parseLimitBody(R"({"rate": "40", "burst": "7"})").burst, 7.0);
  EXPECT_EQ(parseLimitBody(R"({"rate": "unlimited"})").rate, std::nullopt);
  EXPECT_EQ(parseLimitBody(R"({"rate": null})").rate, std::nullopt);
  EXPECT_THROW(parseLimitBody(R"({"rate": -1})"), control::InvalidValueError);
  EXPECT_THROW(parseLimitBody(R"({"rate": "fast"})"), control::InvalidValueError);
  EXPECT_THROW(parseLimitBody(R"({"rate": ""})"), control::InvalidValueError);
  EXPECT_THROW(parseLimitBody(R"({"rate": 10, "burst": 0})"), control::InvalidValueError);
  EXPECT_THROW(parseLimitBody(R"({"rate": "unlimited", "burst": 5})"), control::InvalidValueError);
  EXPECT_THROW(parseLimitBody(R"({})"), control::InvalidValueError);
  EXPECT_THROW(parseLimitBody(R"({"rate": 1, "weight": 2})"), control::InvalidValueError);
  EXPECT_THROW(parseLimitBody("[1]"), control::InvalidValueError);
  EXPECT_THROW(parseLimitBody("rate=5"), control::InvalidValueError);
  EXPECT_THROW(parseLimitBody(R"({"rate": [1]})"), control::InvalidValueError);
}

TEST(ParseLimitBodyTest, AHugeNumberIsNamedWithItsFieldNotCalledMalformed) {
  const auto message = [](std::string_view body) {
    try {
      parseLimitBody(body);
    } catch (const control::InvalidValueError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_THAT(message(R"({"rate": 1e400})"), ::testing::StartsWith("rate: the number is out of range"));
  EXPECT_THAT(message(R"({"rate": 5, "burst": 1e999})"), ::testing::StartsWith("burst: the number is out of range"));
  EXPECT_THAT(message(R"({"rate": 5)"), ::testing::StartsWith("body: expected a JSON object")) << "still malformed";
}

}  // namespace
}  // namespace pacer::console
