// The verdicts top and the console share: each "limited by" reason and each
// provider health verdict made true by its facts, and the words top shows.
#include "pacer/control/why.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "pacer/control/json_docs.h"
#include "pacer/control/top.h"

namespace pacer::control {
namespace {

using ::testing::HasSubstr;

// A campaign sending well below its own 100/s on provider sms (400/s, its
// campaigns at 100/s together), with messages left.
LimitFacts below() {
  LimitFacts f;
  f.own_rate = 100;
  f.achieved = 20;
  f.backlog = 5000;
  f.provider = "sms";
  f.provider_rate = 400;
  f.provider_configured = 400;
  f.provider_achieved = 100;
  f.retry_waiting = 0;
  f.quiet_waiting = 0;
  f.cap_waiting = 0;
  return f;
}

TEST(WhyLimitedTest, BelowEveryLimitWithNothingWaitingSaysSo) {
  EXPECT_EQ(limitedByOf(below()).code, "below_limits");
}

// Seen against a real provider: 30% of the answers 5xx, hundreds of retries, and
// the campaign read "below every configured limit".
TEST(WhyLimitedTest, MessagesWaitingForARetryWhileTheProviderAnswers5xxAreNamed) {
  LimitFacts f = below();
  f.retry_waiting = 42;
  f.retries_total = 720;
  f.provider_server_errors_per_s = 6;
  const LimitedBy l = limitedByOf(f);
  EXPECT_EQ(l.code, "server_errors");
  EXPECT_THAT(l.text, HasSubstr("5xx answers from provider sms (6.0/s now)"));
  EXPECT_THAT(l.text, HasSubstr("42 waiting for a retry"));
  EXPECT_THAT(l.text, HasSubstr("720 retries in all"));
  f.provider_server_errors_per_s = 0;  // retries waiting for another reason (a throttle's pause): not 5xx
  EXPECT_EQ(limitedByOf(f).code, "below_limits");
  f.provider_server_errors_per_s = 6;
  f.retry_waiting = 0;  // 5xx answers, but none of its messages waits for a retry
  EXPECT_EQ(limitedByOf(f).code, "below_limits");
}

// Without a worker's facts (top without --admin) the parked rows still say
// it: a wait longer than park_wait_after (30 s) is parked, not held in
// memory, so even a worker's state document showed none of them.
TEST(WhyLimitedTest, ParkedRowsWaitingForQuietHoursOrACapAreNamedWithoutAWorker) {
  LimitFacts f = below();
  f.retry_waiting.reset();
  f.quiet_waiting.reset();
  f.cap_waiting.reset();
  EXPECT_EQ(limitedByOf(f).code, "below_limits");
  f.parked_capped = 40;
  LimitedBy l = limitedByOf(f);
  EXPECT_EQ(l.code, "frequency_cap");
  EXPECT_THAT(l.text, HasSubstr("40 waiting for a frequency cap"));
  EXPECT_THAT(l.text, HasSubstr("(40 of them parked)"));
  f.parked_quiet = 300;
  f.quiet_waiting = 5;  // a worker's too, when known: one message is in one place at a time
  l = limitedByOf(f);
  EXPECT_EQ(l.code, "quiet_hours");
  EXPECT_THAT(l.text, HasSubstr("305 waiting for their recipients' quiet hours to end (300 of them parked)"));
}

// top --redis without a worker: no waiting messages known, but every
// worker's retries of the campaign grow while its provider answers 5xx.
TEST(WhyLimitedTest, RetriesPerSecondNameServerErrorsWhenNoWorkersWaitingMessagesAreKnown) {
  LimitFacts f = below();
  f.retry_waiting.reset();
  f.provider_server_errors_per_s = 6;
  EXPECT_EQ(limitedByOf(f).code, "below_limits");
  f.retries_per_s = 4.5;
  const LimitedBy l = limitedByOf(f);
  EXPECT_EQ(l.code, "server_errors");
  EXPECT_THAT(l.text, HasSubstr("(6.0/s now): 4.5 retries/s"));
  f.provider_server_errors_per_s = 0;  // retried for another reason
  EXPECT_EQ(limitedByOf(f).code, "below_limits");
}

TEST(WhyLimitedTest, MessagesWaitingForQuietHoursAreNamed) {
  LimitFacts f = below();
  f.quiet_waiting = 1200;
  const LimitedBy l = limitedByOf(f);
  EXPECT_EQ(l.code, "quiet_hours");
  EXPECT_THAT(l.text, HasSubstr("1200 waiting for their recipients' quiet hours"));
  f.achieved.reset();  // before any achieved rate: the waiting messages are the answer, not "unknown"
  EXPECT_EQ(limitedByOf(f).code, "quiet_hours");
}

TEST(WhyLimitedTest, MessagesDeferredByAFrequencyCapAreNamed) {
  LimitFacts f = below();
  f.cap_waiting = 30;
  const LimitedBy l = limitedByOf(f);
  EXPECT_EQ(l.code, "frequency_cap");
  EXPECT_THAT(l.text, HasSubstr("30 waiting for a frequency cap"));
}

TEST(WhyLimitedTest, AtItsOwnOrItsProvidersRateTheRateIsTheAnswerWhateverWaits) {
  LimitFacts f = below();
  f.quiet_waiting = 10;
  f.cap_waiting = 10;
  f.retry_waiting = 10;
  f.provider_server_errors_per_s = 1;
  f.achieved = 95;
  EXPECT_EQ(limitedByOf(f).code, "campaign_rate");
  f.achieved = 50;
  f.provider_achieved = 390;
  EXPECT_EQ(limitedByOf(f).code, "provider_rate");
}

TEST(WhyLimitedTest, AFaultBeatsQuietHoursWhichBeatCaps) {
  LimitFacts f = below();
  f.cap_waiting = 1;
  f.quiet_waiting = 1;
  EXPECT_EQ(limitedByOf(f).code, "quiet_hours");
  f.retry_waiting = 1;
  f.provider_server_errors_per_s = 0.5;
  EXPECT_EQ(limitedByOf(f).code, "server_errors");
  f.provider_paused = true;  // a throttle's pause holds everything back first
  EXPECT_EQ(limitedByOf(f).code, "provider_paused");
  f.provider_circuit_open = true;
  EXPECT_EQ(limitedByOf(f).code, "provider_breaker");
  f.paused = true;
  EXPECT_EQ(limitedByOf(f).code, "paused");
}

TEST(WhyLimitedTest, WithoutAWorkersFactsNothingWaitingIsClaimed) {
  LimitFacts f = below();
  f.retry_waiting.reset();
  f.quiet_waiting.reset();
  f.cap_waiting.reset();
  f.provider_server_errors_per_s = 3;
  EXPECT_EQ(limitedByOf(f).code, "below_limits");
}

HealthFacts healthy() {
  HealthFacts h;
  h.provider = "push";
  h.known = true;
  h.configured = 400;
  h.effective = 400;
  h.server_errors_per_s = 0;
  h.throttled_total = 3;
  h.server_errors_total = 7;
  return h;
}

TEST(ProviderHealthTest, OkCarriesItsCounts) {
  const ProviderHealth h = healthOf(healthy());
  EXPECT_EQ(h.code, "ok");
  EXPECT_EQ(h.text, "ok (3 429/503, 7 5xx in all)");
}

TEST(ProviderHealthTest, APauseAfterA429IsThrottled) {
  HealthFacts f = healthy();
  f.paused = true;
  EXPECT_EQ(healthOf(f).code, "throttled");
  EXPECT_THAT(healthOf(f).text, HasSubstr("paused after a 429/503"));
}

TEST(ProviderHealthTest, AnEffectiveRateBelowTheConfiguredOneIsThrottled) {
  HealthFacts f = healthy();
  f.effective = 260;
  EXPECT_EQ(healthOf(f).code, "throttled");
  EXPECT_THAT(healthOf(f).text, HasSubstr("effective rate 260/s, below the configured 400/s"));
  f.effective = 399;  // within 1%: as configured
  EXPECT_EQ(healthOf(f).code, "ok");
}

TEST(ProviderHealthTest, FiveHundredsNowAreFailing) {
  HealthFacts f = healthy();
  f.server_errors_per_s = 12.5;
  EXPECT_EQ(healthOf(f).code, "failing");
  EXPECT_THAT(healthOf(f).text, HasSubstr("12.5 5xx answers/s now"));
}

TEST(ProviderHealthTest, AnOpenBreakerIsTheWorst) {
  HealthFacts f = healthy();
  f.server_errors_per_s = 12.5;
  f.paused = true;
  f.degraded = true;
  f.circuit_open = true;
  EXPECT_EQ(healthOf(f).code, "breaker_open");
  EXPECT_THAT(healthOf(f).text, HasSubstr("push failed repeatedly"));
}

TEST(ProviderHealthTest, NoAnswerFromRedisIsDegradedBeforeAThrottle) {
  HealthFacts f = healthy();
  f.paused = true;
  f.degraded = true;
  EXPECT_EQ(healthOf(f).code, "degraded");
  EXPECT_THAT(healthOf(f).text, HasSubstr("global quota (Redis) does not answer"));
}

TEST(ProviderHealthTest, NothingReportedIsUnknownNotOk) {
  HealthFacts f;
  f.provider = "push";
  f.configured = 400;
  EXPECT_EQ(healthOf(f).code, "unknown");
  f.known = true;
  EXPECT_EQ(healthOf(f).code, "ok");
}

TEST(ShortWordTest, TopsColumnsNameEveryCode) {
  EXPECT_EQ(shortWord("server_errors"), "5xx retries");
  EXPECT_EQ(shortWord("quiet_hours"), "quiet hours");
  EXPECT_EQ(shortWord("frequency_cap"), "freq cap");
  EXPECT_EQ(shortWord("breaker_open"), "breaker open");
  EXPECT_EQ(shortWord("unknown"), "-");
  EXPECT_EQ(shortWord("throttled"), "throttled");
}

// top's frame with a worker's facts: the same function, shown in its columns.
TEST(TopWhyTest, TopShowsTheHealthAndTheReasonFromTheSameFacts) {
  TopFrame f;
  TopRow r;
  r.id = "promo";
  r.state = "active";
  r.provider = "push";
  r.send_rate = 100;
  r.total = 10000;
  r.sent = 2000;
  r.achieved = 20;
  r.retry_waiting = 40;
  r.quiet_waiting = 0;
  r.cap_waiting = 0;
  f.rows.push_back(r);
  TopProviderRow p;
  p.id = "push";
  p.rate = 400;
  p.effective = 400;
  p.paused = false;
  p.circuit_open = false;
  p.server_errors_per_s = 8;
  p.server_errors = 900;
  p.achieved = 20;
  p.reported = true;
  f.providers.push_back(p);
  fillLimitedBy(f);
  EXPECT_EQ(f.rows[0].limited_code, "server_errors");
  EXPECT_EQ(f.providers[0].health_code, "failing");
  const std::string text = renderTopText(f, 200);
  EXPECT_THAT(text, HasSubstr("5xx retries"));
  EXPECT_THAT(text, HasSubstr("HEALTH"));
  EXPECT_THAT(text, HasSubstr("failing"));
  const auto j = nlohmann::json::parse(renderTopJson(f));
  EXPECT_EQ(j["providers"][0]["health"]["code"], "failing");
  EXPECT_EQ(j["campaigns"][0]["limited_by"]["code"], "server_errors");
}

// A campaign's routes in a worker's state document (docs/routes.md): top
// says which route is failed over, to which provider and why, in its table
// and its JSON; with none failed over, failover is not what holds it.
TEST(TopWhyTest, AFailedOverPrefixRouteIsWhatTopShowsFromTheStateDocument) {
  nlohmann::json worker = {{"route", "sms-a"},
                           {"route_reason", nullptr},
                           {"routes",
                            {{{"prefixes", nlohmann::json::array()}, {"provider", "sms-a"}, {"via", "sms-a"}, {"reason", nullptr}},
                             {{"prefixes", {"44"}}, {"provider", "sms-uk"}, {"via", "sms-uk"}, {"reason", nullptr}}}}};
  EXPECT_FALSE(failoverLimitOfState(worker)) << "every route on its own provider";
  worker["routes"][1]["via"] = "sms-b";
  worker["routes"][1]["reason"] = "sms-uk: circuit breaker open";
  const std::optional<LimitedBy> l = failoverLimitOfState(worker);
  ASSERT_TRUE(l);
  EXPECT_EQ(l->code, "failover");
  EXPECT_EQ(l->text, "route 44 -> sms-uk; failover to sms-b: sms-uk: circuit breaker open");
  // The default route failed over too: both, the default first.
  worker["route"] = "sms-c";
  worker["route_reason"] = "sms-a: binds failing";
  worker["routes"][1]["prefixes"] = {"44", "353"};
  EXPECT_EQ(failoverLimitOfState(worker)->text,
            "via sms-c: sms-a: binds failing | route 44,353 -> sms-uk; failover to sms-b: sms-uk: circuit breaker open");
  // An older worker's document, without routes: the default route as before.
  worker.erase("routes");
  EXPECT_EQ(failoverLimitOfState(worker)->text, "via sms-c: sms-a: binds failing");

  TopFrame f;
  TopRow r;
  r.id = "otp";
  r.state = "active";
  r.provider = "sms-a";
  r.limited_code = l->code;
  r.limited_text = l->text;
  f.rows.push_back(r);
  EXPECT_THAT(renderTopText(f, 200), HasSubstr("route 44 -> sms-uk; failover to sms-b"));
  const auto j = nlohmann::json::parse(renderTopJson(f));
  EXPECT_EQ(j["campaigns"][0]["limited_by"]["text"], l->text);
}

// `pacerctl top` without --admin (PostgreSQL only) and with it (a worker's
// state document merged in) give the same words for a campaign waiting for
// quiet hours or a cap: the parked rows are in both frames.
TEST(TopWhyTest, TopWithAndWithoutAWorkerNamesQuietHoursAndCapsAlike) {
  for (const bool quiet : {true, false}) {
    TopFrame plain;
    TopRow r;
    r.id = "night";
    r.state = "active";
    r.provider = "sms";
    r.send_rate = 100;
    r.total = 10000;
    r.sent = 2000;
    r.achieved = 0;
    r.parked = 8000;
    (quiet ? r.parked_quiet : r.parked_capped) = 8000;
    plain.rows.push_back(r);
    TopProviderRow p;
    p.id = "sms";
    p.rate = 400;
    plain.providers.push_back(p);
    TopFrame live = plain;  // as mergeLive leaves it: the worker holds none of them in memory
    live.rows[0].retry_waiting = 0;
    live.rows[0].quiet_waiting = 0;
    live.rows[0].cap_waiting = 0;
    live.providers[0].effective = 400;
    live.providers[0].paused = false;
    live.providers[0].circuit_open = false;
    live.providers[0].server_errors_per_s = 0;
    live.providers[0].reported = true;
    fillLimitedBy(plain);
    fillLimitedBy(live);
    const std::string code = quiet ? "quiet_hours" : "frequency_cap";
    EXPECT_EQ(plain.rows[0].limited_code, code);
    EXPECT_EQ(live.rows[0].limited_code, code);
    EXPECT_EQ(plain.rows[0].limited_text, live.rows[0].limited_text);
    EXPECT_THAT(renderTopText(plain, 200), HasSubstr(shortWord(code)));
    EXPECT_THAT(renderTopText(live, 200), HasSubstr(shortWord(code)));
  }
}

}  // namespace
}  // namespace pacer::control
