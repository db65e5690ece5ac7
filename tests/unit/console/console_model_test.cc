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

TEST(SeriesTest, KeepsFifteenMinutesInOrderWithGaps) {
  Series s;
  for (int t = 0; t <= 2000; t += 10) s.add(1000 + t, t);
  Json j = s.json();
  ASSERT_FALSE(j["t"].empty());
  EXPECT_GE(j["t"].front().get<double>(), 3000 - Series::kSpanS);
  EXPECT_EQ(j["t"].back().get<double>(), 3000);
  const std::size_t n = j["t"].size();
  s.add(2500, 1);  // earlier than the last: dropped
  s.add(3001, std::nullopt);
  s.add(3002, std::nan(""));
  j = s.json();
  EXPECT_EQ(j["t"].size(), n + 1) << "two added, the point at 2100 now older than 15 minutes";
  EXPECT_EQ(j["t"][n - 2], 3000);
  EXPECT_TRUE(j["v"][n - 1].is_null());
  EXPECT_TRUE(j["v"][n].is_null()) << "NaN is a gap";
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
  EXPECT_DOUBLE_EQ(j["throttled_per_s"]["v"][1].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(j["server_errors_per_s"]["v"][1].get<double>(), 0.4);
  EXPECT_DOUBLE_EQ(j["throttled_per_s"]["v"][2].get<double>(), 1.0);
  EXPECT_EQ(j["rate"]["v"][0], 100);
  h.add(2000, {}, {});
  EXPECT_TRUE(h.json()["providers"].empty()) << "forgotten after fifteen minutes unseen";
}

TEST(StateJsonTest, ClusterFiguresAtTheTopThisWorkersUnderWorker) {
  CampaignView c = campaign("<img src=x onerror=alert(1)>", 100, 40);
  c.row.name = "<b>\"quoted\"</b>";
  c.worker = CampaignView::Worker{7, 2, 3, 12.5, "", ""};
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
  EXPECT_EQ(jc["worker"]["backlog"], 7);
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
