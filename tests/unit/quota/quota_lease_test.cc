#include "pacer/quota_lease.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "support/series.h"

namespace pacer {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Counts calls and can be switched off (as if Redis were unreachable) or
// replaced by an empty one (as if Redis restarted and lost its keys).
class FlakyBackend final : public QuotaBackend {
 public:
  void acquire(std::span<const LeaseRequest> requests, MonoTime now, std::span<LeaseReply> replies) noexcept override {
    ++calls;
    batch_sizes.push_back(requests.size());
    for (const LeaseRequest& r : requests) saw_fill_new_false = saw_fill_new_false || !r.fill_new;
    if (down) {
      for (LeaseReply& r : replies) r = LeaseReply{};
      return;
    }
    inner->acquire(requests, now, replies);
    for (std::size_t i = 0; i < requests.size(); ++i) {
      if (requests[i].scope != refused_scope) continue;
      replies[i] = LeaseReply{};
      replies[i].status = QuotaStatus::kRefusedLimit;
      replies[i].refusal = LimitRefusal::kRefillTooLong;
    }
  }
  void restart() { inner = makeLocalQuotaBackend(); }

  QuotaBackendPtr inner = makeLocalQuotaBackend();
  bool down = false;
  std::string refused_scope;  // requests of this scope get Redis's typed refusal of a limit
  bool saw_fill_new_false = false;
  std::uint64_t calls = 0;
  std::vector<std::size_t> batch_sizes;
};

class RecordingObserver final : public QuotaObserver {
 public:
  void onDegraded(std::string_view provider, DegradedMode, bool entered) noexcept override {
    events.push_back(std::string(entered ? "enter " : "leave ") + std::string(provider));
  }
  std::vector<std::string> events;
};

struct Worker {
  Worker(QuotaBackend& backend, LeaseOptions options, QuotaObserver* observer = nullptr)
      : scheduler(SchedulerOptions{}), leaser(scheduler, backend, options, observer) {}
  // One tick: refresh the leases, then spend through the scheduler.
  std::uint64_t tick(MonoTime now) {
    leaser.refresh(now);
    std::uint64_t sent = 0;
    for (const Grant& g : scheduler.tick(now, kUnlimitedCapacity)) {
      sent += g.count;
      by_campaign[g.campaign] += g.count;
    }
    return sent;
  }
  std::map<CampaignId, std::uint64_t> by_campaign;  // sends per campaign
  Scheduler scheduler;
  QuotaLeaser leaser;
};

constexpr std::uint64_t kEndless = 1ull << 40;

QuotaProviderSpec prov(std::string name, std::optional<RateLimit> limit, DegradedMode mode = DegradedMode::kLocalShare,
                       std::optional<AdaptiveRateOptions> adaptive = std::nullopt, ProviderId local = kNoProvider) {
  QuotaProviderSpec p;
  p.name = std::move(name);
  p.limit = limit;
  p.degraded = mode;
  p.adaptive = adaptive;
  p.local_provider = local;
  return p;
}

TEST(QuotaLeaser, OneBatchPerRefreshForEveryActiveCampaignRunningLow) {
  FlakyBackend backend;
  LeaseOptions o;
  o.horizon = milliseconds(50);
  Worker w(backend, o);
  const std::uint32_t p =
      w.leaser.addProvider(prov("sms", RateLimit{1000, 100}, DegradedMode::kLocalShare, std::nullopt));
  std::vector<CampaignId> ids;
  for (int i = 0; i < 5; ++i)
    ids.push_back(w.leaser.addCampaign({"c" + std::to_string(i), RateLimit{100, 10}, 1.0, p}, MonoTime{}));
  const CampaignId idle = w.leaser.addCampaign({"idle", RateLimit{100, 10}, 1.0, p}, MonoTime{});
  for (CampaignId id : ids) w.scheduler.addBacklog(id, 1000);
  EXPECT_EQ(w.leaser.refresh(MonoTime{}), 5u);
  ASSERT_EQ(backend.calls, 1u);
  EXPECT_EQ(backend.batch_sizes[0], 5u);
  EXPECT_EQ(w.leaser.held(idle, MonoTime{}), 0u);
  // Each got its target: 100/s * 50 ms = 5 tokens.
  for (CampaignId id : ids) EXPECT_EQ(w.leaser.held(id, MonoTime{}), 5u);
  // Leases are full: the next refresh makes no call at all.
  EXPECT_EQ(w.leaser.refresh(MonoTime{}), 0u);
  EXPECT_EQ(backend.calls, 1u);
}

TEST(QuotaLeaser, LeaseIsSizedToBacklogAndLiveWorkerShare) {
  FlakyBackend backend;
  LeaseOptions o;
  o.live_workers = 4;
  o.horizon = milliseconds(100);
  o.ttl = milliseconds(250);
  Worker w(backend, o);
  const CampaignId a = w.leaser.addCampaign({"a", RateLimit{4000, 4000}, 1.0, UINT32_MAX}, MonoTime{});
  const CampaignId b = w.leaser.addCampaign({"b", RateLimit{4000, 4000}, 1.0, UINT32_MAX}, MonoTime{});
  w.scheduler.addBacklog(a, kEndless);
  w.scheduler.addBacklog(b, 7);
  w.leaser.refresh(MonoTime{});
  EXPECT_EQ(w.leaser.held(a, MonoTime{}), 100u);  // 4000/s / 4 workers * 100 ms
  EXPECT_EQ(w.leaser.held(b, MonoTime{}), 7u);    // no more than its backlog
  // Two more workers joined: the next lease is a sixth of the rate's horizon.
  w.leaser.setLiveWorkers(6);
  const MonoTime later = MonoTime{} + milliseconds(300);  // the first lease expired
  w.leaser.refresh(later);
  EXPECT_EQ(w.leaser.held(a, later), 67u);  // ceil(4000 / 6 * 0.1)
  EXPECT_THROW(w.leaser.setLiveWorkers(0), SchedulerError);
}

// Simulates `workers` workers sharing one provider bucket (rate, burst) for
// `secs` seconds with endless demand; returns sends per millisecond.
std::vector<std::uint64_t> runShared(QuotaBackend& backend, int workers, int campaigns_each, double rate, double burst,
                                     int secs, LeaseOptions o, Nanos tick = milliseconds(5),
                                     std::map<CampaignId, std::uint64_t>* by_campaign = nullptr) {
  o.live_workers = static_cast<std::uint32_t>(workers);
  std::vector<std::unique_ptr<Worker>> ws;
  for (int i = 0; i < workers; ++i) {
    o.seed = static_cast<std::uint64_t>(i) + 1;  // as separate processes would be
    ws.push_back(std::make_unique<Worker>(backend, o));
    const std::uint32_t p =
        ws.back()->leaser.addProvider(prov("gw", RateLimit{rate, burst}, DegradedMode::kLocalShare, std::nullopt));
    for (int c = 0; c < campaigns_each; ++c) {
      const CampaignId id = ws.back()->leaser.addCampaign({"c" + std::to_string(c), std::nullopt, 1.0, p}, MonoTime{});
      ws.back()->scheduler.addBacklog(id, kEndless);
    }
  }
  std::vector<std::uint64_t> per_ms(static_cast<std::size_t>(secs) * 1000 + 1, 0);
  // Workers tick at staggered phases, as independent processes would.
  for (Nanos t{0}; t < seconds(secs); t += tick / workers)
    for (int i = 0; i < workers; ++i) {
      const Nanos phase = t + tick * i / workers;
      if (phase % tick != Nanos{0} || phase >= seconds(secs)) continue;
      per_ms[static_cast<std::size_t>(phase / milliseconds(1))] +=
          ws[static_cast<std::size_t>(i)]->tick(MonoTime{} + phase);
    }
  if (by_campaign)
    for (const auto& w : ws)
      for (const auto& [id, n] : w->by_campaign) (*by_campaign)[id] += n;
  return per_ms;
}

// Workers sharing a provider that is the bottleneck (two campaigns each, the
// provider's small default burst): never over rate + burst in any second,
// the rate used, and few round trips per message however many workers share
// it: each grant is the worker's share of the provider for half a second,
// granted ahead of time and spent as it falls due.
TEST(QuotaLeaser, WorkersSharingAProviderStayWithinRatePlusBurstUseItAndAskRarely) {
  for (int workers : {1, 4}) {
    FlakyBackend backend;
    const double rate = 400, burst = 5;
    const auto per_ms = runShared(backend, workers, 2, rate, burst, 30, LeaseOptions{});
    const std::uint64_t peak = testing::maxWindowSum(per_ms, 1000);
    std::uint64_t total = 0;
    for (auto v : per_ms) total += v;
    EXPECT_LE(static_cast<double>(peak), rate + burst) << workers << " workers";
    EXPECT_LE(static_cast<double>(total), rate * 30 + burst) << workers << " workers";
    EXPECT_GE(static_cast<double>(total), 0.99 * rate * 30) << workers << " workers";
    const double per_message = static_cast<double>(backend.calls) / static_cast<double>(total);
    std::printf("%d workers, 2 campaigns each, provider 400/s burst 5: %.4f round trips per message\n", workers,
                per_message);
    EXPECT_LE(per_message, 0.05) << workers << " workers";
  }
}

// Twenty campaigns per worker behind one provider bucket: when the provider's
// bucket is the one that ran dry, all of a worker's campaigns of that provider
// wait together and come back in one batch, so calls do not grow with the
// number of campaigns; the batch's order rotates, so no campaign starves.
TEST(QuotaLeaser, ManyCampaignsBehindOneProviderShareItFairlyInFewCalls) {
  FlakyBackend backend;
  std::map<CampaignId, std::uint64_t> by_campaign;
  const auto per_ms = runShared(backend, 4, 20, 400, 40, 20, LeaseOptions{}, milliseconds(5), &by_campaign);
  std::uint64_t total = 0;
  for (auto v : per_ms) total += v;
  ASSERT_EQ(by_campaign.size(), 20u);
  for (const auto& [id, n] : by_campaign)
    EXPECT_NEAR(static_cast<double>(n), static_cast<double>(total) / 20, 0.1 * static_cast<double>(total) / 20)
        << "campaign " << id;
  EXPECT_GE(static_cast<double>(total), 0.98 * 400 * 20);
  EXPECT_LE(testing::maxWindowSum(per_ms, 1000), 440u);
  EXPECT_LE(static_cast<double>(backend.calls) / static_cast<double>(total), 0.15);
}

TEST(QuotaLeaser, FarFewerBackendCallsThanMessages) {
  FlakyBackend backend;
  const auto per_ms = runShared(backend, 1, 1, 5000, 500, 10, LeaseOptions{}, milliseconds(5));
  std::uint64_t total = 0;
  for (auto v : per_ms) total += v;
  ASSERT_GT(total, 49000u);
  EXPECT_LE(static_cast<double>(backend.calls) / static_cast<double>(total), 0.01);
}

// Issue 3's goal with four workers sharing one 5,000/s quota: at most one
// backend call per 100 messages, the quota used, and never over.
TEST(QuotaLeaser, FourWorkersSharing5000PerSecondMakeFewBackendCalls) {
  FlakyBackend backend;
  const double rate = 5000, burst = 500;
  const auto per_ms = runShared(backend, 4, 1, rate, burst, 10, LeaseOptions{});
  std::uint64_t total = 0;
  for (auto v : per_ms) total += v;
  const double ratio = static_cast<double>(backend.calls) / static_cast<double>(total);
  std::printf("four workers on 5000/s: %.4f backend calls per message\n", ratio);
  EXPECT_GE(static_cast<double>(total), 0.98 * rate * 10);
  EXPECT_LE(static_cast<double>(testing::maxWindowSum(per_ms, 1000)), rate + burst);
  EXPECT_LE(ratio, 0.01);
}

// A bucket of two tokens: the pause after a dry grant must end before the
// bucket is full again, counting the fraction of a token the grant left, or
// what accrues spills and a worker alone falls short of the rate.
// scripts/demo's campaigns: small campaign buckets under a provider that
// covers them all. Each must reach its own rate. (With a lease spent over the
// whole horizon rather than before the campaign's small bucket is full again,
// the 100/s campaign reached 88/s: the tokens it still held kept it from
// asking in time, and its bucket overflowed.)
TEST(QuotaLeaser, SmallCampaignBucketsUnderAProviderEachReachTheirRate) {
  FlakyBackend backend;
  Worker w(backend, LeaseOptions{});
  const std::uint32_t p =
      w.leaser.addProvider(prov("sms", RateLimit{150, 10}, DegradedMode::kLocalShare, std::nullopt));
  const std::vector<std::pair<double, double>> specs{{100, 5}, {40, 2}, {5, 1}};
  std::vector<CampaignId> ids;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    ids.push_back(w.leaser.addCampaign({"c" + std::to_string(i), RateLimit{specs[i].first, specs[i].second}, 1.0, p},
                                       MonoTime{}));
    w.scheduler.addBacklog(ids.back(), kEndless);
  }
  for (int ms = 0; ms < 20000; ms += 5) w.tick(MonoTime{} + milliseconds(ms));
  for (std::size_t i = 0; i < specs.size(); ++i)
    EXPECT_GE(static_cast<double>(w.by_campaign[ids[i]]), 0.97 * specs[i].first * 20) << specs[i].first << "/s";
}

