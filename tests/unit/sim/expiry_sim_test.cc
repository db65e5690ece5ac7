// Expiry, provider outages and failover in the simulator (issue 26): what an
// operator asks with "with this backlog and this outage, how many OTPs
// expire?". Expected counts are worked out by hand from the scenario's
// rates (comments give the arithmetic), not read from the simulator.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <numeric>

#include "pacer/sim/report.h"
#include "pacer/sim/simulator.h"
#include "support/series.h"

namespace pacer::sim {
namespace {

using pacer::testing::maxWindowSum;

const SeriesResult& named(const std::vector<SeriesResult>& all, const std::string& id) {
  for (const SeriesResult& x : all)
    if (x.id == id) return x;
  throw std::runtime_error("no series " + id);
}

std::uint64_t sumOf(const std::vector<std::uint64_t>& v, std::size_t from, std::size_t to) {
  return std::accumulate(v.begin() + static_cast<std::ptrdiff_t>(from), v.begin() + static_cast<std::ptrdiff_t>(to),
                         std::uint64_t{0});
}

// Every window of the series within rate x span + burst.
void expectWithin(const SeriesResult& x, double rate, double burst, double tick_ms) {
  for (std::size_t w : {1, 2, 10, 100, 500, 1000, 3000}) {
    const double bound = rate * static_cast<double>(w - 1) * tick_ms / 1000.0 + burst;
    EXPECT_LE(static_cast<double>(maxWindowSum(x.bins, w)), bound + 1e-6) << x.id << " window " << w << " ticks";
  }
}

TEST(ExpirySim, ExpiredMessagesTakeNoTokenAndNoneIsSentPastItsDeadline) {
  // 100/s arrive, the campaign may send 50/s, each message lives 1 s: half
  // of them expire. Were an expired message to take a token, the campaign
  // would send fewer than 50 in some second; none may wait 1 s or more.
  const SimResult r = simulate(parseScenario(R"(
duration_s: 15
campaigns: [{id: otp, rate: 50, burst: 1, arrival_per_s: 100, messages: 1000, ttl_s: 1}]
)"),
                               false);
  const SeriesResult& otp = named(r.campaigns, "otp");
  for (std::size_t sec = 1; sec < 11; ++sec) EXPECT_EQ(otp.per_s[sec], 50u) << "second " << sec;
  EXPECT_EQ(otp.sent + otp.rules.expired, 1000u);
  // The campaign sends 50/s (+ its burst of 1) from 0 until the last
  // arrival (9.99 s) is 1 s old: about 551 sent, 449 expired.
  EXPECT_GE(otp.rules.expired, 447u);
  EXPECT_LE(otp.rules.expired, 451u);
  ASSERT_TRUE(otp.rules.waits);
  EXPECT_LT(otp.rules.waits->max_ms, 1000.0);
  ASSERT_TRUE(otp.finished_s);
  EXPECT_LE(*otp.finished_s, 11.0);
}

TEST(ExpirySim, BacklogBehindAnOutageExpiresWhatCannotGoBeforeItsDeadline) {
  // 3000 OTPs queued at 0 with a lifetime of 20 s; their provider is out for
  // the first 10 s, then takes 100/s: 10 s x 100/s (+ its burst of 2) go,
  // the rest expire at 20 s. Nothing goes during the outage.
  const SimResult r = simulate(parseScenario(R"(
duration_s: 30
providers: [{id: sms, rate: 100, outages: [{from_s: 0, to_s: 10}]}]
campaigns: [{id: otp, provider: sms, messages: 3000, ttl_s: 20}]
)"),
                               false);
  const SeriesResult& otp = named(r.campaigns, "otp");
  const SeriesResult& sms = named(r.providers, "sms");
  EXPECT_EQ(sumOf(sms.per_s, 0, 10), 0u);
  EXPECT_EQ(sumOf(sms.per_s, 20, 30), 0u);
  EXPECT_GE(otp.sent, 1000u);
  EXPECT_LE(otp.sent, 1002u);
  EXPECT_EQ(otp.rules.expired, 3000u - otp.sent);
  ASSERT_TRUE(otp.finished_s);
  EXPECT_DOUBLE_EQ(*otp.finished_s, 20.0);  // the scan at the deadline finishes it
}

TEST(ExpirySim, TheEarlierOfTheCampaignAndMessageLifetimesWins) {
  // As above with a campaign lifetime of 60 s and messages that carry 15 s:
  // 15 s is the deadline, so 5 s x 100/s (+2) go.
  const SimResult r = simulate(parseScenario(R"(
duration_s: 30
providers: [{id: sms, rate: 100, outages: [{from_s: 0, to_s: 10}]}]
campaigns: [{id: otp, provider: sms, messages: 3000, ttl_s: 60, message_ttl_s: 15}]
)"),
                               false);
  const SeriesResult& otp = named(r.campaigns, "otp");
  EXPECT_GE(otp.sent, 500u);
  EXPECT_LE(otp.sent, 502u);
  EXPECT_EQ(otp.rules.expired, 3000u - otp.sent);
  EXPECT_EQ(otp.rules.lifetime_s, 15.0);
}

// 50 OTPs/s, each with 10 s to live, to a provider of 100/s that is out
// from 10 s to 40 s; the failover scenario adds a second one of 20/s.
constexpr const char* kOtpOutage = R"(
duration_s: 60
providers:
  - {{id: a, rate: 100, outages: [{{from_s: 10, to_s: 40}}]}}
  - {{id: b, rate: 20}}
campaigns: [{{id: otp, provider: {}, arrival_per_s: 50, messages: 3000, message_ttl_s: 10}}]
)";

TEST(ExpirySim, WithoutFailoverAnOutageExpiresEveryOtpThatWaitsItOut) {
  // Arrivals from 10 s to 30 s wait more than 10 s: 20 s x 50/s = 1000
  // expire. Those from 30 s on go when a is back at 40 s (it drains the 500
  // at 100/s against 50/s arriving, each younger than 10 s when sent).
  const SimResult r = simulate(parseScenario(fmt::format(kOtpOutage, "a")), true);
  const SeriesResult& otp = named(r.campaigns, "otp");
  EXPECT_GE(otp.rules.expired, 998u);
  EXPECT_LE(otp.rules.expired, 1002u);
  EXPECT_EQ(otp.sent + otp.rules.expired, 3000u);
  EXPECT_EQ(sumOf(named(r.providers, "a").per_s, 10, 40), 0u);
  EXPECT_EQ(named(r.providers, "b").sent, 0u);
  EXPECT_TRUE(otp.by_provider.empty());
}

TEST(ExpirySim, FailoverCarriesTrafficWithinTheSecondProvidersRateAndReturns) {
  // With b taking 20/s while a is out, the queue grows by 30/s; the head
  // reaches 10 s of age and from then 20/s go and 30/s expire. By 40 s:
  // 1500 arrived in the outage, b sent 600, the last 10 s (500) still wait:
  // 400 expired. a takes over again at 40 s and nothing more expires.
  const SimResult r = simulate(parseScenario(fmt::format(kOtpOutage, "[a, b]")), true);
  const SeriesResult& otp = named(r.campaigns, "otp");
  const SeriesResult& a = named(r.providers, "a");
  const SeriesResult& b = named(r.providers, "b");
  EXPECT_GE(otp.rules.expired, 397u);
  EXPECT_LE(otp.rules.expired, 403u);
  EXPECT_EQ(otp.sent + otp.rules.expired, 3000u);
  EXPECT_EQ(sumOf(a.per_s, 10, 40), 0u);
  EXPECT_EQ(sumOf(b.per_s, 0, 10) + sumOf(b.per_s, 40, 60), 0u);  // only while a is out
  for (std::size_t sec = 11; sec < 40; ++sec) EXPECT_EQ(b.per_s[sec], 20u) << "second " << sec;
  expectWithin(b, 20, b.burst, r.tick_ms);
  expectWithin(a, 100, a.burst, r.tick_ms);
  ASSERT_EQ(otp.by_provider.size(), 2u);
  EXPECT_EQ(otp.by_provider[0].first, "a");
  EXPECT_EQ(otp.by_provider[0].second, a.sent);
  EXPECT_EQ(otp.by_provider[1].second, b.sent);
  EXPECT_EQ(a.sent + b.sent, otp.sent);
  ASSERT_TRUE(otp.rules.waits);
  EXPECT_LT(otp.rules.waits->max_ms, 10000.0);
}

TEST(ExpirySim, ACampaignsRateHoldsAcrossItsProviders) {
  // The campaign's 50/s (burst 5) over a switch to b and back: its one bucket
  // moves with it, so no route adds a burst of its own.
  const SimResult r = simulate(parseScenario(R"(
duration_s: 12
providers:
  - {id: a, rate: 1000, outages: [{from_s: 3, to_s: 6}, {from_s: 8, to_s: 8.5}]}
  - {id: b, rate: 1000}
campaigns: [{id: c, provider: [a, b], rate: 50, burst: 5}]
)"),
                               true);
  const SeriesResult& c = named(r.campaigns, "c");
  expectWithin(c, 50, 5, r.tick_ms);
  EXPECT_GE(c.sent, 50u * 12 - 1);
  EXPECT_GT(named(r.providers, "b").sent, 0u);
}

TEST(ExpirySim, WhenEveryProviderIsOutNothingGoesAndTheBacklogWaits) {
  const SimResult r = simulate(parseScenario(R"(
duration_s: 10
providers:
  - {id: a, rate: 100, outages: [{from_s: 2, to_s: 6}]}
  - {id: b, rate: 100, outages: [{from_s: 1, to_s: 7}]}
campaigns: [{id: c, provider: [a, b], messages: 600}]
)"),
                               false);
  const SeriesResult& c = named(r.campaigns, "c");
  EXPECT_EQ(sumOf(c.per_s, 2, 6), 0u);
  EXPECT_EQ(c.sent, 600u);  // about 200 before 2 s, the rest from 6 s at 100/s
  EXPECT_EQ(named(r.providers, "a").sent, 600u);
  EXPECT_EQ(named(r.providers, "b").sent, 0u);  // out whenever a was
}

TEST(ExpirySim, AnotherProvidersOutageLeavesAModelledProviderToItsController) {
  // per_throttle pauses its campaign on every throttle; an outage elsewhere
  // must not resume it early: the run is the same with or without it.
  const std::string base = R"(
duration_s: 20
tick_ms: 5
providers:
  - {id: noisy, rate: 400, throttle_noise: 0.1, controller: per_throttle}
  - {id: other, rate: 100%s}
campaigns: [{id: otp, provider: noisy}, {id: bulk, provider: other}]
)";
  auto with = [&](const std::string& outages) {
    std::string yaml = base;
    yaml.replace(yaml.find("%s"), 2, outages);
    return simulate(parseScenario(yaml), true);
  };
  const SimResult quiet = with("");
  const SimResult out = with(", outages: [{from_s: 2, to_s: 15}]");
  const SeriesResult& a = named(quiet.campaigns, "otp");
  const SeriesResult& b = named(out.campaigns, "otp");
  EXPECT_GT(named(quiet.providers, "noisy").answers->throttled, 0u);
  EXPECT_EQ(a.bins, b.bins);
  EXPECT_LT(named(out.campaigns, "bulk").sent, named(quiet.campaigns, "bulk").sent);
}

