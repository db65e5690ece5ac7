// Strict priority between classes in one worker's scheduler: a higher rank
// takes what it can use of the capacity and of the provider's tokens first,
// the ranks below share the rest by weight.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "pacer/scheduler.h"
#include "support/series.h"

namespace pacer {
namespace {

using std::chrono::milliseconds;

constexpr Nanos kTick = milliseconds(10);
MonoTime tickAt(int k) { return monoAt(kTick * k); }

SchedulerOptions tokenBuckets() {
  SchedulerOptions o;
  o.limiter.max_lateness = kTick;
  return o;
}

CampaignSpec spec(ProviderId p, std::uint32_t rank, double weight = 1, std::optional<RateLimit> limit = {}) {
  CampaignSpec c{limit, weight, p};
  c.priority = rank;
  return c;
}

TEST(SchedulerPriority, HigherRankTakesTheProviderFirstAndLowerGetsTheRest) {
  Scheduler s(tokenBuckets());
  const ProviderId p = s.addProvider({RateLimit{400, 4}}, tickAt(0));
  const CampaignId bulk = s.addCampaign(spec(p, 2), tickAt(0));
  const CampaignId otp = s.addCampaign(spec(p, 1), tickAt(0));
  s.addBacklog(bulk, 1'000'000);
  std::uint64_t sent_bulk = 0, sent_otp = 0, arrived = 0;
  for (int k = 0; k < 1000; ++k) {  // 10 s; 50 otp messages/s arrive, one every other tick
    if (k % 2 == 0) {
      s.addBacklog(otp, 1);
      ++arrived;
    }
    for (const Grant& g : s.tick(tickAt(k), kUnlimitedCapacity)) (g.campaign == otp ? sent_otp : sent_bulk) += g.count;
    // An otp message never waits behind bulk: it goes in the tick it arrives.
    ASSERT_EQ(s.backlog(otp), 0u) << "tick " << k;
  }
  EXPECT_EQ(sent_otp, arrived);
  // The provider is used in full: 4 + 400 * 9.99 tokens over the run, less
  // what otp took.
  EXPECT_GE(sent_bulk + sent_otp, 4u + 3995u);
  EXPECT_LE(sent_bulk + sent_otp, 4u + 3996u + 1u);
}

TEST(SchedulerPriority, CapacityGoesToTheHigherRankFirst) {
  Scheduler s(tokenBuckets());
  const CampaignId low = s.addCampaign(spec(kNoProvider, 1, 10), tickAt(0));
  const CampaignId high = s.addCampaign(spec(kNoProvider, 0, 1), tickAt(0));
  s.addBacklog(low, 1000);
  s.addBacklog(high, 25);
  std::map<CampaignId, std::uint64_t> got;
  for (const Grant& g : s.tick(tickAt(0), 20)) got[g.campaign] += g.count;
  EXPECT_EQ(got[high], 20u);  // weight 10 does not help a lower rank
  EXPECT_EQ(got[low], 0u);
  got.clear();
  for (const Grant& g : s.tick(tickAt(1), 20)) got[g.campaign] += g.count;
  EXPECT_EQ(got[high], 5u);
  EXPECT_EQ(got[low], 15u);
}

TEST(SchedulerPriority, WithinARankWeightsStillShare) {
  Scheduler s(tokenBuckets());
  const CampaignId a = s.addCampaign(spec(kNoProvider, 1, 1), tickAt(0));
  const CampaignId b = s.addCampaign(spec(kNoProvider, 1, 3), tickAt(0));
  const CampaignId top = s.addCampaign(spec(kNoProvider, 0, 1), tickAt(0));
  s.addBacklog(a, 1'000'000);
  s.addBacklog(b, 1'000'000);
  std::map<CampaignId, std::uint64_t> got;
  for (int k = 0; k < 100; ++k) {
    s.addBacklog(top, 4);
    for (const Grant& g : s.tick(tickAt(k), 40)) got[g.campaign] += g.count;
  }
  EXPECT_EQ(got[top], 400u);
  EXPECT_NEAR(static_cast<double>(got[a]), 900.0, 1.0);
  EXPECT_NEAR(static_cast<double>(got[b]), 2700.0, 1.0);
}

TEST(SchedulerPriority, ALimitedHigherRankLeavesItsUnusedShareBelow) {
  Scheduler s(tokenBuckets());
  const ProviderId p = s.addProvider({RateLimit{1000, 10}}, tickAt(0));
  const CampaignId high = s.addCampaign(spec(p, 0, 1, RateLimit{200, 2}), tickAt(0));
  const CampaignId low = s.addCampaign(spec(p, 1), tickAt(0));
  s.addBacklog(high, 1'000'000);
  s.addBacklog(low, 1'000'000);
  std::map<CampaignId, std::uint64_t> got;
  for (int k = 0; k < 500; ++k)
    for (const Grant& g : s.tick(tickAt(k), kUnlimitedCapacity)) got[g.campaign] += g.count;
  EXPECT_NEAR(static_cast<double>(got[high]), 200 * 4.99 + 2, 2.0);
  EXPECT_NEAR(static_cast<double>(got[low]), 1000 * 4.99 + 10 - (200 * 4.99 + 2), 3.0);
}

TEST(SchedulerPriority, ChangingARankMovesTheCampaignAndBadRanksAreRefused) {
  Scheduler s(tokenBuckets());
  const CampaignId a = s.addCampaign(spec(kNoProvider, 1), tickAt(0));
  const CampaignId b = s.addCampaign(spec(kNoProvider, 2), tickAt(0));
  s.addBacklog(a, 100);
  s.addBacklog(b, 100);
  s.setPriority(b, 0);
  EXPECT_EQ(s.priorityOf(b), 0u);
  std::map<CampaignId, std::uint64_t> got;
  for (const Grant& g : s.tick(tickAt(0), 10)) got[g.campaign] += g.count;
  EXPECT_EQ(got[b], 10u);
  EXPECT_THROW(s.setPriority(a, kMaxPriorityRanks), SchedulerError);
  EXPECT_THROW(s.addCampaign(spec(kNoProvider, kMaxPriorityRanks), tickAt(0)), SchedulerError);
  s.removeCampaign(b);  // its rank's count goes with it: one rank left, the plain fair path
  got.clear();
  for (const Grant& g : s.tick(tickAt(1), 10)) got[g.campaign] += g.count;
  EXPECT_EQ(got[a], 10u);
}

// Random backlogs, ranks and capacities: never over any limit (upper bound),
// work-conserving (lower bound), and a lower rank gets something in a tick
// only when no higher rank could have used it.
TEST(SchedulerPriorityProperty, StrictOrderBoundsAndWorkConservation) {
  std::mt19937_64 rng(16);
  for (int trial = 0; trial < 4; ++trial) {
    Scheduler s(tokenBuckets());
    const RateLimit plimit{std::uniform_real_distribution<double>(100, 2000)(rng), 20};
    const ProviderId p = s.addProvider({plimit}, tickAt(0));
    struct C {
      CampaignId id;
      std::uint32_t rank;
      std::optional<RateLimit> limit;
    };
    std::vector<C> cs;
    for (int i = 0; i < 12; ++i) {
      C c{0, static_cast<std::uint32_t>(i % 3), std::nullopt};
      if (i % 2) c.limit = RateLimit{std::uniform_real_distribution<double>(10, 500)(rng), 5};
      c.id = s.addCampaign(spec(p, c.rank, 1 + i % 4, c.limit), tickAt(0));
      cs.push_back(c);
    }
    std::vector<std::uint32_t> pbins;
    for (int k = 0; k < 2000; ++k) {
      for (const C& c : cs)
        if (std::uniform_int_distribution<int>(0, 30)(rng) == 0)
          s.addBacklog(c.id, std::uniform_int_distribution<int>(0, 50)(rng));
      const std::uint64_t capacity = std::uniform_int_distribution<int>(0, 60)(rng);
      std::map<CampaignId, std::uint64_t> got;
      std::uint64_t total = 0;
      for (const Grant& g : s.tick(tickAt(k), capacity)) {
        got[g.campaign] += g.count;
        total += g.count;
      }
      ASSERT_LE(total, capacity);
      pbins.push_back(static_cast<std::uint32_t>(total));
      const MonoTime now = tickAt(k);
      const bool provider_empty = s.providerLimiterOf(p)->available(now, 1) == 0;
      std::uint32_t lowest_granted = 0;
      for (const C& c : cs)
        if (got[c.id] > 0) lowest_granted = std::max(lowest_granted, c.rank);
      for (const C& c : cs) {
        const bool stuck = s.backlog(c.id) == 0 || (c.limit && s.limiterOf(c.id)->available(now, 1) == 0);
        // Work conservation: capacity left over means nobody else could send.
        if (total < capacity) {
          EXPECT_TRUE(stuck || provider_empty) << "tick " << k;
        }
        // Strict order: when a lower rank got something, every campaign of a
        // higher rank had taken all it could (capacity and provider tokens
        // went to it first).
        if (c.rank < lowest_granted) {
          EXPECT_TRUE(stuck) << "tick " << k << " rank " << c.rank << " below " << lowest_granted;
        }
      }
    }
    for (int w : {1, 10, 100}) {
      EXPECT_LE(static_cast<double>(pacer::testing::maxWindowSum(pbins, w)),
                plimit.rate_per_s * (w - 1) * 0.01 + plimit.burst + 1e-6);
    }
  }
}

}  // namespace
}  // namespace pacer