TEST(QuotaLeaser, AWorkerAloneOnATinyBurstLosesNothing) {
  for (double rate : {40.0, 100.0})
    for (double burst : {1.0, 2.0, 5.0, 10.0}) {
      FlakyBackend backend;
      Worker w(backend, LeaseOptions{});
      const CampaignId id = w.leaser.addCampaign({"a", RateLimit{rate, burst}, 1.0, UINT32_MAX}, MonoTime{});
      w.scheduler.addBacklog(id, kEndless);
      std::uint64_t sent = 0;
      for (int ms = 0; ms < 20000; ms += 5) sent += w.tick(MonoTime{} + milliseconds(ms));
      EXPECT_GE(static_cast<double>(sent), 0.97 * rate * 20) << rate << "/s, burst " << burst;
      EXPECT_LE(static_cast<double>(sent), rate * 20 + burst) << rate << "/s, burst " << burst;
    }
}

// A lease token not spent within the lag after it falls due is forfeited
// (spent later, it would land on top of the tokens due then); tokens not due
// yet expire at the ttl.
TEST(QuotaLeaser, UnspentLeaseTokensAreForfeitedOrExpire) {
  FlakyBackend backend;
  LeaseOptions o;
  o.horizon = milliseconds(50);
  o.ttl = milliseconds(200);
  Worker w(backend, o);
  // 1000/s with a burst of 100: a lease of 50, all due at once.
  const CampaignId a = w.leaser.addCampaign({"a", RateLimit{1000, 100}, 1.0, UINT32_MAX}, MonoTime{});
  w.scheduler.addBacklog(a, 1000);
  w.leaser.refresh(MonoTime{});
  EXPECT_EQ(w.leaser.held(a, MonoTime{} + milliseconds(7)), 50u) << "within the lag (1.5 ticks)";
  EXPECT_EQ(w.leaser.held(a, MonoTime{} + milliseconds(8)), 0u) << "forfeited";
  EXPECT_EQ(w.scheduler.limiterOf(a)->available(MonoTime{} + milliseconds(8), 1000), 0u);
  w.leaser.refresh(MonoTime{} + milliseconds(300));
  EXPECT_GE(w.leaser.metrics().tokens_expired, 50u);
  EXPECT_EQ(w.leaser.metrics().tokens_late, 50u) << "all 50 fell due and were not spent within the lag";

  // 10/s with a burst of 1: a lease of 1 due now, and nothing more is due
  // soon; asked again it waits for its turn, then expires if never spent.
  FlakyBackend backend2;
  o.horizon = milliseconds(1000);
  Worker u(backend2, o);
  const CampaignId b = u.leaser.addCampaign({"b", RateLimit{10, 1}, 1.0, UINT32_MAX}, MonoTime{});
  u.scheduler.addBacklog(b, 1000);
  u.leaser.refresh(MonoTime{});
  const std::uint64_t held = u.leaser.held(b, MonoTime{} + milliseconds(1));
  EXPECT_EQ(held, 10u) << "a second of 10/s, due over that second";
  EXPECT_EQ(u.leaser.held(b, MonoTime{} + milliseconds(199)), held - 2)
      << "the first two (due at 0 and 100 ms) were forfeited; the rest are not due yet";
  EXPECT_EQ(u.leaser.held(b, MonoTime{} + milliseconds(200)), 0u) << "the rest expired at the ttl";
  u.leaser.refresh(MonoTime{} + milliseconds(200));
  EXPECT_EQ(u.leaser.metrics().tokens_late, 2u) << "late: the two forfeited, not those the ttl took";
  EXPECT_EQ(u.leaser.metrics().tokens_expired, held) << "expired: all of them";
}

