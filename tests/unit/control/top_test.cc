// pacerctl top's arithmetic and rendering, and produce's pacing: pure, no
// clock, no database.
#include "pacer/control/top.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>

#include "pacer/control/table.h"

namespace pacer::control {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(TopRateTest, AchievedRateIsTheCountDifferenceOverTheTimeDifference) {
  EXPECT_DOUBLE_EQ(*achievedRate({100.0, 1000}, {105.0, 1200}), 40.0);
  EXPECT_DOUBLE_EQ(*achievedRate({0.0, 7}, {0.5, 7}), 0.0);
}

TEST(TopRateTest, AchievedRateIsUnknownWhenTimeStandsStillGoesBackOrTheCountFalls) {
  EXPECT_FALSE(achievedRate({5.0, 10}, {5.0, 20}));
  EXPECT_FALSE(achievedRate({6.0, 10}, {5.0, 20}));
  EXPECT_FALSE(achievedRate({5.0, 20}, {6.0, 10}));
}

// Over many random sample pairs: the rate times the span gives back the count
// difference, and is never negative.
TEST(TopRateTest, AchievedRateTimesSpanIsTheCountDifference) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> t(0, 1e6), dt(1e-3, 600);
  std::uniform_int_distribution<std::int64_t> n(0, 1'000'000'000), dn(0, 1'000'000);
  for (int i = 0; i < 10000; ++i) {
    const RateSample older{t(rng), n(rng)};
    const RateSample newer{older.at_s + dt(rng), older.sent + dn(rng)};
    const auto r = achievedRate(older, newer);
    ASSERT_TRUE(r);
    EXPECT_GE(*r, 0);
    EXPECT_NEAR(*r * (newer.at_s - older.at_s), static_cast<double>(newer.sent - older.sent),
                1e-6 * static_cast<double>(newer.sent - older.sent) + 1e-6);
  }
}

TEST(TopBacklogTest, AKnownTotalGivesTotalMinusDoneNeverBelowZero) {
  EXPECT_EQ(backlogOf(1000, 250, 99).messages, 750);
  EXPECT_FALSE(backlogOf(1000, 250, 99).lower_bound);
  EXPECT_EQ(backlogOf(1000, 1200, 0).messages, 0);  // a stale total owes nothing
  EXPECT_EQ(backlogOf(0, 0, 5).messages, 0);
}

TEST(TopBacklogTest, AnUnknownTotalGivesTheParkedCountAsALowerBound) {
  const Backlog b = backlogOf(std::nullopt, 250, 40);
  EXPECT_EQ(b.messages, 40);
  EXPECT_TRUE(b.lower_bound);
}

TEST(TopProgressTest, ProgressIsDoneOverTotalClampedToOne) {
  EXPECT_DOUBLE_EQ(*progressOf(200, 50), 0.25);
  EXPECT_DOUBLE_EQ(*progressOf(200, 300), 1.0);
  EXPECT_DOUBLE_EQ(*progressOf(0, 0), 1.0);
  EXPECT_FALSE(progressOf(std::nullopt, 50));
}

TEST(TopEtaTest, EtaIsBacklogOverRate) {
  EXPECT_DOUBLE_EQ(*etaSeconds({750, false}, 50.0), 15.0);
  EXPECT_DOUBLE_EQ(*etaSeconds({40, true}, 8.0), 5.0);           // a lower bound, shown as such
  EXPECT_DOUBLE_EQ(*etaSeconds({0, false}, std::nullopt), 0.0);  // done needs no rate
}

TEST(TopEtaTest, EtaIsUnknownWithoutAPositiveRateOrWithNothingKnown) {
  EXPECT_FALSE(etaSeconds({750, false}, std::nullopt));
  EXPECT_FALSE(etaSeconds({750, false}, 0.0));
  EXPECT_FALSE(etaSeconds({750, false}, -1.0));
  EXPECT_FALSE(etaSeconds({750, false}, std::nan("")));
  EXPECT_FALSE(etaSeconds({0, true}, 10.0));  // unknown total, nothing parked: not "done"
}

TEST(TopBarTest, TheBarFillsFloorOfFractionTimesWidth) {
  EXPECT_EQ(progressBar(0.0, 10), "[..........]   0%");
  EXPECT_EQ(progressBar(0.25, 10), "[##........]  25%");
  EXPECT_EQ(progressBar(0.999, 10), "[#########.]  99%");  // full only when done
  EXPECT_EQ(progressBar(1.0, 10), "[##########] 100%");
  EXPECT_EQ(progressBar(1.7, 4), "[####] 100%");
  EXPECT_EQ(progressBar(-0.5, 4), "[....]   0%");
  EXPECT_EQ(progressBar(std::nullopt, 10), "-");
  EXPECT_EQ(progressBar(std::nan(""), 10), "-");
}

// Every fraction in [0, 1] at every width: the bar has `width` cells and the
// filled ones never say more than the fraction.
TEST(TopBarTest, TheBarNeverOverstatesProgress) {
  for (int width = 1; width <= 40; ++width) {
    for (int k = 0; k <= 1000; ++k) {
      const double f = k / 1000.0;
      const std::string bar = progressBar(f, width);
      const auto open = bar.find('['), close = bar.find(']');
      ASSERT_EQ(close - open - 1, static_cast<std::size_t>(width)) << bar;
      const auto filled = std::count(bar.begin(), bar.end(), '#');
      EXPECT_LE(static_cast<double>(filled), f * width + 1e-9) << bar;
      EXPECT_GT(static_cast<double>(filled + 1), f * width - 1e-9) << bar;
    }
  }
}

TEST(TopDurationTest, DurationsAreRoundedUpAndShortened) {
  EXPECT_EQ(formatDuration(0.0), "0s");
  EXPECT_EQ(formatDuration(0.2), "1s");
  EXPECT_EQ(formatDuration(42.0), "42s");
  EXPECT_EQ(formatDuration(187.0), "3m07s");
  EXPECT_EQ(formatDuration(7500.0), "2h05m");
  EXPECT_EQ(formatDuration(400000.0), ">99h");
  EXPECT_EQ(formatDuration(std::nullopt), "-");
  EXPECT_EQ(formatDuration(-1.0), "-");
}

// A message whose push token was dead is finished: it counts for the
// backlog and progress as a failed one does, or a campaign with dead tokens
// would never be done.
TEST(TopFiguresTest, AnInvalidTokenRowIsFinishedLikeAFailedOne) {
  TopRow r;
  r.total = 100;
  r.sent = 50;
  r.failed = 5;
  r.rejected = 5;
  r.invalid_token = 40;
  r.achieved = 1;
  const TopFigures f = figuresOf(r);
  EXPECT_EQ(f.backlog.messages, 0);
  ASSERT_TRUE(f.progress);
  EXPECT_DOUBLE_EQ(*f.progress, 1.0);
  r.invalid_token = 10;
  EXPECT_EQ(figuresOf(r).backlog.messages, 30);
}

// A message a frequency cap suppressed is finished too: it will never be sent.
TEST(TopFiguresTest, ASuppressedRowIsFinishedLikeAFailedOne) {
  TopRow r;
  r.total = 100;
  r.sent = 60;
  r.suppressed = 40;
  EXPECT_EQ(figuresOf(r).backlog.messages, 0);
  EXPECT_DOUBLE_EQ(*figuresOf(r).progress, 1.0);
  r.suppressed = 15;
  EXPECT_EQ(figuresOf(r).backlog.messages, 25);
}

TopFrame sampleFrame() {
  TopFrame f;
  f.at_utc = "2026-11-23T13:40:05Z";
  f.window_s = 5;
  TopRow a;
  a.id = "spring-sale";
  a.state = "active";
  a.provider = "sms";
  a.send_rate = 40;
  a.total = 1000;
  a.sent = 240;
  a.failed = 8;
  a.rejected = 2;
  a.achieved = 50;
  TopRow b;
  b.id = "vip";
  b.state = "paused";
  b.parked = 30;
  b.sent = 5;
  b.achieved = 0;
  f.rows = {a, b};
  return f;
}

TEST(TopRenderTest, TheTextFrameHasAHeaderWithTotalsAndOneLinePerCampaign) {
  TopFrame f = sampleFrame();
  f.providers.push_back(TopProviderRow{"sms", 400.0, 1, 50.0, 320.0, false, 3, 7, true, false, false, 0.0, true, "", ""});
  fillLimitedBy(f);
  const std::string text = renderTopText(f, 200);
  EXPECT_THAT(text, HasSubstr("pacer top  2026-11-23T13:40:05Z  50.0/s over 5s\n"
                              "campaigns 2: 1 active, 1 paused  sent 245  failed 8  backlog >=780\n\n"));
  EXPECT_THAT(text,
              HasSubstr("\n\nID           STATE   PROVIDER       RATE  ACHIEVED  SENT  FAILED  FAIL%  BACKLOG  PROGRESS"
                        "           ETA  LIMITED BY\n"));
  // 750 left at 50/s: 15 s; 250 of 1000 done; at (above) its own rate; 10 of
  // the 250 finished failed or were rejected: 4.0%.
  EXPECT_THAT(text, HasSubstr("\nspring-sale  active  sms            40/s    50.0/s   240       8   4.0%      750  "
                              "[##........]  25%  15s  own rate\n"));
  // Unknown total: the parked count as a lower bound, no bar, no ETA at rate 0.
  EXPECT_THAT(text, HasSubstr("\nvip          paused  -         unlimited     0.0/s     5       0   0.0%     >=30  -"
                              "                    -  paused\n"));
  // Its effective rate below the configured one: throttled (healthOf).
  EXPECT_THAT(text, HasSubstr("\nPROVIDER  QUOTA  EFFECTIVE  ACHIEVED  PAUSED  429s  5XX  CAMPAIGNS  HEALTH\n"
                              "sms       400/s    320.0/s    50.0/s  no         3    7          1  throttled\n"));
}

// A rate written by SQL past the checks (NaN, Infinity) is marked in the
// table and named in the JSON: never "nan/s", never null (unlimited).
TEST(TopRenderTest, ARateNoCheckWouldPassIsMarkedNotShownAsNanOrUnlimited) {
  TopFrame f = sampleFrame();
  f.rows[0].send_rate = std::numeric_limits<double>::quiet_NaN();
  f.providers.push_back(
      TopProviderRow{"sms", std::numeric_limits<double>::infinity(), 1, 50.0, 320.0, false, 3, 7, true, false, false, 0.0, true, "", ""});
  const std::string text = renderTopText(f, 200);
  EXPECT_THAT(text, HasSubstr("invalid (NaN)"));
  EXPECT_THAT(text, HasSubstr("invalid (Infinity)"));
  EXPECT_EQ(text.find("nan/s"), std::string::npos) << text;
  EXPECT_EQ(text.find("inf/s"), std::string::npos) << text;
  const std::string json = renderTopJson(f);
  EXPECT_THAT(json, HasSubstr("\"send_rate\": \"NaN\"")) << json;
  EXPECT_THAT(json, HasSubstr("\"rate\": \"Infinity\"")) << json;
}

TEST(TopRenderTest, ClassesGetAColumnAndALineEachWithTheirBacklogAndRate) {
  TopFrame f = sampleFrame();
  f.rows[0].priority_class = "bulk";
  f.rows[0].suppressed = 10;
  TopRow c;
  c.id = "otp";
  c.state = "active";
  c.priority_class = "bulk";
  c.total = 100;
  c.sent = 40;
  c.achieved = 10;
  f.rows.push_back(c);
  fillLimitedBy(f);
  const std::string text = renderTopText(f, 200);
  // spring-sale: 1000 - (240 + 8 + 2 + 10) = 740; otp: 60; vip (default class): >= 30 parked.
  EXPECT_THAT(text, HasSubstr("suppressed 10  backlog >=830\n"
                              "class default: 1 campaign, backlog >=30, 0.0/s\n"
                              "class bulk: 2 campaigns, backlog 800, 60.0/s\n\n"));
  EXPECT_THAT(text, HasSubstr("\nID           STATE   CLASS    PROVIDER"));
  EXPECT_THAT(text, HasSubstr("  FAILED  FAIL%  SUPPR  BACKLOG"));
  EXPECT_THAT(text, HasSubstr("\nvip          paused  default  -  "));
  EXPECT_THAT(text, HasSubstr("       8   3.8%     10      740  "));
}

// With --admin, the worker's queue per class joins each class's line; a
// class the worker did not report stays without one.
TEST(TopRenderTest, AWorkersQueuePerClassJoinsTheClassLines) {
  TopFrame f = sampleFrame();
  f.rows[0].priority_class = "bulk";
  f.worker_class_queued = {{"bulk", 42}};
  fillLimitedBy(f);
  const std::string text = renderTopText(f, 200);
  EXPECT_THAT(text, HasSubstr("class bulk: 1 campaign, backlog 750, 50.0/s, queued 42 in the worker\n"));
  EXPECT_THAT(text, HasSubstr("class default: 1 campaign, backlog >=30, 0.0/s\n"));
  const auto j = nlohmann::json::parse(renderTopJson(f));
  EXPECT_TRUE(j.at("classes").at(0).at("worker_queued").is_null());
  EXPECT_EQ(j.at("classes").at(1).at("worker_queued"), 42);
}

TEST(TopRenderTest, WithoutClassesOrSuppressedRowsTheColumnsStayOut) {
  TopFrame f = sampleFrame();
  fillLimitedBy(f);
  const std::string text = renderTopText(f, 200);
  EXPECT_THAT(text, Not(HasSubstr("CLASS")));
  EXPECT_THAT(text, Not(HasSubstr("SUPPR")));
  EXPECT_THAT(text, Not(HasSubstr("class default")));
}

TEST(TopRenderTest, TheJsonFrameCarriesClassesAndSuppressed) {
  TopFrame f = sampleFrame();
  f.rows[0].priority_class = "bulk";
  f.rows[0].suppressed = 10;
  const auto j = nlohmann::json::parse(renderTopJson(f));
  EXPECT_EQ(j.at("totals").at("suppressed"), 10);
  EXPECT_EQ(j.at("campaigns").at(0).at("priority_class"), "bulk");
  EXPECT_EQ(j.at("campaigns").at(0).at("suppressed"), 10);
  EXPECT_TRUE(j.at("campaigns").at(1).at("priority_class").is_null());
  const auto& classes = j.at("classes");
  ASSERT_EQ(classes.size(), 2u);  // the default class first, then by name
  EXPECT_TRUE(classes.at(0).at("class").is_null());
  EXPECT_EQ(classes.at(0).at("backlog_lower_bound"), true);
  EXPECT_EQ(classes.at(1).at("class"), "bulk");
  EXPECT_EQ(classes.at(1).at("backlog"), 740);
  EXPECT_EQ(classes.at(1).at("campaigns"), 1);
  EXPECT_DOUBLE_EQ(classes.at(1).at("achieved_rate").get<double>(), 50.0);
}

TEST(TopRenderTest, EightyColumnsKeepTheFiguresThatMatterAndDropTheRest) {
  TopFrame f = sampleFrame();
  f.rows[0].has_receipts = true;
  f.rows[0].delivered = 200;
  f.rows[0].undelivered = 30;
  f.rows[0].receipts_pending = 10;
  f.providers.push_back(TopProviderRow{"sms", 400.0, 1, 50.0, std::nullopt, std::nullopt, std::nullopt, std::nullopt,
                                       false, std::nullopt, std::nullopt, std::nullopt, false, "", ""});
  fillLimitedBy(f);
  const std::string wide = renderTopText(f, 200);
  EXPECT_THAT(wide, HasSubstr("DLVRD  UNDLV  PEND"));
  EXPECT_THAT(wide, HasSubstr("  200     30    10\n"));
  EXPECT_THAT(wide, HasSubstr("\nvip "));
  const std::string text = renderTopText(f, 80);
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = text.find('\n', start);
    EXPECT_LE(textWidth(text.substr(start, end - start)), 80u) << text;
    start = end + 1;
  }
  for (const char* kept : {"ID", "ACHIEVED", "BACKLOG", "LIMITED BY", "RATE", "DLVRD", "own rate", "QUOTA"})
    EXPECT_THAT(text, HasSubstr(kept)) << text;
  EXPECT_THAT(text, Not(HasSubstr("PROGRESS"))) << text;  // the widest, least needed column goes first
}

