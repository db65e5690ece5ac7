// WorkerCore's prefix routes (docs/routes.md) on a simulated clock: a number
// that starts with a route's prefix goes through that route's provider, any
// other through the campaign's own; each provider's rate and the campaign's
// rate hold in every window, nothing is lost when the routes change, and
// every ledger row names the provider that carried its message.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "pacer/error.h"
#include "pacer/worker.h"
#include "support/worker_fixture.h"

namespace pacer {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;

// Every third number is British (+44...), every third American (1...).
std::string number(int i) {
  switch (i % 3) {
    case 0: return "+4477009" + std::to_string(10000 + i);
    case 1: return "1202555" + std::to_string(10000 + i);
    default: return "3361234" + std::to_string(10000 + i);
  }
}

class WorkerPrefixRoutesTest : public test_support::WorkerCoreFixture {
 protected:
  void make(WorkerOptions o = {}) {
    o.ledger_flush_interval = milliseconds(10);
    makeCore(o);
    core_->upsertProvider(ProviderInfo{"sms-a", RateLimit{100, 5}}, clock_.now());
    core_->upsertProvider(ProviderInfo{"sms-b", RateLimit{100, 5}}, clock_.now());
    core_->upsertProvider(ProviderInfo{"sms-uk", RateLimit{40, 4}}, clock_.now());
    core_->upsertProvider(ProviderInfo{"sms-us", RateLimit{1000, 10}}, clock_.now());
  }
  // Offers the campaign otp messages [from, to), to number(i).
  void offer(int from, int to) {
    for (int i = from; i < to; ++i) core_->offer(rawMessage(i, "otp", number(i)), clock_.now());
  }
  // Each message handed over once, its row `sent` naming the provider it
  // went to, and that provider the one its number routes to.
  void expectEachRoutedOnce(const std::map<std::string, std::string>& by_prefix, const std::string& fallback) {
    std::map<std::string, std::string> carrier;
    for (const Message& m : sink_.submitted) {
      EXPECT_TRUE(carrier.emplace(m.id, m.provider).second) << m.id << " twice";
      std::string want = fallback;
      std::size_t best = 0;
      const std::string digits = m.recipient[0] == '+' ? m.recipient.substr(1) : m.recipient;
      for (const auto& [prefix, provider] : by_prefix)
        if (digits.rfind(prefix, 0) == 0 && prefix.size() > best) {
          best = prefix.size();
          want = provider;
        }
      EXPECT_EQ(m.provider, want) << m.recipient;
    }
    EXPECT_EQ(ledger_.byId.size(), carrier.size());
    for (const auto& [id, row] : ledger_.byId) {
      EXPECT_EQ(row.status, DeliveryStatus::kSent) << id;
      EXPECT_EQ(row.provider, carrier[id]) << id;
    }
  }
};

// Unlimited campaign: each provider's own rate is the bound; British
// numbers at sms-uk's 40/s, the rest at sms-a's 100/s, nothing lost.
TEST_F(WorkerPrefixRoutesTest, NumbersWithThePrefixGoThroughTheRoutesProviderAndTheRestThroughTheCampaigns) {
  sink_.instant = true;
  make();
  core_->upsertCampaign(campaignOn("otp", "sms-a", {}, {{"44", "sms-uk"}}), clock_.now());
  offer(0, 600);  // 200 British, 400 others
  const MonoTime t0 = clock_.now();
  runAndFlush(seconds(3));
  EXPECT_GE(sentVia("sms-uk", t0, t0 + seconds(3)), 3 * 40u - 10u) << "sms-uk at its rate";
  EXPECT_GE(sentVia("sms-a", t0, t0 + seconds(3)), 3 * 100u - 10u) << "sms-a at its rate, not held by sms-uk";
  runAndFlush(seconds(5));
  EXPECT_EQ(sink_.submitted.size(), 600u);
  EXPECT_LE(maxPerSecond("sms-uk"), 40u + 4u);
  EXPECT_LE(maxPerSecond("sms-a"), 100u + 5u);
  expectEachRoutedOnce({{"44", "sms-uk"}}, "sms-a");
  const std::vector<CampaignStats> stats = core_->campaignStats();
  ASSERT_EQ(stats.size(), 1u) << "the lanes are one campaign to every reader";
  EXPECT_EQ(stats[0].id, "otp");
  EXPECT_EQ(stats[0].sent, 600u);
  EXPECT_EQ(stats[0].queued, 0u);
}

// The campaign's rate (60/s, burst 6) holds for the campaign as a whole:
// split between its two providers, whatever the mix of numbers.
TEST_F(WorkerPrefixRoutesTest, TheCampaignsRateHoldsForAllItsRoutesTogether) {
  sink_.instant = true;
  make();
  core_->upsertCampaign(campaignOn("otp", "sms-a", {}, {{"44", "sms-b"}, {"1", "sms-b"}}, RateLimit{60, 6}),
                        clock_.now());
  offer(0, 900);
  const MonoTime t0 = clock_.now();
  runAndFlush(seconds(4));
  EXPECT_LE(maxPerSecond(""), 60u + 6u);
  EXPECT_LE(maxPerSecond("sms-a"), 30u + 3u);
  EXPECT_LE(maxPerSecond("sms-b"), 30u + 3u);
  EXPECT_GE(sentVia("", t0, t0 + seconds(4)), 4 * 60u - 10u) << "both lanes busy: the whole rate is used";
  ASSERT_EQ(core_->campaignStats().size(), 1u);
  EXPECT_EQ(core_->campaignStats()[0].limit->rate_per_s, 60.0) << "shown as configured, not as split";
  runAndFlush(seconds(18));  // sms-b's lane has 600 at 30/s
  EXPECT_EQ(sink_.submitted.size(), 900u);
  expectEachRoutedOnce({{"44", "sms-b"}, {"1", "sms-b"}}, "sms-a");
}

// The longest prefix wins, a route may name the campaign's own provider to
// carve a prefix out of a shorter one, and a third provider takes its own.
TEST_F(WorkerPrefixRoutesTest, TheLongestPrefixWins) {
  sink_.instant = true;
  make();
  const std::vector<PrefixRoute> routes{{"4", "sms-uk"}, {"4477009100", "sms-a"}, {"1", "sms-us"}};
  core_->upsertCampaign(campaignOn("otp", "sms-a", {}, routes), clock_.now());
  offer(0, 300);
  runAndFlush(seconds(10));
  EXPECT_EQ(sink_.submitted.size(), 300u);
  expectEachRoutedOnce({{"4", "sms-uk"}, {"4477009100", "sms-a"}, {"1", "sms-us"}}, "sms-a");
  EXPECT_GT(sentVia("sms-us", MonoTime{}, clock_.now()), 0u);
}

// Routes added and removed while messages wait: what is queued goes where
// its number routes now; none is lost or sent twice.
TEST_F(WorkerPrefixRoutesTest, QueuedMessagesFollowAChangeOfRoutes) {
  sink_.instant = true;
  make();
  core_->upsertCampaign(campaignOn("otp", "sms-a", {}, {}), clock_.now());
  offer(0, 300);
  runAndFlush(milliseconds(500));
  EXPECT_EQ(sentVia("sms-uk", MonoTime{}, clock_.now()), 0u);
  core_->upsertCampaign(campaignOn("otp", "sms-a", {}, {{"44", "sms-uk"}}), clock_.now());
  const MonoTime routed = clock_.now();
  runAndFlush(milliseconds(500));
  EXPECT_GE(sentVia("sms-uk", routed, clock_.now()), 15u) << "queued British numbers moved to sms-uk";
  core_->upsertCampaign(campaignOn("otp", "sms-a", {}, {}), clock_.now());
  const MonoTime unrouted = clock_.now();
  runAndFlush(seconds(4));
  EXPECT_EQ(sentVia("sms-uk", unrouted + milliseconds(10), clock_.now()), 0u);
  EXPECT_EQ(sink_.submitted.size(), 300u);
  std::map<std::string, int> seen;
  for (const Message& m : sink_.submitted) EXPECT_EQ(++seen[m.id], 1) << m.id;
  EXPECT_EQ(ledger_.byId.size(), 300u);
  for (const auto& [id, row] : ledger_.byId) EXPECT_EQ(row.status, DeliveryStatus::kSent) << id;
}

// Failover still serves the default route: sms-a down, the numbers no
// prefix matches go through sms-b; British ones stay on sms-uk.
TEST_F(WorkerPrefixRoutesTest, TheDefaultRouteFailsOver) {
  sink_.instant = true;
  make();
  CampaignInfo c = campaignOn("otp", "sms-a", {}, {{"44", "sms-uk"}});
  c.failover = {"sms-b"};
  core_->upsertCampaign(c, clock_.now());
  core_->setProviderDown("sms-a", "binds failing", clock_.now());
  offer(0, 120);
  runAndFlush(seconds(3));
  EXPECT_EQ(sink_.submitted.size(), 120u);
  expectEachRoutedOnce({{"44", "sms-uk"}}, "sms-b");
}

// A route's provider down (its binds failing): the numbers of that route go
// to the campaign's failover list, at that provider's rate; the default
// route stays on sms-a; when sms-uk is back they return to it. Every row
// names the provider that carried its message.
TEST_F(WorkerPrefixRoutesTest, ARoutesProviderFailsOverToTheCampaignsListAndBack) {
  sink_.instant = true;
  make();
  core_->upsertCampaign(campaignOn("otp", "sms-a", {"sms-b"}, {{"44", "sms-uk"}}), clock_.now());
  offer(0, 1200);  // 400 British
  runAndFlush(seconds(1));
  EXPECT_EQ(sentVia("sms-b", MonoTime{}, clock_.now()), 0u) << "nothing failed: nothing to sms-b";
  core_->setProviderDown("sms-uk", "binds failing", clock_.now());
  const MonoTime down = clock_.now();
  runAndFlush(seconds(2));
  EXPECT_EQ(sentVia("sms-uk", down + milliseconds(10), clock_.now()), 0u) << "nothing to the provider that is down";
  EXPECT_GE(sentVia("sms-b", down, clock_.now()), 2 * 100u - 10u) << "British numbers at sms-b's rate";
  EXPECT_GE(sentVia("sms-a", down, clock_.now()), 2 * 100u - 10u) << "the default route unaffected";
  // Each route says where its traffic goes and why; the default is untouched.
  const CampaignStats during = statsOf("otp");
  EXPECT_EQ(during.route, "sms-a");
  EXPECT_EQ(during.route_reason, "");
  ASSERT_EQ(during.routes.size(), 2u);
  EXPECT_EQ(during.routes[0], (RouteStatus{{}, "sms-a", "sms-a", ""}));
  EXPECT_EQ(during.routes[1], (RouteStatus{{"44"}, "sms-uk", "sms-b", "sms-uk: binds failing"}));
  core_->setProviderDown("sms-uk", std::nullopt, clock_.now());
  const MonoTime up = clock_.now();
  runAndFlush(seconds(9));
  EXPECT_EQ(sentVia("sms-b", up + milliseconds(10), clock_.now()), 0u) << "back on sms-uk";
  ASSERT_EQ(statsOf("otp").routes.size(), 2u);
  EXPECT_EQ(statsOf("otp").routes[1], (RouteStatus{{"44"}, "sms-uk", "sms-uk", ""}));
  EXPECT_GE(sentVia("sms-uk", up, up + seconds(1)), 40u - 5u);
  EXPECT_LE(maxPerSecond("sms-uk"), 40u + 4u);
  EXPECT_LE(maxPerSecond("sms-a"), 100u + 5u);
  EXPECT_LE(maxPerSecond("sms-b"), 100u + 5u);
  ASSERT_EQ(sink_.submitted.size(), 1200u);
  std::map<std::string, std::string> carrier;
  for (const Message& m : sink_.submitted) {
    EXPECT_TRUE(carrier.emplace(m.id, m.provider).second) << m.id << " twice";
    const bool british = m.recipient.rfind("+44", 0) == 0;
    if (british)
      EXPECT_NE(m.provider, "sms-a") << m.recipient;
    else
      EXPECT_EQ(m.provider, "sms-a") << m.recipient;
  }
  ASSERT_EQ(ledger_.byId.size(), 1200u);
  for (const auto& [id, row] : ledger_.byId) {
    EXPECT_EQ(row.status, DeliveryStatus::kSent) << id;
    EXPECT_EQ(row.provider, carrier[id]) << id;
  }
}

// sms-uk's breaker opened by sustained faults: British numbers go to sms-b
// until it half-opens and its probe succeeds, then back to sms-uk; no
// message is lost, each provider's rate holds.
TEST_F(WorkerPrefixRoutesTest, ARoutesOpenBreakerFailsOverUntilItHalfOpens) {
  WorkerOptions o;
  o.retry.base_delay = milliseconds(20);
  o.retry.max_attempts = 50;
  o.breaker.cooldown = seconds(2);
  sink_.instant = true;
  make(o);
  bool uk_broken = true;
  sink_.answer = [&](const Message& m) {
    SendResult r;
    if (m.provider == "sms-uk" && uk_broken) r.outcome = SendOutcome::kFault;
    return r;
  };
  core_->upsertCampaign(campaignOn("otp", "sms-a", {"sms-b"}, {{"44", "sms-uk"}}), clock_.now());
  offer(0, 1500);  // 500 British
  runAndFlush(seconds(1));
  const MonoTime opened = clock_.now();
  runAndFlush(seconds(1));
  EXPECT_GE(sentVia("sms-b", opened, clock_.now()), 100u - 10u) << "British numbers at sms-b's rate";
  uk_broken = false;
  runAndFlush(seconds(3));
  const MonoTime back = clock_.now();
  runAndFlush(seconds(1));
  EXPECT_EQ(sentVia("sms-b", back, clock_.now()), 0u) << "back on sms-uk after its probe";
  EXPECT_GE(sentVia("sms-uk", back, clock_.now()), 40u - 5u);
  EXPECT_LE(maxPerSecond("sms-uk"), 40u + 4u);
  EXPECT_LE(maxPerSecond("sms-b"), 100u + 5u);
  runAndFlush(seconds(10));
  std::set<std::string> ids;
  for (const auto& [id, row] : ledger_.byId) {
    EXPECT_EQ(row.status, DeliveryStatus::kSent) << id;
    ids.insert(id);
  }
  EXPECT_EQ(ids.size(), 1500u);
}

// Cancelled: what every lane holds gets a `failed` row saying so.
TEST_F(WorkerPrefixRoutesTest, CancellingFailsWhatEveryLaneHolds) {
  sink_.instant = true;
  make();
  core_->upsertCampaign(campaignOn("otp", "sms-a", {}, {{"44", "sms-uk"}}, RateLimit{2, 2}), clock_.now());
  offer(0, 60);
  runAndFlush(milliseconds(200));
  CampaignInfo c = campaignOn("otp", "sms-a", {}, {{"44", "sms-uk"}}, RateLimit{2, 2});
  c.state = CampaignState::kCancelled;
  core_->upsertCampaign(c, clock_.now());
  runAndFlush(milliseconds(100));
  ASSERT_EQ(ledger_.byId.size(), 60u);
  std::size_t failed = 0;
  for (const auto& [id, row] : ledger_.byId) {
    if (row.status != DeliveryStatus::kFailed) continue;
    ++failed;
    EXPECT_EQ(row.reason, "cancelled");
  }
  EXPECT_EQ(failed, 60u - sink_.submitted.size());
  EXPECT_GE(failed, 55u);
}

// Routes the worker cannot follow are refused before any change.
TEST_F(WorkerPrefixRoutesTest, RoutesOfAnotherProtocolOrABurstTooSmallToSplitAreRefused) {
  WorkerOptions o;
  o.family_of = [](const std::string& id) { return id == "push" ? std::string("apns") : std::string("smpp"); };
  make(o);
  try {
    core_->upsertCampaign(campaignOn("otp", "sms-a", {}, {{"44", "push"}}), clock_.now());
    ADD_FAILURE() << "a route to an apns provider was taken";
  } catch (const InvalidError& e) {
    EXPECT_THAT(e.what(), HasSubstr("prefix 44: provider 'push' speaks apns"));
  }
  EXPECT_THROW(core_->upsertCampaign(campaignOn("otp", "sms-a", {}, {{"44", "sms-uk"}, {"44", "sms-b"}}), clock_.now()),
               InvalidError);
  EXPECT_THROW(core_->upsertCampaign(
                   campaignOn("otp", "sms-a", {}, {{"44", "sms-uk"}, {"1", "sms-us"}}, RateLimit{10, 2}), clock_.now()),
               InvalidError);
  EXPECT_FALSE(core_->knowsCampaign("otp"));
  EXPECT_NO_THROW(core_->upsertCampaign(
      campaignOn("otp", "sms-a", {}, {{"44", "sms-uk"}, {"1", "sms-us"}}, RateLimit{10, 3}), clock_.now()));
}

}  // namespace
}  // namespace pacer