TEST(QuotaLeaser, RateZeroSendsNothing) {
  FlakyBackend backend;
  Worker w(backend, LeaseOptions{});
  const CampaignId id = w.leaser.addCampaign({"a", RateLimit{0, 100}, 1.0, UINT32_MAX}, MonoTime{});
  w.scheduler.addBacklog(id, 1000);
  std::uint64_t sent = 0;
  for (int i = 0; i < 1000; ++i) sent += w.tick(MonoTime{} + milliseconds(5 * i));
  EXPECT_EQ(sent, 0u);
}

TEST(QuotaLeaser, RateChangeMidRunTakesEffect) {
  FlakyBackend backend;
  LeaseOptions o;
  o.horizon = milliseconds(50);  // small leases, so calendar seconds show the rate closely
  Worker w(backend, o);
  const std::uint32_t p = w.leaser.addProvider(prov("gw", RateLimit{400, 40}, DegradedMode::kLocalShare, std::nullopt));
  const CampaignId id = w.leaser.addCampaign({"a", std::nullopt, 1.0, p}, MonoTime{});
  w.scheduler.addBacklog(id, kEndless);
  std::vector<std::uint64_t> per_s(20, 0);
  for (int ms = 0; ms < 20000; ms += 5) {
    if (ms == 10000) w.leaser.setProviderLimit(p, RateLimit{100, 10}, MonoTime{} + milliseconds(ms));
    per_s[static_cast<std::size_t>(ms / 1000)] += w.tick(MonoTime{} + milliseconds(ms));
  }
  for (int s = 1; s < 10; ++s) EXPECT_NEAR(static_cast<double>(per_s[s]), 400, 25) << "second " << s;
  for (int s = 12; s < 20; ++s) EXPECT_NEAR(static_cast<double>(per_s[s]), 100, 10) << "second " << s;
}