TEST(ExpirySim, ARefusedMessageRetriesWithItsOwnDeadlineAndExpiresWhenItPasses) {
  // A provider that throttles 20% at random, retries 1.5 s later, and OTPs
  // that live 2 s arriving faster than it accepts: a refused message may be
  // refused again and expire while it waits. Each OTP is accepted once or
  // expires, and the provider's attempts are its accepts and refusals only.
  const SimResult r = simulate(parseScenario(R"(
duration_s: 30
providers: [{id: n, rate: 100, throttle_noise: 0.2, controller: fixed, retry_s: 1.5, seed: 7}]
campaigns: [{id: otp, provider: n, arrival_per_s: 100, messages: 2000, ttl_s: 2}]
)"),
                               false);
  const SeriesResult& otp = named(r.campaigns, "otp");
  const SeriesResult& n = named(r.providers, "n");
  ASSERT_TRUE(n.answers);
  EXPECT_GT(n.answers->throttled, 300u);
  EXPECT_GT(otp.rules.expired, 0u);
  EXPECT_EQ(otp.sent, n.sent);
  EXPECT_EQ(otp.sent + otp.rules.expired, 2000u);
  EXPECT_EQ(n.answers->attempts, n.sent + n.answers->throttled + n.answers->faults);
  // About 80/s accepted for 20 s of arrivals at 100/s, plus what the
  // queue still holds in time: well over 1500, well under 2000.
  EXPECT_GE(otp.sent, 1500u);
  EXPECT_LT(otp.sent, 1900u);
  ASSERT_TRUE(otp.rules.waits);
  // Each OTP's wait is counted once, at its first send: every accepted one,
  // and those refused that then expired.
  EXPECT_GE(otp.rules.waits->count, otp.sent);
  EXPECT_LE(otp.rules.waits->count, 2000u);
  EXPECT_LT(otp.rules.waits->max_ms, 2000.0);
  ASSERT_TRUE(otp.finished_s);
}