TEST(TopLimitedByTest, EachCaseNamesWhatHoldsTheCampaignBack) {
  LimitFacts f;
  f.backlog = 100;
  f.paused = true;
  EXPECT_EQ(limitedByOf(f).code, "paused");
  f.paused = false;
  EXPECT_EQ(limitedByOf(f).code, "unknown");  // no achieved rate yet
  f.achieved = 95;
  f.own_rate = 100;
  EXPECT_EQ(limitedByOf(f).code, "campaign_rate");
  f.own_rate = 1000;
  f.provider = "sms";
  f.provider_rate = 320;
  f.provider_configured = 400;
  f.provider_achieved = 310;
  const LimitedBy by_provider = limitedByOf(f);
  EXPECT_EQ(by_provider.code, "provider_rate");
  EXPECT_THAT(by_provider.text, HasSubstr("lowered after throttling"));
  f.provider_paused = true;
  EXPECT_EQ(limitedByOf(f).code, "provider_paused");
  f.provider_circuit_open = true;  // the breaker pauses its provider too: it is named
  EXPECT_EQ(limitedByOf(f).code, "provider_breaker");
  f.provider_paused = false;
  EXPECT_EQ(limitedByOf(f).code, "provider_breaker");
  f.provider_circuit_open = false;
  f.provider_achieved = 100;
  EXPECT_EQ(limitedByOf(f).code, "below_limits");
  f.backlog = 0;
  f.backlog_lower_bound = true;
  EXPECT_EQ(limitedByOf(f).code, "no_input");
  f.backlog_lower_bound = false;
  EXPECT_EQ(limitedByOf(f).code, "done");
}

