// Strict priority at a shared provider bucket, across workers: the backend's
// class rules (LeasePriority) and four leasers sharing one backend on a
// simulated clock.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <deque>
#include <map>
#include <random>
#include <vector>

#include "pacer/quota_lease.h"
#include "support/series.h"

namespace pacer {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

LeaseRequest classRequest(std::uint32_t rank, std::uint64_t want, RateLimit provider, double floor = 0.0) {
  LeaseRequest r;
  r.scope = "sms";
  r.levels.push_back(QuotaLevel{"p", provider});
  r.want = want;
  r.lookahead = seconds(1);
  r.priority = LeasePriority{0, rank, floor, milliseconds(50), milliseconds(250), seconds(1)};
  return r;
}

LeaseReply one(QuotaBackend& b, const LeaseRequest& r, MonoTime now) {
  LeaseReply reply;
  b.acquire(std::span<const LeaseRequest>(&r, 1), now, std::span<LeaseReply>(&reply, 1));
  return reply;
}

MonoTime at(Nanos d) { return MonoTime{d}; }

TEST(QuotaPriority, AClassAloneBorrowsTheFullLookaheadUntilItHasSeenAHigherOne) {
  const RateLimit p{400, 20};
  auto b = makeLocalQuotaBackend();
  // Alone, never having seen a higher class: burst + 1 s of the rate.
  EXPECT_EQ(one(*b, classRequest(2, 10'000, p), at(seconds(0))).granted, 420u);
  // A higher class asked once (t = 2 s); a second later it no longer counts
  // as asking, but for a minute bulk alone borrows only top_lookahead
  // (250 ms), so when the higher class comes back it finds the level owing
  // at most that.
  one(*b, classRequest(0, 1, p), at(seconds(2)));
  EXPECT_EQ(one(*b, classRequest(2, 10'000, p), at(seconds(5))).granted, 120u);
  EXPECT_EQ(one(*b, classRequest(2, 10'000, p), at(seconds(70))).granted, 420u) << "forgotten after a minute";
}

TEST(QuotaPriority, ALowerClassGetsNothingWhileAHigherOneOwesTheLevel) {
  const RateLimit p{400, 20};
  auto b = makeLocalQuotaBackend();
  one(*b, classRequest(1, 1, p), at(seconds(0)));  // transactional was seen
  // At 2 s bulk (rank 2) takes the burst and 250 ms ahead.
  ASSERT_EQ(one(*b, classRequest(2, 10'000, p), at(seconds(2))).granted, 120u);
  // 300 ms later the level owes nothing: transactional (rank 1) is granted at
  // once, with bulk asking (250 ms ahead for it).
  const LeaseReply t = one(*b, classRequest(1, 60, p), at(milliseconds(2300)));
  EXPECT_EQ(t.granted, 60u);
  // Bulk now has a higher class asking: it may owe the level only 50 ms, and
  // the level owes transactional's tokens: nothing for bulk.
  const LeaseReply none = one(*b, classRequest(2, 10'000, p), at(milliseconds(2301)));
  EXPECT_EQ(none.granted, 0u);
  EXPECT_GT(none.next_token, Nanos{0});
  // Once transactional's tokens are paid, bulk gets what the level holds
  // plus 50 ms, not 250 ms.
  const LeaseReply later = one(*b, classRequest(2, 10'000, p), at(milliseconds(2600)));
  EXPECT_GT(later.granted, 0u);
  EXPECT_LE(later.granted, 20u + 20u);
}

TEST(QuotaPriority, AHigherClassWaitsAtMostTheLowerLookaheadBehindBulk) {
  const RateLimit p{400, 20};
  auto b = makeLocalQuotaBackend();
  one(*b, classRequest(1, 1, p), at(seconds(0)));  // transactional asked: bulk is "lower"
  // Bulk takes everything it may: burst + 50 ms.
  EXPECT_EQ(one(*b, classRequest(2, 10'000, p), at(milliseconds(1))).granted, 20u + 19u);
  // Transactional's next token is due no later than about 50 ms from now.
  const LeaseReply t = one(*b, classRequest(1, 1, p), at(milliseconds(2)));
  ASSERT_EQ(t.granted, 1u);
  const double due_s = (1.0 - t.start_tokens) / t.schedule_rate;
  EXPECT_LE(due_s, 0.051);
}

TEST(QuotaPriority, TheFloorKeepsAShareForALowerClassAskingAndGoesWithIt) {
  const RateLimit p{400, 20};
  auto b = makeLocalQuotaBackend();
  // Both ask; the top class takes all it may (its own bucket: 95 % of the rate).
  one(*b, classRequest(2, 1, p, 0.05), at(seconds(0)));
  std::uint64_t top = 0, low = 0;
  for (int ms = 0; ms < 20'000; ms += 5) {
    top += one(*b, classRequest(0, 10'000, p, 0.05), at(milliseconds(ms))).granted;
    low += one(*b, classRequest(2, 10'000, p, 0.05), at(milliseconds(ms))).granted;
  }
  // Over 20 s the level gave about 8,000: never more (grants made ahead are
  // due by 20.25 s), and the lower class got its floor once the top class's
  // debt (250 ms) was paid: 5 % of 400/s.
  EXPECT_LE(top + low, 20u + 400u * 20u + 100u);
  EXPECT_GE(top + low, 400u * 20u - 100u);
  EXPECT_GE(low, static_cast<std::uint64_t>(0.05 * 400 * 15));
  EXPECT_LE(low, static_cast<std::uint64_t>(0.05 * 400 * 20) + 40u);
  // Without a floor the top class starves it.
  auto c = makeLocalQuotaBackend();
  std::uint64_t starved = 0;
  one(*c, classRequest(2, 1, p), at(seconds(0)));
  for (int ms = 0; ms < 5'000; ms += 5) {
    one(*c, classRequest(0, 10'000, p), at(milliseconds(ms)));
    starved += one(*c, classRequest(2, 10'000, p), at(milliseconds(ms))).granted;
  }
  EXPECT_LE(starved, 1u);
}

TEST(QuotaPriority, AClassStopsCountingAsAskingAfterItsWindow) {
  const RateLimit p{400, 20};
  auto b = makeLocalQuotaBackend();
  one(*b, classRequest(0, 1, p), at(seconds(0)));
  // At 0.5 s rank 0 still asks: rank 2 is held to 50 ms ahead.
  EXPECT_LE(one(*b, classRequest(2, 10'000, p), at(milliseconds(500))).granted, 20u + 20u);
  // At 3 s it has not asked for over a second (want 0 does not count): it
  // is remembered, so bulk borrows 250 ms, not 50.
  one(*b, classRequest(0, 0, p), at(milliseconds(1900)));
  const LeaseReply r = one(*b, classRequest(2, 10'000, p), at(seconds(3)));
  EXPECT_EQ(r.granted, 120u);
}

// Four workers, each with a bulk campaign (endless backlog) and a
// transactional one that gets 50 messages/s in all, at random workers and
// times, on one provider of 400/s: transactional messages wait little, bulk
// uses the rest, and no one-second window carries more than rate + burst.
TEST(QuotaPriorityProperty, FourWorkersBulkUsesTheRestAndTransactionalWaitsLittle) {
  auto backend = makeLocalQuotaBackend();
  LeaseOptions o;
  o.live_workers = 4;
  o.priority.enabled = true;
  constexpr Nanos kTick = milliseconds(5);
  o.tick = kTick;
  const RateLimit provider{400, 20};
  struct W {
    std::unique_ptr<Scheduler> scheduler;
    std::unique_ptr<QuotaLeaser> leaser;
    CampaignId bulk = 0, txn = 0;
    std::deque<MonoTime> arrivals;
  };
  std::vector<W> ws(4);
  for (std::size_t i = 0; i < ws.size(); ++i) {
    W& w = ws[i];
    o.seed = 100 + i;
    w.scheduler = std::make_unique<Scheduler>(SchedulerOptions{});
    w.leaser = std::make_unique<QuotaLeaser>(*w.scheduler, *backend, o);
    QuotaProviderSpec ps;
    ps.name = "sms";
    ps.limit = provider;
    const std::uint32_t pid = w.leaser->addProvider(ps);
    QuotaCampaignSpec bulk{"bulk", std::nullopt, 1.0, pid};
    bulk.priority = 2;
    QuotaCampaignSpec txn{"txn", std::nullopt, 1.0, pid};
    txn.priority = 1;
    w.bulk = w.leaser->addCampaign(bulk, MonoTime{});
    w.txn = w.leaser->addCampaign(txn, MonoTime{});
    w.scheduler->addBacklog(w.bulk, 1ull << 40);
  }
  std::mt19937_64 rng(7);
  std::exponential_distribution<double> gap(50.0);
  double next_arrival = 0.5;
  std::vector<std::uint32_t> per_tick;
  std::vector<double> waits;
  std::vector<double> arrived_at;  // per wait, when its message arrived
  std::uint64_t bulk_sent = 0;
  const int ticks = 60 * 200;  // 60 simulated seconds
  for (int k = 0; k < ticks; ++k) {
    const MonoTime now{kTick * k};
    const double t = static_cast<double>(k) * 0.005;
    while (next_arrival <= t) {
      W& w = ws[rng() % ws.size()];
      w.arrivals.push_back(MonoTime{std::chrono::duration_cast<Nanos>(std::chrono::duration<double>(next_arrival))});
      w.scheduler->addBacklog(w.txn, 1);
      next_arrival += gap(rng);
    }
    std::uint32_t sent = 0;
    for (W& w : ws) {
      w.leaser->refresh(now);
      for (const Grant& g : w.scheduler->tick(now, kUnlimitedCapacity)) {
        sent += static_cast<std::uint32_t>(g.count);
        if (g.campaign == w.bulk) {
          bulk_sent += g.count;
          continue;
        }
        for (std::uint64_t j = 0; j < g.count; ++j) {
          waits.push_back(std::chrono::duration<double>(now - w.arrivals.front()).count());
          arrived_at.push_back(std::chrono::duration<double>(w.arrivals.front().time_since_epoch()).count());
          w.arrivals.pop_front();
        }
      }
    }
    per_tick.push_back(sent);
  }
  ASSERT_GT(waits.size(), 2500u);
  // The first transactional messages wait behind what bulk borrowed alone
  // (up to the full lookahead, 1 s); from then on behind 50 ms of bulk at most.
  double worst_later = 0;
  for (std::size_t i = 0; i < waits.size(); ++i)
    if (arrived_at[i] > 2.0) worst_later = std::max(worst_later, waits[i]);
  EXPECT_LE(worst_later, 0.1);
  std::sort(waits.begin(), waits.end());
  const double p99 = waits[waits.size() * 99 / 100];
  EXPECT_LE(p99, 0.1) << "max " << waits.back();
  EXPECT_LE(waits.back(), 1.05);
  // Never over: any 200 ticks (1 s) carry at most rate * (1 s - a tick) + burst.
  EXPECT_LE(static_cast<double>(pacer::testing::maxWindowSum(per_tick, 200)), 400.0 * 0.995 + 20 + 1e-9);
  // The provider is used: bulk takes what transactional leaves, >= 95 %.
  const double total = static_cast<double>(bulk_sent + waits.size());
  std::uint64_t batches = 0, refused = 0, requests = 0;
  for (const W& w : ws) {
    batches += w.leaser->metrics().batches;
    refused += w.leaser->metrics().refused;
    requests += w.leaser->metrics().requests;
  }
  std::printf("p50 %.4f p99 %.4f max %.4f (after 2 s: %.4f) used %.4f; round trips per message %.3f (%llu requests, %llu refused)\n",
              waits[waits.size() / 2], p99, waits.back(), worst_later, total / (400.0 * 60), batches / total,
              static_cast<unsigned long long>(requests), static_cast<unsigned long long>(refused));
  EXPECT_GE(total, 0.95 * 400 * 60);
}

}  // namespace
}  // namespace pacer