// A typed refusal (a provider's limit Redis cannot hold) is an answer, not an
// outage: no degraded mode (which flapped with every answer), nothing granted
// to that provider's campaigns, asked again about once a second, and the
// other providers' campaigns lease and send at their rates.
TEST(QuotaLeaser, ARefusedLimitGrantsNothingAndNeverEntersDegradedMode) {
  FlakyBackend backend;
  backend.refused_scope = "tiny";
  RecordingObserver observer;
  LeaseOptions o;
  o.horizon = milliseconds(50);
  Worker w(backend, o, &observer);
  const std::uint32_t tiny = w.leaser.addProvider(prov("tiny", RateLimit{1e-300, 1}));
  const std::uint32_t sms = w.leaser.addProvider(prov("sms", RateLimit{400, 40}));
  const CampaignId stuck = w.leaser.addCampaign({"stuck", RateLimit{100, 10}, 1.0, tiny}, MonoTime{});
  const CampaignId good = w.leaser.addCampaign({"good", RateLimit{100, 10}, 1.0, sms}, MonoTime{});
  w.scheduler.addBacklog(stuck, kEndless);
  w.scheduler.addBacklog(good, kEndless);
  for (int ms = 0; ms < 10000; ms += 5) w.tick(MonoTime{} + milliseconds(ms));
  EXPECT_EQ(w.by_campaign[stuck], 0u);
  EXPECT_LE(w.by_campaign[good], 1010u) << "never above 100/s x 10 s + its burst";
  EXPECT_GE(w.by_campaign[good], 950u) << "the other provider's campaign keeps its rate";
  EXPECT_TRUE(observer.events.empty()) << observer.events.front();
  EXPECT_FALSE(w.leaser.degraded(tiny));
  EXPECT_EQ(w.leaser.metrics().unavailable, 0u);
  EXPECT_GE(w.leaser.metrics().refused, 5u);
  EXPECT_LE(w.leaser.metrics().refused, 12u) << "asked again about once a second, not every tick";
}