TEST(ExpirySim, MessagesHeldByQuietHoursExpireInsteadOfGoingAtDawn) {
  // Midnight to 08:00 is quiet; the run covers 10 s of it and the messages
  // live 5 s: each was held, none sent, all expired by the end.
  const SimResult r = simulate(parseScenario(R"(
duration_s: 10
start_utc: "2024-01-01T00:00:00Z"
campaigns: [{id: c, rate: 100, messages: 100, quiet_hours: "00:00-08:00", ttl_s: 5}]
)"),
                               false);
  const SeriesResult& c = named(r.campaigns, "c");
  EXPECT_EQ(c.sent, 0u);
  EXPECT_EQ(c.rules.quiet_held, 100u);
  EXPECT_EQ(c.rules.expired, 100u);
  EXPECT_EQ(c.rules.waiting, 0u);
}

TEST(ExpirySim, TheSummaryAndJsonSayHowManyExpiredAndWhoCarriedThem) {
  const Scenario s = parseScenario(fmt::format(kOtpOutage, "[a, b]"));
  const SimResult r = simulate(s, false);
  const std::string table = summaryTable(s, r);
  const SeriesResult& otp = named(r.campaigns, "otp");
  EXPECT_NE(table.find(fmt::format("lifetime 10 s: expired {} of 3000", otp.rules.expired)), std::string::npos)
      << table;
  EXPECT_NE(table.find(fmt::format("carried by (in failover order): a {}, b {}", otp.by_provider[0].second,
                                   otp.by_provider[1].second)),
            std::string::npos)
      << table;
  char* buf = nullptr;
  std::size_t len = 0;
  std::FILE* out = open_memstream(&buf, &len);
  writeJson(out, r, false, 0);
  std::fclose(out);
  const std::string json(buf, len);
  std::free(buf);
  EXPECT_NE(json.find(fmt::format("\"lifetime_s\": 10, \"expired\": {}", otp.rules.expired)), std::string::npos);
  EXPECT_NE(json.find(fmt::format("\"by_provider\": {{\"a\": {}, \"b\": {}}}", otp.by_provider[0].second,
                                  otp.by_provider[1].second)),
            std::string::npos)
      << json;
}

