// Issue 16's rules in pacer-sim, on simulated time only: strict priority
// against a bulk backlog, frequency caps over days, quiet hours across zones
// and a DST change, and every shipped scenario file.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <vector>

#include "pacer/sim/simulator.h"
#include "support/series.h"

namespace pacer::sim {
namespace {

using pacer::testing::maxWindowSum;

const SeriesResult& campaign(const SimResult& r, const std::string& id) {
  for (const SeriesResult& c : r.campaigns)
    if (c.id == id) return c;
  throw std::runtime_error("no campaign " + id);
}

TEST(SimPriority, TransactionalWaitsLittleBulkGetsTheRestProviderNeverOver) {
  const Scenario s = parseScenario(R"(
duration_s: 60
tick_ms: 10
providers: [{id: gw, rate: 400, burst: 40}]
campaigns:
  - {id: bulk, provider: gw, class: bulk, weight: 20}
  - {id: otp, provider: gw, class: transactional, arrival_per_s: 50}
)");
  const SimResult r = simulate(s, true);
  const SeriesResult& otp = campaign(r, "otp");
  const SeriesResult& bulk = campaign(r, "bulk");
  ASSERT_TRUE(otp.rules.waits);
  EXPECT_EQ(otp.rules.waits->count, 3000u);  // every arrival sent
  EXPECT_EQ(otp.sent, 3000u);
  EXPECT_LE(otp.rules.waits->p99_ms, 10.0);  // within a tick
  EXPECT_LE(otp.rules.waits->max_ms, 20.0);
  EXPECT_EQ(otp.rules.priority_class, "transactional");
  EXPECT_FALSE(bulk.rules.waits);
  // Bulk has the rest of the gateway: 400/s over the run (plus the burst), less the OTPs.
  EXPECT_GE(bulk.sent, 400u * 60 - 3000 - 10);
  const SeriesResult& gw = r.providers[0];
  EXPECT_LE(gw.sent, 400u * 60 + 40);
  for (std::size_t w = 1; w <= 300; ++w) EXPECT_LE(maxWindowSum(gw.bins, w), 4 * w + 40) << w << " ticks";
}

TEST(SimPriority, WithoutPriorityTheSameStreamWaits) {
  // The contrast: both in one class, bulk weighted 20:1, the OTP share
  // (400/21 = 19/s) is below its 50/s arrivals, so its queue grows.
  const Scenario s = parseScenario(R"(
duration_s: 60
tick_ms: 10
providers: [{id: gw, rate: 400, burst: 40}]
campaigns:
  - {id: bulk, provider: gw, class: bulk, weight: 20}
  - {id: otp, provider: gw, class: bulk, arrival_per_s: 50}
)");
  const SimResult r = simulate(s, false);
  EXPECT_GT(campaign(r, "otp").rules.waits->p99_ms, 10000.0);
}

TEST(SimPriority, WaitsAreMeasuredFromEachMessagesArrivalInstant) {
  // 30/s against 10 ms ticks: message n arrives at n x 33.3 ms, between
  // ticks, and nothing holds it back, so it waits less than a tick.
  const SimResult r = simulate(parseScenario(R"(
duration_s: 10
tick_ms: 10
campaigns: [{id: a, class: transactional, arrival_per_s: 30}]
)"), false);
  const WaitStats& w = *campaign(r, "a").rules.waits;
  EXPECT_EQ(w.count, 300u);
  EXPECT_GT(w.max_ms, 0.0);
  EXPECT_LT(w.max_ms, 10.0);
  EXPECT_NEAR(w.p50_ms, 3.3, 0.05);  // waits cycle 0, 6.7, 3.3 ms
  EXPECT_NEAR(w.max_ms, 6.7, 0.05);
}

TEST(SimCaps, SuppressedMatchesAnIndependentCountAndNoRecipientIsOverTheCap) {
  // 10 messages to each of 100 recipients within a minute, 3 per 24 h.
  const SimResult short_run = simulate(parseScenario(R"(
duration_s: 60
campaigns:
  - {id: a, rate: 100, burst: 1, messages: 1000, recipients: 100, cap: "3/24h"}
)"), false);
  const SeriesResult& a = campaign(short_run, "a");
  EXPECT_EQ(a.sent, 300u);
  EXPECT_EQ(a.rules.suppressed, 700u);
  EXPECT_EQ(a.rules.recipients_over_cap, 0u);
  ASSERT_TRUE(a.finished_s);

  // Three days, one grant a second (rate 1, burst 1, 1 s ticks) round-robin
  // over 50 recipients: count the suppressions independently.
  const SimResult r = simulate(parseScenario(R"(
duration_s: 259200
tick_ms: 1000
campaigns:
  - {id: b, rate: 1, burst: 1, recipients: 50, cap: "3/24h"}
)"), false);
  const SeriesResult& b = campaign(r, "b");
  ASSERT_EQ(b.sent + b.rules.suppressed, 259200u);  // one grant per tick, as modelled below
  std::map<std::uint64_t, std::vector<std::int64_t>> sends;
  std::uint64_t suppressed = 0;
  for (std::int64_t t = 0; t < 259200; ++t) {
    std::vector<std::int64_t>& v = sends[static_cast<std::uint64_t>(t) % 50];
    std::size_t in_window = 0;
    for (std::int64_t x : v) in_window += x + 86400 > t ? 1 : 0;
    if (in_window < 3) {
      v.push_back(t);
    } else {
      ++suppressed;
    }
  }
  EXPECT_EQ(b.rules.suppressed, suppressed);
  EXPECT_EQ(b.sent, 50u * 3 * 3);
  EXPECT_EQ(b.rules.recipients_over_cap, 0u);
}

TEST(SimCaps, DeferredMessagesGoWhenTheCapAllows) {
  const SimResult r = simulate(parseScenario(R"(
duration_s: 10800
tick_ms: 1000
campaigns:
  - {id: a, rate: 10, burst: 10, messages: 50, recipients: 10, cap: "3/1h", cap_policy: defer}
)"), false);
  const SeriesResult& a = campaign(r, "a");
  EXPECT_EQ(a.sent, 50u);
  EXPECT_EQ(a.rules.suppressed, 0u);
  EXPECT_GT(a.rules.deferred, 0u);
  EXPECT_EQ(a.rules.recipients_over_cap, 0u);
  EXPECT_EQ(a.rules.waiting, 0u);
  ASSERT_TRUE(a.finished_s);
  EXPECT_GE(*a.finished_s, 3600.0);  // the 4th and 5th of each wait an hour
  EXPECT_LT(*a.finished_s, 3700.0);
}

TEST(SimQuietHours, NothingInsideTheWindowAndReleasePacedAcrossZonesAndDst) {
  const SimResult r = simulate(parseScenario(R"(
duration_s: 172800
tick_ms: 1000
start_utc: "2024-03-09T12:00:00Z"
campaigns:
  - id: a
    rate: 5
    burst: 5
    messages: 40000
    quiet_hours: "21:00-08:00"
    time_zones: [America/New_York, Europe/London, Asia/Kolkata, Pacific/Auckland]
)"), false);
  const SeriesResult& a = campaign(r, "a");
  EXPECT_EQ(a.rules.sent_in_quiet_window, 0u);
  EXPECT_GT(a.rules.quiet_held, 0u);
  EXPECT_EQ(a.sent, 40000u);
  EXPECT_EQ(a.rules.waiting, 0u);
  // When a window ends the held messages come back as backlog: the release
  // is still paced by the campaign's token bucket.
  for (std::size_t w = 1; w <= 3600; w *= 2) EXPECT_LE(maxWindowSum(a.per_s, w), 5 * w + 5) << w << " s";
}

TEST(SimQuietHours, NewYorkAcrossTheSpringChangeCheckedByHand) {
  // One zone. The run starts at 07:00 EST (quiet until 08:00, 1 h in), then
  // quiet from 21:00 EST on 9 March (02:00Z on the 10th, 14 h in) to 08:00
  // EDT on the 10th (12:00Z, 24 h in); were the change ignored it would end
  // at 13:00Z.
  const SimResult r = simulate(parseScenario(R"(
duration_s: 108000
tick_ms: 1000
start_utc: "2024-03-09T12:00:00Z"
campaigns:
  - {id: a, rate: 1, burst: 1, quiet_hours: "21:00-08:00", time_zones: [America/New_York]}
)"), false);
  const SeriesResult& a = campaign(r, "a");
  for (std::size_t t = 0; t < a.per_s.size(); ++t) {
    const bool quiet = t < 3600 || (t >= 14 * 3600 && t < 24 * 3600);
    if (quiet) {
      ASSERT_EQ(a.per_s[t], 0u) << "second " << t;
    } else {
      ASSERT_GE(a.per_s[t], 1u) << "second " << t;  // backlogged: sends every second it may
    }
  }
  EXPECT_EQ(a.rules.sent_in_quiet_window, 0u);
}

TEST(SimQuietHours, TooManyHeldMessagesIsAScenarioErrorNotAnOutOfMemory) {
  // A backlog at 1,000,000/s held for a whole quiet night.
  const Scenario s = parseScenario(R"(
duration_s: 86400
tick_ms: 1000
start_utc: "2024-01-01T00:00:00Z"
campaigns: [{id: a, rate: 1000000, quiet_hours: "21:00-08:00"}]
)");
  try {
    simulate(s, false);
    FAIL() << "no error";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("campaigns (a): more than 10000000 messages held at once"), std::string::npos)
        << e.what();
  }
}

TEST(SimShippedScenarios, EveryFileParsesAndRuns) {
  std::size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(PACER_SCENARIO_DIR)) {
    if (e.path().extension() != ".yaml") continue;
    ++files;
    SCOPED_TRACE(e.path().string());
    const Scenario s = loadScenario(e.path().string());
    const SimResult r = simulate(s, false);
    ASSERT_EQ(r.campaigns.size(), s.campaigns.size());
    std::uint64_t sent = 0;
    for (const SeriesResult& c : r.campaigns) {
      sent += c.sent;
      EXPECT_EQ(c.rules.recipients_over_cap, 0u) << c.id;
      EXPECT_EQ(c.rules.sent_in_quiet_window, 0u) << c.id;
    }
    EXPECT_GT(sent, 0u);
  }
  for (const char* name : {"demo.yaml", "example.yaml", "priority.yaml", "caps.yaml", "quiet_hours.yaml"})
    EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(PACER_SCENARIO_DIR) / name)) << name;
  EXPECT_GE(files, 5u);
}

}  // namespace
}  // namespace pacer::sim