TEST(QuotaLeaser, UnavailableQuotaSwitchesToLocalShareWithin100MsAndBack) {
  FlakyBackend backend;
  RecordingObserver observer;
  LeaseOptions o;
  o.live_workers = 2;
  o.safety_factor = 0.5;
  o.horizon = milliseconds(50);  // small leases, so calendar seconds show the rate closely
  Worker w(backend, o, &observer);
  const std::uint32_t p =
      w.leaser.addProvider(prov("gw", RateLimit{1000, 100}, DegradedMode::kLocalShare, std::nullopt));
  const CampaignId id = w.leaser.addCampaign({"a", std::nullopt, 1.0, p}, MonoTime{});
  w.scheduler.addBacklog(id, kEndless);
  int entered_at = -1;
  std::vector<std::uint64_t> per_s(30, 0);
  for (int ms = 0; ms < 30000; ms += 5) {
    if (ms == 10000) backend.down = true;
    if (ms == 20000) {
      backend.down = false;
      backend.restart();  // Redis came back empty
    }
    per_s[static_cast<std::size_t>(ms / 1000)] += w.tick(MonoTime{} + milliseconds(ms));
    if (entered_at < 0 && w.leaser.degraded(p)) entered_at = ms;
  }
  ASSERT_GE(entered_at, 10000);
  EXPECT_LE(entered_at, 10100);
  // Degraded: 1000/s * 0.5 / 2 workers = 250/s.
  for (int s = 11; s < 20; ++s) EXPECT_NEAR(static_cast<double>(per_s[s]), 250, 10) << "second " << s;
  // Recovered, with no catch-up burst: the restarted bucket starts empty.
  EXPECT_TRUE(backend.saw_fill_new_false);
  EXPECT_FALSE(w.leaser.degraded(p));
  for (int s = 20; s < 30; ++s) EXPECT_LE(per_s[s], 1000u + 25u) << "second " << s;
  for (int s = 21; s < 30; ++s) EXPECT_GE(per_s[s], 975u) << "second " << s;
  EXPECT_EQ(observer.events, (std::vector<std::string>{"enter gw", "leave gw"}));
  EXPECT_EQ(w.leaser.metrics().degraded_entered, 1u);
  EXPECT_EQ(w.leaser.metrics().degraded_left, 1u);
  EXPECT_EQ(w.leaser.metrics().degraded_providers, 0u);
}

TEST(QuotaLeaser, StopModeSendsNothingBeyondLeasesHeld) {
  FlakyBackend backend;
  Worker w(backend, LeaseOptions{});
  const std::uint32_t p = w.leaser.addProvider(prov("gw", RateLimit{1000, 100}, DegradedMode::kStop, std::nullopt));
  const CampaignId id = w.leaser.addCampaign({"a", std::nullopt, 1.0, p}, MonoTime{});
  w.scheduler.addBacklog(id, kEndless);
  for (int ms = 0; ms < 1000; ms += 5) w.tick(MonoTime{} + milliseconds(ms));
  backend.down = true;
  const std::uint64_t held = w.leaser.held(id, MonoTime{} + milliseconds(1000));
  std::uint64_t sent = 0;
  for (int ms = 1000; ms < 5000; ms += 5) sent += w.tick(MonoTime{} + milliseconds(ms));
  EXPECT_TRUE(w.leaser.degraded(p));
  EXPECT_LE(sent, held);
  EXPECT_EQ(w.leaser.metrics().degraded_providers, 1u);
}

TEST(QuotaLeaser, RefusesBadConfiguration) {
  FlakyBackend backend;
  Worker w(backend, LeaseOptions{});
  EXPECT_THROW(w.leaser.addProvider(prov("gw", RateLimit{-1, 10}, DegradedMode::kStop, std::nullopt)), SchedulerError);
  EXPECT_THROW(w.leaser.addProvider(prov("gw", RateLimit{std::nan(""), 10}, DegradedMode::kStop, std::nullopt)),
               SchedulerError);
  EXPECT_THROW(w.leaser.addProvider(prov("g{w}", RateLimit{1, 10}, DegradedMode::kStop, std::nullopt)), SchedulerError);
  EXPECT_THROW(w.leaser.addCampaign({"a", RateLimit{-5, 1}, 1.0, UINT32_MAX}, MonoTime{}), SchedulerError);
  EXPECT_THROW(w.leaser.addCampaign({"a", std::nullopt, 1.0, 99}, MonoTime{}), SchedulerError);
  LeaseOptions bad;
  bad.live_workers = 0;
  Scheduler s(SchedulerOptions{});
  EXPECT_THROW(QuotaLeaser(s, backend, bad), SchedulerError);
}