TEST(ExpirySim, ScenarioRefusesWhatItCannotSimulate) {
  auto error = [](const std::string& yaml) {
    try {
      parseScenario(yaml);
    } catch (const ScenarioError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error("duration_s: 1\ncampaigns: [{id: c, ttl_s: 5}]").find("needs messages or arrival_per_s"),
            std::string::npos);
  EXPECT_NE(error("duration_s: 1\ncampaigns: [{id: c, messages: 1, ttl_s: 0}]").find("campaigns[0].ttl_s"),
            std::string::npos);
  EXPECT_NE(
      error("duration_s: 1\ncampaigns: [{id: c, messages: 1, message_ttl_s: lots}]").find("campaigns[0].message_ttl_s"),
      std::string::npos);
  EXPECT_NE(error("duration_s: 1\nproviders: [{id: a}]\ncampaigns: [{id: c, provider: [a, a]}]").find("named twice"),
            std::string::npos);
  EXPECT_NE(error("duration_s: 1\nproviders: [{id: a}]\ncampaigns: [{id: c, provider: [a, z]}]")
                .find("no provider with id 'z'"),
            std::string::npos);
  EXPECT_NE(error("duration_s: 1\nproviders: [{id: a}]\ncampaigns: [{id: c, provider: []}]").find("non-empty list"),
            std::string::npos);
  EXPECT_NE(error("duration_s: 1\nproviders: [{id: a, outages: [{from_s: 2, to_s: 1}]}]\ncampaigns: [{id: c}]")
                .find("providers[0].outages[0].to_s"),
            std::string::npos);
  const std::string noisy = "duration_s: 1\nproviders: [{id: n, rate: 10, throttle_noise: 0.1}, {id: a}]\n";
  EXPECT_NE(error(noisy + "campaigns: [{id: c, provider: [n, a]}]").find("not simulated"), std::string::npos);
  EXPECT_NE(error(noisy + "campaigns: [{id: c, provider: [a, n]}]").find("not simulated"), std::string::npos);
  EXPECT_NE(error("duration_s: 1\nproviders: [{id: n, rate: 10, capacity: 5, outages: [{from_s: 0, to_s: 1}]}]\n"
                  "campaigns: [{id: c}]")
                .find("providers[0].outages"),
            std::string::npos);
}

}  // namespace
}  // namespace pacer::sim
