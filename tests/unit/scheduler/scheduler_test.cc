#include "pacer/scheduler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <set>

#include "support/series.h"

namespace pacer {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr Nanos kTick = milliseconds(10);

MonoTime tickAt(int k) { return monoAt(kTick * k); }

// Runs `ticks` ticks and returns messages granted per campaign.
std::map<CampaignId, std::uint64_t> run(Scheduler& s, int from, int ticks, std::uint64_t capacity) {
  std::map<CampaignId, std::uint64_t> sent;
  for (int k = from; k < from + ticks; ++k) {
    std::uint64_t total = 0;
    for (const Grant& g : s.tick(tickAt(k), capacity)) {
      sent[g.campaign] += g.count;
      total += g.count;
    }
    EXPECT_LE(total, capacity);
  }
  return sent;
}

SchedulerOptions tokenBuckets() {
  SchedulerOptions o;
  o.limiter.max_lateness = kTick;
  return o;
}

TEST(Scheduler, LimitedCampaignGetsExactlyItsRate) {
  Scheduler s(tokenBuckets());
  const CampaignId a = s.addCampaign({RateLimit{300, 4}, 1, kNoProvider}, tickAt(0));
  s.addBacklog(a, 1'000'000);
  const auto sent = run(s, 0, 1000, kUnlimitedCapacity);  // 10 s
  // 4 at t=0 (full bucket), then 3 per tick for the 999 ticks after it; the
  // bucket rounds 1/rate up, so the very last token may land just after the
  // last tick.
  EXPECT_LE(sent.at(a), 4u + 3u * 999u);
  EXPECT_GE(sent.at(a), 4u + 3u * 999u - 1u);
}

TEST(Scheduler, EqualCampaignsSplitCapacityEqually) {
  Scheduler s(tokenBuckets());
  std::vector<CampaignId> ids;
  for (int i = 0; i < 7; ++i) {
    ids.push_back(s.addCampaign({std::nullopt, 1, kNoProvider}, tickAt(0)));
    s.addBacklog(ids.back(), 1'000'000);
  }
  const auto sent = run(s, 0, 700, 10);  // 10 per tick shared by 7
  for (CampaignId id : ids) EXPECT_EQ(sent.at(id), 1000u) << id;
}

TEST(Scheduler, WeightsSetTheShares) {
  Scheduler s(tokenBuckets());
  const CampaignId a = s.addCampaign({std::nullopt, 1, kNoProvider}, tickAt(0));
  const CampaignId b = s.addCampaign({std::nullopt, 2, kNoProvider}, tickAt(0));
  const CampaignId c = s.addCampaign({std::nullopt, 3.5, kNoProvider}, tickAt(0));
  for (CampaignId id : {a, b, c}) s.addBacklog(id, 1'000'000);
  const auto sent = run(s, 0, 1000, 13);
  const double total = 13000;
  EXPECT_NEAR(sent.at(a), total * 1 / 6.5, 1.0);
  EXPECT_NEAR(sent.at(b), total * 2 / 6.5, 1.0);
  EXPECT_NEAR(sent.at(c), total * 3.5 / 6.5, 1.0);
}

TEST(Scheduler, UnusedShareGoesToTheOthersInTheSameTick) {
  Scheduler s(tokenBuckets());
  const CampaignId slow = s.addCampaign({RateLimit{100, 2}, 1, kNoProvider}, tickAt(0));
  const CampaignId x = s.addCampaign({std::nullopt, 1, kNoProvider}, tickAt(0));
  const CampaignId y = s.addCampaign({std::nullopt, 1, kNoProvider}, tickAt(0));
  for (CampaignId id : {slow, x, y}) s.addBacklog(id, 1'000'000);
  for (int k = 1; k <= 500; ++k) {
    std::map<CampaignId, std::uint64_t> got;
    std::uint64_t total = 0;
    for (const Grant& g : s.tick(tickAt(k), 30)) {
      got[g.campaign] = g.count;
      total += g.count;
    }
    ASSERT_EQ(total, 30u) << "tick " << k;  // capacity fully used every tick
    EXPECT_LE(got[slow], 2u);
  }
}

TEST(Scheduler, ShortBacklogPassesItsShareOn) {
  Scheduler s(tokenBuckets());
  const CampaignId small = s.addCampaign({std::nullopt, 1, kNoProvider}, tickAt(0));
  const CampaignId big = s.addCampaign({std::nullopt, 1, kNoProvider}, tickAt(0));
  s.addBacklog(small, 3);
  s.addBacklog(big, 1000);
  const auto grants = s.tick(tickAt(0), 100);
  std::map<CampaignId, std::uint64_t> got;
  for (const Grant& g : grants) got[g.campaign] = g.count;
  EXPECT_EQ(got[small], 3u);
  EXPECT_EQ(got[big], 97u);
  EXPECT_EQ(s.backlog(small), 0u);
  EXPECT_EQ(s.activeCount(), 1u);  // the drained campaign left the active set
}

TEST(Scheduler, ASendNeedsATokenFromCampaignAndProvider) {
  Scheduler s(tokenBuckets());
  const ProviderId sms = s.addProvider({RateLimit{400, 5}}, tickAt(0));
  std::vector<CampaignId> ids;
  for (int i = 0; i < 4; ++i) {
    ids.push_back(s.addCampaign({RateLimit{300, 4}, 1, sms}, tickAt(0)));
    s.addBacklog(ids.back(), 1'000'000);
  }
  const CampaignId free = s.addCampaign({RateLimit{50, 2}, 1, kNoProvider}, tickAt(0));
  s.addBacklog(free, 1'000'000);
  const auto sent = run(s, 0, 1000, kUnlimitedCapacity);
  std::uint64_t via_sms = 0;
  for (CampaignId id : ids) {
    via_sms += sent.at(id);
    EXPECT_NEAR(static_cast<double>(sent.at(id)), 1000.0, 5.0) << "the provider's 400/s shared four ways";
  }
  EXPECT_LE(via_sms, 5u + 4u * 999u);  // provider bound: burst + rate * time
  EXPECT_GE(via_sms, 4u * 999u);
  EXPECT_EQ(sent.at(free), 2u + 999u / 2u);  // its own 50/s, untouched by the provider
}

TEST(Scheduler, PausedCampaignGetsNothingAndResumesWhereItWas) {
  Scheduler s(tokenBuckets());
  const CampaignId a = s.addCampaign({std::nullopt, 1, kNoProvider}, tickAt(0));
  const CampaignId b = s.addCampaign({std::nullopt, 1, kNoProvider}, tickAt(0));
  s.addBacklog(a, 100000);
  s.addBacklog(b, 100000);
  s.pause(a);
  EXPECT_TRUE(s.paused(a));
  auto sent = run(s, 0, 100, 10);
  EXPECT_EQ(sent.count(a), 0u);
  EXPECT_EQ(sent.at(b), 1000u);
  EXPECT_EQ(s.backlog(a), 100000u);
  s.resume(a);
  sent = run(s, 100, 100, 10);
  EXPECT_EQ(sent.at(a), 500u);
  EXPECT_EQ(sent.at(b), 500u);
}

TEST(Scheduler, ReRateBetweenTicksAppliesOnTheNextTick) {
  Scheduler s(tokenBuckets());
  const CampaignId a = s.addCampaign({RateLimit{100, 2}, 1, kNoProvider}, tickAt(0));
  s.addBacklog(a, 1'000'000);
  auto sent = run(s, 0, 100, kUnlimitedCapacity);
  EXPECT_EQ(sent.at(a), 2u + 99u);
  s.setLimit(a, RateLimit{1000, 11}, tickAt(100));
  sent = run(s, 100, 100, kUnlimitedCapacity);
  EXPECT_NEAR(static_cast<double>(sent.at(a)), 1000.0, 11.0);
  const std::uint64_t rest = s.backlog(a);
  s.setLimit(a, std::nullopt, tickAt(200));  // unlimited: the whole backlog goes at once
  sent = run(s, 200, 1, kUnlimitedCapacity);
  EXPECT_EQ(sent.at(a), rest);
  EXPECT_EQ(s.backlog(a), 0u);
}

TEST(Scheduler, RemovedCampaignStopsAndItsIdIsReused) {
  Scheduler s(tokenBuckets());
  const CampaignId a = s.addCampaign({std::nullopt, 1, kNoProvider}, tickAt(0));
  const CampaignId b = s.addCampaign({std::nullopt, 1, kNoProvider}, tickAt(0));
  s.addBacklog(a, 100);
  s.addBacklog(b, 100);
  s.removeCampaign(a);
  EXPECT_EQ(s.campaignCount(), 1u);
  EXPECT_THROW(s.backlog(a), SchedulerError);
  const auto grants = s.tick(tickAt(0), 1000);
  ASSERT_EQ(grants.size(), 1u);
  EXPECT_EQ(grants[0].campaign, b);
  EXPECT_EQ(s.addCampaign({std::nullopt, 1, kNoProvider}, tickAt(1)), a);
}

TEST(Scheduler, StartingCampaignRotates) {
  Scheduler s(tokenBuckets());
  std::vector<CampaignId> ids;
  for (int i = 0; i < 3; ++i) {
    ids.push_back(s.addCampaign({std::nullopt, 1, kNoProvider}, tickAt(0)));
    s.addBacklog(ids.back(), 1000);
  }
  std::vector<CampaignId> first;
  for (int k = 0; k < 6; ++k) {
    const auto g = s.tick(tickAt(k), 1);
    ASSERT_EQ(g.size(), 1u);
    first.push_back(g[0].campaign);
  }
  // Capacity 1 per tick: every campaign gets a turn in every 3 ticks.
  for (int k = 0; k + 3 <= 6; ++k) {
    std::set<CampaignId> window(first.begin() + k, first.begin() + k + 3);
    EXPECT_EQ(window.size(), 3u) << "ticks " << k << ".." << k + 2;
  }
}

TEST(Scheduler, EndlessBacklogWithUnlimitedCapacityReturns) {
  Scheduler s(tokenBuckets());
  const CampaignId a = s.addCampaign({std::nullopt, 1, kNoProvider}, tickAt(0));
  const CampaignId b = s.addCampaign({RateLimit{100, 2}, 1, kNoProvider}, tickAt(0));
  s.addBacklog(a, UINT64_MAX);
  s.addBacklog(b, UINT64_MAX);
  std::map<CampaignId, std::uint64_t> got;
  for (const Grant& g : s.tick(tickAt(0), kUnlimitedCapacity)) got[g.campaign] = g.count;
  EXPECT_EQ(got[a], UINT64_MAX);
  EXPECT_EQ(got[b], 2u);
}

// A limiter whose available() promises more than tryAcquire() gives (a lease
// that expired between the two, say): the grant shrinks to what it gives.
class PromisesTooMuch final : public RateLimitingInterface {
 public:
  bool tryAcquire(std::uint64_t n, MonoTime) noexcept override {
    if (n > tokens_) return false;
    tokens_ -= n;
    return true;
  }
  std::uint64_t available(MonoTime, std::uint64_t max) noexcept override { return std::min<std::uint64_t>(max, 10); }
  Nanos timeUntil(std::uint64_t, MonoTime) noexcept override { return Nanos{0}; }
  void setLimit(RateLimit, MonoTime) noexcept override {}
  RateLimit limit() const noexcept override { return {}; }
  Algorithm algorithm() const noexcept override { return Algorithm::kTokenBucket; }