// A provider that throttles one worker is slowed and paused for all: the
// report goes to the shared state with the next refresh; the other worker
// hears of the pause at its next request and drops the leases it holds.
TEST(QuotaLeaser, OneWorkersThrottleReportPausesEveryWorkerAndHalvesTheSharedRate) {
  QuotaBackendPtr backend = makeLocalQuotaBackend();
  LeaseOptions o;
  o.live_workers = 2;
  std::vector<std::unique_ptr<Worker>> ws;
  std::vector<std::uint32_t> pid;
  for (int i = 0; i < 2; ++i) {
    o.seed = static_cast<std::uint64_t>(i) + 1;
    ws.push_back(std::make_unique<Worker>(*backend, o));
    pid.push_back(ws.back()->leaser.addProvider(
        prov("gw", RateLimit{400, 40}, DegradedMode::kLocalShare, AdaptiveRateOptions{})));
    const CampaignId id = ws.back()->leaser.addCampaign({"c", std::nullopt, 1.0, pid.back()}, MonoTime{});
    ws.back()->scheduler.addBacklog(id, kEndless);
  }
  const Nanos tick = milliseconds(5);
  std::vector<std::uint64_t> per_ms(6001, 0);
  const MonoTime t0{};
  const Nanos report_at = seconds(2);
  std::optional<double> during[2];
  for (Nanos t{0}; t < seconds(6); t += tick) {
    if (t == report_at) ws[0]->leaser.reportThrottle(pid[0], seconds(1));  // worker 0 got a 429, Retry-After 1 s
    if (t == report_at + milliseconds(500))
      for (int i = 0; i < 2; ++i)
        during[i] = ws[static_cast<std::size_t>(i)]->leaser.effectiveRate(pid[static_cast<std::size_t>(i)]);
    for (int i = 0; i < 2; ++i) {
      const Nanos phase = t + tick * i / 2;  // staggered, as two processes
      per_ms[static_cast<std::size_t>(phase / milliseconds(1))] += ws[static_cast<std::size_t>(i)]->tick(t0 + phase);
    }
  }
  auto sum = [&](int from_ms, int to_ms) {
    std::uint64_t n = 0;
    for (int ms = from_ms; ms < to_ms; ++ms) n += per_ms[static_cast<std::size_t>(ms)];
    return n;
  };
  EXPECT_GE(sum(1000, 2000), 390u) << "both workers together use the provider's 400/s before";
  // Worker 1 spends what falls due of its lease until its next request (at
  // most a quarter of a second of its share, 200/s), then hears of the pause.
  EXPECT_LE(sum(2000, 2300), 60u);
  EXPECT_EQ(sum(2300, 3000), 0u) << "the pause holds for every worker";
  EXPECT_EQ(ws[1]->leaser.metrics().shared_pauses, 1u);
  EXPECT_EQ(ws[0]->leaser.metrics().throttle_reports, 1u);
  // Half-way through the pause both workers know the shared rate: 0.8 of 400.
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(during[i].has_value()) << i;
    EXPECT_DOUBLE_EQ(*during[i], 320.0) << i;
  }
  // After it the shared rate climbs fast from 320 to 0.98 of 400, where the
  // 429 came: the next second carries 320-392, and the second after that
  // holds just under the limit (392, probing slowly), not back at 400.
  const std::uint64_t after = sum(3005, 4005);
  EXPECT_GE(after, 320u);
  EXPECT_LE(after, 400u);
  const std::uint64_t settled = sum(4500, 5500);
  EXPECT_GE(settled, 385u);
  EXPECT_LE(settled, 396u);
}

TEST(QuotaLeaser, ASlowReportLowersTheSharedRateWithoutAPause) {
  QuotaBackendPtr backend = makeLocalQuotaBackend();
  Worker w(*backend, LeaseOptions{});
  const std::uint32_t p =
      w.leaser.addProvider(prov("gw", RateLimit{400, 40}, DegradedMode::kLocalShare, AdaptiveRateOptions{}));
  const CampaignId id = w.leaser.addCampaign({"c", std::nullopt, 1.0, p}, MonoTime{});
  w.scheduler.addBacklog(id, kEndless);
  for (int ms = 0; ms < 1000; ms += 5) w.tick(MonoTime{} + milliseconds(ms));
  EXPECT_DOUBLE_EQ(*w.leaser.effectiveRate(p), 400.0);
  w.leaser.reportSlow(p);
  w.leaser.refresh(MonoTime{} + milliseconds(1000));
  EXPECT_DOUBLE_EQ(*w.leaser.effectiveRate(p), 320.0);
  std::uint64_t after = 0;
  for (int ms = 1005; ms < 2000; ms += 5) after += w.tick(MonoTime{} + milliseconds(ms));
  EXPECT_GT(after, 300u) << "no pause: it keeps sending, slower";
  EXPECT_LT(after, 395u);
  EXPECT_EQ(w.leaser.pausedUntil(p), MonoTime{});
}

