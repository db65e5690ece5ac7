// WorkerCore's prefix routes (docs/routes.md) on a simulated clock: a number
// that starts with a route's prefix goes through that route's provider, any
// other through the campaign's own; each provider's rate and the campaign's
// rate hold in every window, nothing is lost when the routes change, and
// every ledger row names the provider that carried its message.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "pacer/error.h"
#include "pacer/worker.h"
#include "support/fakes.h"

namespace pacer {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;

using test_support::FakeLedger;
using test_support::FakeSink;

RawMessage raw(std::int64_t offset, const std::string& recipient) {
  RawMessage r;
  r.position = Position{"t", 0, offset};
  r.key = "otp";
  r.headers.emplace_back("message-id", "m" + std::to_string(offset));
  r.headers.emplace_back("recipient", recipient);
  r.value = "p";
  return r;
}

// Every third number is British (+44...), every third American (1...).
std::string number(int i) {
  switch (i % 3) {
    case 0: return "+4477009" + std::to_string(10000 + i);
    case 1: return "1202555" + std::to_string(10000 + i);
    default: return "3361234" + std::to_string(10000 + i);
  }
}

CampaignInfo campaign(std::vector<PrefixRoute> routes, std::optional<RateLimit> limit = std::nullopt) {
  CampaignInfo c;
  c.id = "otp";
  c.provider = "sms-a";
  c.limit = limit;
  c.routes = std::move(routes);
  return c;
}

class WorkerPrefixRoutesTest : public ::testing::Test {
 protected:
  void make(WorkerOptions o = {}) {
    o.ledger_flush_interval = milliseconds(10);
    core_ = std::make_unique<WorkerCore>(o, ledger_, sink_, nullptr, clock_.now());
    core_->upsertProvider(ProviderInfo{"sms-a", RateLimit{100, 5}}, clock_.now());
    core_->upsertProvider(ProviderInfo{"sms-b", RateLimit{100, 5}}, clock_.now());
    core_->upsertProvider(ProviderInfo{"sms-uk", RateLimit{40, 4}}, clock_.now());
    core_->upsertProvider(ProviderInfo{"sms-us", RateLimit{1000, 10}}, clock_.now());
  }
  void offer(int from, int to) {
    for (int i = from; i < to; ++i) core_->offer(raw(i, number(i)), clock_.now());
  }
  // Steps every 5 ms for `d`, noting when each message went.
  void run(Nanos d) {
    const MonoTime end = clock_.now() + d;
    while (clock_.now() < end) {
      clock_.advance(milliseconds(5));
      core_->step(clock_.now());
      while (sent_at_.size() < sink_.submitted.size()) sent_at_.push_back(clock_.now());
    }
    core_->flush(clock_.now());
  }
  // Messages handed to `provider` ("" for any) in [from, to).
  std::size_t sentVia(const std::string& provider, MonoTime from, MonoTime to) const {
    std::size_t n = 0;
    for (std::size_t i = 0; i < sent_at_.size(); ++i)
      n += (provider.empty() || sink_.submitted[i].provider == provider) && sent_at_[i] >= from && sent_at_[i] < to;
    return n;
  }
  // The most handed to `provider` ("" for any) in any 1 s window.
  std::size_t maxPerSecond(const std::string& provider) const {
    std::size_t most = 0;
    for (std::size_t i = 0; i < sent_at_.size(); ++i)
      most = std::max(most, sentVia(provider, sent_at_[i], sent_at_[i] + seconds(1)));
    return most;
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

  SimulatedTimeSource clock_{monoAt(seconds(1000))};
  FakeLedger ledger_;
  FakeSink sink_{1000};
  std::unique_ptr<WorkerCore> core_;
  std::vector<MonoTime> sent_at_;
};

// Unlimited campaign: each provider's own rate is the bound; British
// numbers at sms-uk's 40/s, the rest at sms-a's 100/s, nothing lost.
TEST_F(WorkerPrefixRoutesTest, NumbersWithThePrefixGoThroughTheRoutesProviderAndTheRestThroughTheCampaigns) {
  sink_.instant = true;
  make();
  core_->upsertCampaign(campaign({{"44", "sms-uk"}}), clock_.now());
  offer(0, 600);  // 200 British, 400 others
  const MonoTime t0 = clock_.now();
  run(seconds(3));
  EXPECT_GE(sentVia("sms-uk", t0, t0 + seconds(3)), 3 * 40u - 10u) << "sms-uk at its rate";
  EXPECT_GE(sentVia("sms-a", t0, t0 + seconds(3)), 3 * 100u - 10u) << "sms-a at its rate, not held by sms-uk";
  run(seconds(5));
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
  core_->upsertCampaign(campaign({{"44", "sms-b"}, {"1", "sms-b"}}, RateLimit{60, 6}), clock_.now());
  offer(0, 900);
  const MonoTime t0 = clock_.now();
  run(seconds(4));
  EXPECT_LE(maxPerSecond(""), 60u + 6u);
  EXPECT_LE(maxPerSecond("sms-a"), 30u + 3u);
  EXPECT_LE(maxPerSecond("sms-b"), 30u + 3u);
  EXPECT_GE(sentVia("", t0, t0 + seconds(4)), 4 * 60u - 10u) << "both lanes busy: the whole rate is used";
  ASSERT_EQ(core_->campaignStats().size(), 1u);
  EXPECT_EQ(core_->campaignStats()[0].limit->rate_per_s, 60.0) << "shown as configured, not as split";
  run(seconds(18));  // sms-b's lane has 600 at 30/s
  EXPECT_EQ(sink_.submitted.size(), 900u);
  expectEachRoutedOnce({{"44", "sms-b"}, {"1", "sms-b"}}, "sms-a");
}

// The longest prefix wins, a route may name the campaign's own provider to
// carve a prefix out of a shorter one, and a third provider takes its own.
TEST_F(WorkerPrefixRoutesTest, TheLongestPrefixWins) {
  sink_.instant = true;
  make();
  const std::vector<PrefixRoute> routes{{"4", "sms-uk"}, {"4477009100", "sms-a"}, {"1", "sms-us"}};
  core_->upsertCampaign(campaign(routes), clock_.now());
  offer(0, 300);
  run(seconds(10));
  EXPECT_EQ(sink_.submitted.size(), 300u);
  expectEachRoutedOnce({{"4", "sms-uk"}, {"4477009100", "sms-a"}, {"1", "sms-us"}}, "sms-a");
  EXPECT_GT(sentVia("sms-us", MonoTime{}, clock_.now()), 0u);
}

// Routes added and removed while messages wait: what is queued goes where
// its number routes now; none is lost or sent twice.
TEST_F(WorkerPrefixRoutesTest, QueuedMessagesFollowAChangeOfRoutes) {
  sink_.instant = true;
  make();
  core_->upsertCampaign(campaign({}), clock_.now());
  offer(0, 300);
  run(milliseconds(500));
  EXPECT_EQ(sentVia("sms-uk", MonoTime{}, clock_.now()), 0u);
  core_->upsertCampaign(campaign({{"44", "sms-uk"}}), clock_.now());
  const MonoTime routed = clock_.now();
  run(milliseconds(500));
  EXPECT_GE(sentVia("sms-uk", routed, clock_.now()), 15u) << "queued British numbers moved to sms-uk";
  core_->upsertCampaign(campaign({}), clock_.now());
  const MonoTime unrouted = clock_.now();
  run(seconds(4));
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
  CampaignInfo c = campaign({{"44", "sms-uk"}});
  c.failover = {"sms-b"};
  core_->upsertCampaign(c, clock_.now());
  core_->setProviderDown("sms-a", "binds failing", clock_.now());
  offer(0, 120);
  run(seconds(3));
  EXPECT_EQ(sink_.submitted.size(), 120u);
  expectEachRoutedOnce({{"44", "sms-uk"}}, "sms-b");
}

// Cancelled: what every lane holds gets a `failed` row saying so.
TEST_F(WorkerPrefixRoutesTest, CancellingFailsWhatEveryLaneHolds) {
  sink_.instant = true;
  make();
  core_->upsertCampaign(campaign({{"44", "sms-uk"}}, RateLimit{2, 2}), clock_.now());
  offer(0, 60);
  run(milliseconds(200));
  CampaignInfo c = campaign({{"44", "sms-uk"}}, RateLimit{2, 2});
  c.state = CampaignState::kCancelled;
  core_->upsertCampaign(c, clock_.now());
  run(milliseconds(100));
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
    core_->upsertCampaign(campaign({{"44", "push"}}), clock_.now());
    ADD_FAILURE() << "a route to an apns provider was taken";
  } catch (const InvalidError& e) {
    EXPECT_THAT(e.what(), HasSubstr("prefix 44: provider 'push' speaks apns"));
  }
  EXPECT_THROW(core_->upsertCampaign(campaign({{"44", "sms-uk"}, {"44", "sms-b"}}), clock_.now()), InvalidError);
  EXPECT_THROW(core_->upsertCampaign(campaign({{"44", "sms-uk"}, {"1", "sms-us"}}, RateLimit{10, 2}), clock_.now()),
               InvalidError);
  EXPECT_FALSE(core_->knowsCampaign("otp"));
  EXPECT_NO_THROW(core_->upsertCampaign(campaign({{"44", "sms-uk"}, {"1", "sms-us"}}, RateLimit{10, 3}), clock_.now()));
}

}  // namespace
}  // namespace pacer