TEST(TopRenderTest, AnEmptyFrameSaysSo) {
  TopFrame f;
  f.at_utc = "2026-11-23T13:40:05Z";
  EXPECT_THAT(renderTopText(f), HasSubstr("no active or paused campaigns"));
}

TEST(TopRenderTest, TheJsonFrameCarriesTheFiguresWithNullForUnknown) {
  const auto j = nlohmann::json::parse(renderTopJson(sampleFrame()));
  EXPECT_EQ(j.at("at"), "2026-11-23T13:40:05Z");
  EXPECT_EQ(j.at("totals").at("backlog"), 780);
  EXPECT_EQ(j.at("totals").at("backlog_lower_bound"), true);
  const auto& a = j.at("campaigns").at(0);
  EXPECT_EQ(a.at("id"), "spring-sale");
  EXPECT_EQ(a.at("backlog"), 750);
  EXPECT_EQ(a.at("backlog_lower_bound"), false);
  EXPECT_DOUBLE_EQ(a.at("progress").get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(a.at("eta_s").get<double>(), 15.0);
  const auto& b = j.at("campaigns").at(1);
  EXPECT_TRUE(b.at("total").is_null());
  EXPECT_TRUE(b.at("progress").is_null());
  EXPECT_TRUE(b.at("eta_s").is_null());
  EXPECT_TRUE(b.at("send_rate").is_null());
  EXPECT_TRUE(b.at("provider").is_null());
  EXPECT_EQ(b.at("backlog"), 30);
}

TEST(TopRenderTest, ATerminalRedrawErasesTheRestOfEveryLineAndBelow) {
  EXPECT_EQ(terminalRedraw("ab\ncd\n"), "\x1b[Hab\x1b[K\ncd\x1b[K\n\x1b[J");
  EXPECT_EQ(terminalRedraw(""), "\x1b[H\x1b[J");
}

TEST(ProducePacingTest, MessageIIsDueAtIOverRate) {
  EXPECT_DOUBLE_EQ(produceDueS(0, 40), 0.0);
  EXPECT_DOUBLE_EQ(produceDueS(1, 40), 0.025);
  EXPECT_DOUBLE_EQ(produceDueS(400, 40), 10.0);
  EXPECT_DOUBLE_EQ(produceDueS(5, 0), 0.0);
  EXPECT_DOUBLE_EQ(produceDueS(5, std::nan("")), 0.0);
}

// Over a long run the pacing holds the rate: N messages span (N - 1) / R and
// no two are due closer than 1 / R (within rounding).
TEST(ProducePacingTest, DueTimesAreEvenlySpacedAtTheRate) {
  for (double rate : {0.5, 1.0, 40.0, 80.0, 12345.0}) {
    double prev = produceDueS(0, rate);
    for (std::int64_t i = 1; i < 5000; ++i) {
      const double due = produceDueS(i, rate);
      EXPECT_NEAR(due - prev, 1.0 / rate, 1e-9 * due + 1e-12);
      prev = due;
    }
    EXPECT_NEAR(produceDueS(4999, rate), 4999 / rate, 1e-9);
  }
}

}  // namespace
}  // namespace pacer::control