// A lease's tokens are spent as they fall due, not in one tick: whole leases
// spent at once by several workers would reach the provider as bursts.
TEST(QuotaLeaser, ALeaseIsSpentAsItFallsDueNotInOneTick) {
  FlakyBackend backend;
  Worker w(backend, LeaseOptions{});
  const std::uint32_t p = w.leaser.addProvider(prov("gw", RateLimit{400, 40}, DegradedMode::kLocalShare, std::nullopt));
  const CampaignId id = w.leaser.addCampaign({"c", std::nullopt, 1.0, p}, MonoTime{});
  w.scheduler.addBacklog(id, kEndless);
  std::vector<std::uint64_t> per_ms(3000, 0);
  for (int ms = 0; ms < 3000; ms += 5) per_ms[static_cast<std::size_t>(ms)] = w.tick(MonoTime{} + milliseconds(ms));
  // Leases of 200 (400/s * 500 ms) fall due at 400/s: 2 per 5 ms tick.
  EXPECT_LE(testing::maxWindowSum(std::vector<std::uint64_t>(per_ms.begin() + 1000, per_ms.end()), 5), 3u);
  std::uint64_t total = 0;
  for (int ms = 1000; ms < 3000; ++ms) total += per_ms[static_cast<std::size_t>(ms)];
  EXPECT_GE(total, 795u) << "and the worker still uses the whole rate";
}

// A worker whose sink is full cannot spend what falls due: tokens leased to
// it then are forfeited, and lost to every worker. A slotted worker's sink
// holds 10 messages for 100 ms each (an SMSC answering in 100 ms with a
// window of 10: at most 100/s); the others' take anything. Workers tick 5 ms
// apart in turn, on a provider of 400/s.
struct SlottedRun {
  std::uint64_t sent = 0, peak = 0, late = 0, granted = 0, slotted_sent = 0;  // sent: after the first second
};
SlottedRun runSlotted(bool capped, int slotted, int greedy) {
  FlakyBackend backend;
  LeaseOptions o;
  const int n = slotted + greedy;
  o.live_workers = static_cast<std::uint32_t>(n);
  std::vector<std::unique_ptr<Worker>> ws;
  for (int i = 0; i < n; ++i) {
    o.seed = static_cast<std::uint64_t>(i) + 1;
    ws.push_back(std::make_unique<Worker>(backend, o));
    const std::uint32_t p = ws.back()->leaser.addProvider(prov("gw", RateLimit{400, 5}));
    ws.back()->scheduler.addBacklog(ws.back()->leaser.addCampaign({"c", std::nullopt, 1.0, p}, MonoTime{}), kEndless);
  }
  constexpr std::size_t kSlots = 10;
  constexpr Nanos kHold = milliseconds(100);
  std::vector<std::vector<MonoTime>> busy_until(static_cast<std::size_t>(slotted));  // when each message is answered
  std::vector<std::uint64_t> per_ms(10001, 0);
  SlottedRun r;
  const Nanos step = milliseconds(5) / n;
  for (int k = 0; k * step < seconds(10); ++k) {
    const auto i = static_cast<std::size_t>(k % n);
    const MonoTime now = MonoTime{} + k * step;
    const bool slots = i < busy_until.size();
    if (slots) std::erase_if(busy_until[i], [&](MonoTime t) { return t <= now; });
    const std::uint64_t room = slots ? kSlots - busy_until[i].size() : kUnlimitedCapacity;
    if (room == 0) continue;  // a full sink: the worker does not tick (WorkerCore::dispatch)
    ws[i]->leaser.refresh(now, slots && capped ? room : UINT64_MAX);
    for (const Grant& g : ws[i]->scheduler.tick(now, room)) {
      per_ms[static_cast<std::size_t>((now - MonoTime{}) / milliseconds(1))] += g.count;
      if (!slots) continue;
      busy_until[i].insert(busy_until[i].end(), g.count, now + kHold);
      if (now >= MonoTime{} + seconds(1)) r.slotted_sent += g.count;
    }
  }
  for (std::size_t i = 0; i < busy_until.size(); ++i) {
    ws[i]->leaser.refresh(MonoTime{} + seconds(11), 0);  // counts what was forfeited
    r.late += ws[i]->leaser.metrics().tokens_late;
    r.granted += ws[i]->leaser.metrics().tokens_granted;
  }
  for (std::size_t ms = 1000; ms < per_ms.size(); ++ms) r.sent += per_ms[ms];
  r.peak = testing::maxWindowSum(per_ms, 1000);
  return r;
}

void printSlotted(const char* what, const SlottedRun& r) {
  std::printf("%s: %llu sent in 9 s (%llu by the slotted workers), %llu of their %llu tokens forfeited\n", what,
              static_cast<unsigned long long>(r.sent), static_cast<unsigned long long>(r.slotted_sent),
              static_cast<unsigned long long>(r.late), static_cast<unsigned long long>(r.granted));
}