 private:
  std::uint64_t tokens_ = 3;  // while available() claims 10
};

TEST(Scheduler, GrantsOnlyWhatTheLimiterReallyGives) {
  Scheduler s(tokenBuckets());
  const CampaignId a = s.addCampaign({std::nullopt, 1, kNoProvider}, tickAt(0));
  s.setLimiter(a, std::make_unique<PromisesTooMuch>());
  s.addBacklog(a, 100);
  const auto grants = s.tick(tickAt(0), kUnlimitedCapacity);
  ASSERT_EQ(grants.size(), 1u);
  EXPECT_EQ(grants[0].count, 3u);
  EXPECT_EQ(s.backlog(a), 97u);
}

TEST(Scheduler, ManyRegisteredFewActive) {
  Scheduler s(tokenBuckets());
  for (int i = 0; i < 100000; ++i) s.addCampaign({RateLimit{10, 2}, 1, kNoProvider}, tickAt(0));
  s.addBacklog(5, 10);
  s.addBacklog(99999, 10);
  EXPECT_EQ(s.campaignCount(), 100000u);
  EXPECT_EQ(s.activeCount(), 2u);
  const auto grants = s.tick(tickAt(0), kUnlimitedCapacity);
  EXPECT_EQ(grants.size(), 2u);
}

TEST(Scheduler, RefusesBadSettingsAndUnknownIds) {
  Scheduler s(tokenBuckets());
  EXPECT_THROW(s.addCampaign({std::nullopt, 0, kNoProvider}, tickAt(0)), SchedulerError);
  EXPECT_THROW(s.addCampaign({std::nullopt, -1, kNoProvider}, tickAt(0)), SchedulerError);
  EXPECT_THROW(s.addCampaign({RateLimit{-5, 1}, 1, kNoProvider}, tickAt(0)), SchedulerError);
  EXPECT_THROW(s.addCampaign({std::nullopt, 1, 3}, tickAt(0)), SchedulerError);  // no provider 3
  EXPECT_THROW(s.pause(42), SchedulerError);
  const CampaignId a = s.addCampaign({RateLimit{5, 1}, 1, kNoProvider}, tickAt(0));
  EXPECT_THROW(s.setLimit(a, RateLimit{std::nan(""), 1}, tickAt(0)), SchedulerError);
  EXPECT_THROW(s.setWeight(a, std::numeric_limits<double>::infinity()), SchedulerError);
  EXPECT_EQ(s.limitOf(a)->rate_per_s, 5);  // a refused change leaves the old limit
}

TEST(Scheduler, ZeroCapacityOrNoWorkGrantsNothing) {
  Scheduler s(tokenBuckets());
  const CampaignId a = s.addCampaign({std::nullopt, 1, kNoProvider}, tickAt(0));
  EXPECT_TRUE(s.tick(tickAt(0), 100).empty());
  s.addBacklog(a, 5);
  EXPECT_TRUE(s.tick(tickAt(1), 0).empty());
  EXPECT_EQ(s.dropBacklog(a, 2), 2u);
  EXPECT_EQ(s.tick(tickAt(2), 100)[0].count, 3u);
}

// Property: random campaigns, providers, weights, backlogs and capacities over
// thousands of ticks. Every tick stays within capacity; no campaign or
// provider exceeds rate*w + burst in any window; and the tick is
// work-conserving: if capacity is left over, no campaign could have sent more.
TEST(SchedulerProperty, BoundsAndWorkConservationOverRandomTicks) {
  std::mt19937_64 rng(2024);
  for (int trial = 0; trial < 6; ++trial) {
    Scheduler s(tokenBuckets());
    std::vector<RateLimit> plimits;
    for (int p = 0; p < 3; ++p) {
      plimits.push_back({std::uniform_real_distribution<double>(50, 3000)(rng), 40});
      s.addProvider({plimits.back()}, tickAt(0));
    }
    struct C {
      CampaignId id;
      std::optional<RateLimit> limit;
      ProviderId provider;
      std::vector<std::uint32_t> bins;
    };
    std::vector<C> cs;
    for (int i = 0; i < 40; ++i) {
      C c;
      if (i % 5 != 0) c.limit = RateLimit{std::uniform_real_distribution<double>(1, 800)(rng), 10};
      c.provider = i % 4 == 0 ? kNoProvider : static_cast<ProviderId>(i % 3);
      c.id = s.addCampaign({c.limit, std::uniform_real_distribution<double>(0.5, 4)(rng), c.provider}, tickAt(0));
      cs.push_back(std::move(c));
    }
    std::vector<std::vector<std::uint32_t>> pbins(3);
    const int ticks = 3000;
    for (int k = 0; k < ticks; ++k) {
      for (C& c : cs) {
        if (std::uniform_int_distribution<int>(0, 50)(rng) == 0)
          s.addBacklog(c.id, std::uniform_int_distribution<int>(0, 400)(rng));
        c.bins.push_back(0);
      }
      for (auto& b : pbins) b.push_back(0);
      const std::uint64_t capacity = std::uniform_int_distribution<int>(0, 120)(rng);
      std::uint64_t total = 0;
      std::map<CampaignId, std::uint64_t> got;
      for (const Grant& g : s.tick(tickAt(k), capacity)) {
        total += g.count;
        got[g.campaign] += g.count;
      }
      ASSERT_LE(total, capacity);
      for (C& c : cs) {
        c.bins.back() = static_cast<std::uint32_t>(got[c.id]);
        if (c.provider != kNoProvider) pbins[c.provider].back() += static_cast<std::uint32_t>(got[c.id]);
      }
      if (total < capacity) {
        // Nobody could take more: each campaign is out of backlog, tokens or provider tokens.
        const MonoTime now = tickAt(k);
        for (C& c : cs) {
          const bool no_work = s.backlog(c.id) == 0;
          const bool no_tokens = c.limit && s.limiterOf(c.id)->available(now, 1) == 0;
          const bool no_provider = c.provider != kNoProvider && s.providerLimiterOf(c.provider)->available(now, 1) == 0;
          EXPECT_TRUE(no_work || no_tokens || no_provider) << "tick " << k << " campaign " << c.id;
        }
      }
    }
    for (int w : {1, 10, 100, 1000}) {
      const double span_s = (w - 1) * 0.01;
      for (const C& c : cs) {
        if (!c.limit) continue;
        EXPECT_LE(static_cast<double>(pacer::testing::maxWindowSum(c.bins, w)),
                  c.limit->rate_per_s * span_s + c.limit->burst + 1e-6);
      }
      for (int p = 0; p < 3; ++p) {
        EXPECT_LE(static_cast<double>(pacer::testing::maxWindowSum(pbins[p], w)),
                  plimits[p].rate_per_s * span_s + plimits[p].burst + 1e-6);
      }
    }
  }
}

}  // namespace
}  // namespace pacer