TEST(QuotaLeaser, LeasesStayWithinTheSinksRoomSoAFullSinkForfeitsNothing) {
  // Four workers whose sinks carry just their share (the SMPP defaults at 100 ms).
  const SlottedRun four = runSlotted(true, 4, 0);
  printSlotted("4 sink-bound workers, leases within the room", four);
  printSlotted("the same, leases of the share", runSlotted(false, 4, 0));
  EXPECT_LE(four.peak, 405u);
  EXPECT_GE(four.sent, 0.95 * 4 * 100 * 9) << "each sends what its sink carries";
  EXPECT_LE(four.late * 20, four.granted) << "at most 5% of their tokens forfeited";
  // One sink-bound worker beside one whose sink takes anything: what the
  // first cannot send is left to the second.
  const SlottedRun two = runSlotted(true, 1, 1);
  printSlotted("1 sink-bound worker and 1 not, leases within the room", two);
  printSlotted("the same, leases of the share", runSlotted(false, 1, 1));
  EXPECT_LE(two.peak, 405u);
  EXPECT_GE(two.sent, 0.97 * 400 * 9);
  EXPECT_LE(two.late * 20, two.granted);
  EXPECT_GT(two.slotted_sent, 0u);
}

// Redis down with two workers and two campaigns each on one provider: each
// worker's share is of the provider (rate * safety / workers, split among its
// campaigns by the scheduler), not of each campaign, so the provider's rate
// holds in every second whatever the number of campaigns.
TEST(QuotaLeaser, DegradedModeSharesTheProviderNotEachCampaign) {
  FlakyBackend backend;
  LeaseOptions o;
  o.live_workers = 2;
  const double rate = 400, burst = 5;
  std::vector<std::unique_ptr<Worker>> ws;
  for (int i = 0; i < 2; ++i) {
    o.seed = static_cast<std::uint64_t>(i) + 1;
    ws.push_back(std::make_unique<Worker>(backend, o));
    Worker& w = *ws.back();
    const ProviderId local = w.scheduler.addProvider(ProviderSpec{RateLimit{rate, burst}}, MonoTime{});
    const std::uint32_t p =
        w.leaser.addProvider(prov("gw", RateLimit{rate, burst}, DegradedMode::kLocalShare, std::nullopt, local));
    for (int c = 0; c < 2; ++c) {
      QuotaCampaignSpec spec{"c" + std::to_string(c), RateLimit{300, 5}, 1.0, p, local};
      w.scheduler.addBacklog(w.leaser.addCampaign(spec, MonoTime{}), kEndless);
    }
  }
  std::vector<std::uint64_t> per_ms(20001, 0);
  for (int ms = 0; ms < 20000; ms += 5) {
    backend.down = ms >= 5000 && ms < 15000;
    for (int i = 0; i < 2; ++i)
      per_ms[static_cast<std::size_t>(ms)] += ws[static_cast<std::size_t>(i)]->tick(MonoTime{} + milliseconds(ms));
  }
  EXPECT_LE(testing::maxWindowSum(per_ms, 1000), static_cast<std::uint64_t>(rate + burst));
  std::uint64_t down = 0;
  for (int ms = 6000; ms < 15000; ++ms) down += per_ms[static_cast<std::size_t>(ms)];
  EXPECT_NEAR(static_cast<double>(down), 0.8 * rate * 9, 0.03 * rate * 9) << "the safe share: 0.8 of the provider";
  EXPECT_TRUE(ws[0]->leaser.metrics().degraded_entered == 1 && ws[1]->leaser.metrics().degraded_left == 1);
}

// Every worker reports its answers; half of them faults over the window opens
// the shared breaker, and every worker pauses for the cooldown.
TEST(QuotaLeaser, FaultsReportedByOneWorkerOpenTheBreakerForAll) {
  QuotaBackendPtr backend = makeLocalQuotaBackend();
  LeaseOptions o;
  o.report_interval = milliseconds(100);
  std::vector<std::unique_ptr<Worker>> ws;
  std::vector<std::uint32_t> pid;
  for (int i = 0; i < 2; ++i) {
    o.seed = static_cast<std::uint64_t>(i) + 1;
    ws.push_back(std::make_unique<Worker>(*backend, o));
    pid.push_back(ws.back()->leaser.addProvider(
        prov("gw", RateLimit{400, 40}, DegradedMode::kLocalShare, AdaptiveRateOptions{})));
    ws.back()->scheduler.addBacklog(ws.back()->leaser.addCampaign({"c", std::nullopt, 1.0, pid.back()}, MonoTime{}),
                                    kEndless);
  }
  std::uint64_t sent_after = 0;
  for (int ms = 0; ms < 3000; ms += 5) {
    const MonoTime now = MonoTime{} + milliseconds(ms);
    if (ms == 1000)
      for (int k = 0; k < 30; ++k) ws[0]->leaser.reportAnswer(pid[0], k % 2 == 0);
    const std::uint64_t n0 = ws[0]->tick(now);
    const std::uint64_t n1 = ws[1]->tick(now);
    if (ms >= 1400) sent_after += n0 + n1;
  }
  EXPECT_TRUE(ws[0]->leaser.circuitOpen(pid[0]));
  EXPECT_TRUE(ws[1]->leaser.circuitOpen(pid[1])) << "heard by the other worker";
  EXPECT_EQ(sent_after, 0u) << "both paused for the cooldown";
  EXPECT_GE(ws[0]->leaser.metrics().health_reports, 1u);
}

}  // namespace
}  // namespace pacer
