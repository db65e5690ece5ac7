// The Redis quota backend and leases against a real redis-server.
#include <gtest/gtest.h>
#include <spdlog/logger.h>
#include <spdlog/sinks/ostream_sink.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <sstream>
#include <thread>
#include <vector>

#include "pacer/quota_lease.h"
#include "pacer/quota_log.h"
#include "pacer/quota_redis.h"
#include "support/quota_requests.h"
#include "support/redis_server.h"

namespace pacer {
namespace {

using std::chrono::milliseconds;
using testing::RedisServer;
using testing::waitUntil;

RedisQuotaOptions optionsFor(const RedisServer& s) {
  RedisQuotaOptions o;
  o.nodes = {RedisAddress{"127.0.0.1", s.port()}};
  return o;
}

LeaseRequest request(const std::string& scope, std::vector<QuotaLevel> levels, std::uint64_t want) {
  LeaseRequest r;
  r.scope = scope;
  r.levels = std::move(levels);
  r.want = want;
  return r;
}

LeaseReply one(QuotaBackend& b, const LeaseRequest& r) { return testing::acquireOne(b, r); }

std::int64_t redisMicros(const RedisServer& s) { return s.micros(); }

TEST(RedisQuota, GrantsMinimumOfLevelsWithRedisClock) {
  RedisServer server;
  auto b = makeRedisQuotaBackend(optionsFor(server));
  b->connect();
  const LeaseRequest r = request("sms", {{"c:a", {1000, 10}}, {"p", {100, 4}}}, 100);
  LeaseReply reply = one(*b, r);
  ASSERT_EQ(reply.status, QuotaStatus::kOk);
  EXPECT_EQ(reply.granted, 4u);
  EXPECT_GT(reply.next_token, Nanos{0});
  EXPECT_LE(reply.next_token, milliseconds(11));  // provider: one token per 10 ms
  // The keys carry the provider as hash tag and expire when idle.
  const std::int64_t ttl = std::stoll(server.command("PTTL pacer:{sms}:p"));
  EXPECT_GT(ttl, 0);
  EXPECT_LE(ttl, 2000);
  EXPECT_NE(server.command("PTTL pacer:{sms}:c:a"), "-2");
}

TEST(RedisQuota, RateZeroGrantsNothing) {
  RedisServer server;
  auto b = makeRedisQuotaBackend(optionsFor(server));
  const LeaseReply reply = one(*b, request("z", {{"p", {0, 100}}}, 10));
  ASSERT_EQ(reply.status, QuotaStatus::kOk);
  EXPECT_EQ(reply.granted, 0u);
  EXPECT_EQ(reply.next_token, kNever);
}

TEST(RedisQuota, ErrorReplyCountsAsUnavailableNeverAGrant) {
  RedisServer server;
  auto b = makeRedisQuotaBackend(optionsFor(server));
  server.command("SET pacer:{bad}:p not-a-hash");  // WRONGTYPE inside the script
  const LeaseReply reply = one(*b, request("bad", {{"p", {100, 100}}}, 10));
  EXPECT_EQ(reply.status, QuotaStatus::kUnavailable);
  EXPECT_EQ(reply.granted, 0u);
  EXPECT_EQ(b->stats().reply_errors, 1u);
}

// A limit the script cannot hold is answered with a typed refusal, not a
// Redis error: nothing is granted or written, the stats and the structured
// log (one line per scope, not one per request) say so, and the level is named.
TEST(RedisQuota, ALimitTheScriptCannotHoldIsATypedRefusalNotAnError) {
  RedisServer server;
  RedisQuotaOptions o = optionsFor(server);
  std::ostringstream lines;
  o.log = std::make_shared<spdlog::logger>("t", std::make_shared<spdlog::sinks::ostream_sink_st>(lines));
  auto b = makeRedisQuotaBackend(o);
  for (int i = 0; i < 50; ++i) {  // every tick of a worker, as a provider at 1e-300 would have it
    const LeaseReply tiny = one(*b, request("tiny", {{"c:a", {100, 10}}, {"p", {1e-300, 1}}}, 10));
    ASSERT_EQ(tiny.status, QuotaStatus::kRefusedLimit);
    EXPECT_EQ(tiny.refusal, LimitRefusal::kRefillTooLong);
    EXPECT_EQ(tiny.binding, 1u) << "the provider's level";
    EXPECT_EQ(tiny.granted, 0u);
  }
  EXPECT_EQ(server.command("EXISTS pacer:{tiny}:c:a"), "0") << "nothing taken from the other level";
  const LeaseReply neg = one(*b, request("neg", {{"p", {-5, 100}}}, 10));
  EXPECT_EQ(neg.status, QuotaStatus::kRefusedLimit);
  EXPECT_EQ(neg.refusal, LimitRefusal::kOutOfRange);
  EXPECT_EQ(b->stats().reply_errors, 0u);
  EXPECT_EQ(b->stats().limits_refused, 51u);
  const std::string text = lines.str();
  EXPECT_NE(text.find("event=quota_limit_refused scope=tiny level=1 reason=\"refilling the burst"), std::string::npos)
      << text;
  EXPECT_NE(text.find("event=quota_limit_refused scope=neg level=0"), std::string::npos) << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2) << "one line per scope within 10 s: " << text;
  // The smallest rate every tool accepts, with the largest burst, is held:
  // its key lives as long as its refill, a whole number of milliseconds.
  const LeaseReply slow = one(*b, request("slow", {{"p", {0.001, 1e7}}}, 1));
  ASSERT_EQ(slow.status, QuotaStatus::kOk);
  EXPECT_EQ(slow.granted, 1u);
  const std::int64_t ttl = std::stoll(server.command("PTTL pacer:{slow}:p"));
  EXPECT_GT(ttl, 999'000LL) << "refilling one token takes 1000 s";
  EXPECT_LE(ttl, 1'001'000LL);
}

TEST(RedisQuota, HungRedisTimesOutWithinTheCommandTimeout) {
  RedisServer server;
  RedisQuotaOptions o = optionsFor(server);
  o.link.command_timeout = milliseconds(50);
  auto b = makeRedisQuotaBackend(o);
  b->connect();
  // The backoff runs on the caller's clock: this test's is the steady one.
  auto clock = makeSteadyTimeSource();
  const auto once = [&](const LeaseRequest& req) { return testing::acquireOne(*b, req, clock->now()); };
  const LeaseRequest r = request("hung", {{"p", {1000, 1000}}}, 5);
  ASSERT_EQ(once(r).granted, 5u);
  server.command("CLIENT PAUSE 1500 ALL");  // every other client's command now blocks
  const auto t0 = std::chrono::steady_clock::now();
  const LeaseReply reply = once(r);
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(reply.status, QuotaStatus::kUnavailable);
  EXPECT_EQ(reply.granted, 0u);
  EXPECT_LT(took, milliseconds(100));
  EXPECT_GE(b->stats().timeouts, 1u);
  server.command("CLIENT UNPAUSE");
  // Back after the backoff: waits for it by polling, with a deadline.
  EXPECT_TRUE(waitUntil([&] { return once(r).status == QuotaStatus::kOk; }, std::chrono::seconds(2)));
}

TEST(RedisQuota, NoscriptAfterScriptFlushIsRecovered) {
  RedisServer server;
  auto b = makeRedisQuotaBackend(optionsFor(server));
  b->connect();
  const LeaseRequest r = request("f", {{"p", {1000, 1000}}}, 5);
  ASSERT_EQ(one(*b, r).granted, 5u);
  server.command("SCRIPT FLUSH");
  const LeaseReply reply = one(*b, r);
  EXPECT_EQ(reply.status, QuotaStatus::kOk);
  EXPECT_EQ(reply.granted, 5u);
  EXPECT_EQ(b->stats().noscript_retries, 1u);
  EXPECT_EQ(b->stats().script_loads, 2u);
}

TEST(RedisQuota, BatchIsOneRoundTrip) {
  RedisServer server;
  auto b = makeRedisQuotaBackend(optionsFor(server));
  b->connect();
  std::vector<LeaseRequest> rs;
  for (int i = 0; i < 50; ++i) rs.push_back(request("p" + std::to_string(i), {{"p", {100, 10}}}, 3));
  std::vector<LeaseReply> replies(rs.size());
  const auto before = b->stats().round_trips;
  b->acquire(rs, MonoTime{}, replies);
  EXPECT_EQ(b->stats().round_trips - before, 1u);
  for (const LeaseReply& r : replies) EXPECT_EQ(r.granted, 3u);
}

TEST(RedisQuota, RateChangeTakesEffectWithoutResettingTheBucket) {
  RedisServer server;
  auto b = makeRedisQuotaBackend(optionsFor(server));
  ASSERT_EQ(one(*b, request("rc", {{"p", {50, 20}}}, 1000)).granted, 20u);  // drain
  // A much larger rate and burst: the bucket is not refilled to the new burst.
  const std::int64_t t0 = redisMicros(server);
  const LeaseReply r = one(*b, request("rc", {{"p", {100000, 5000}}}, 100000));
  const std::int64_t t1 = redisMicros(server);
  ASSERT_EQ(r.status, QuotaStatus::kOk);
  // At most what 100000/s (or the old 50/s) accrued since the drain: far below 5000.
  EXPECT_LE(static_cast<double>(r.granted), 100000.0 * static_cast<double>(t1 - t0 + 2000) / 1e6 + 2);
  EXPECT_LT(r.granted, 5000u);
}

// Several threads, each with its own connection, hammer one provider bucket;
// total grants must stay within rate * elapsed (Redis TIME) + burst.
TEST(RedisQuota, ConcurrentWorkersNeverOverGrant) {
  RedisServer server;
  const double rate = 2000, burst = 100;
  constexpr int kThreads = 4;
  std::atomic<std::uint64_t> total{0};
  std::atomic<bool> stop{false};
  const std::int64_t t0 = redisMicros(server);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] {
      RedisQuotaOptions o = optionsFor(server);
      o.link.command_timeout = milliseconds(1000);  // a loaded machine once timed out the default
      auto b = makeRedisQuotaBackend(o);
      // 50 a request: four threads keep the bucket empty with 40 round trips a second between
      // them, even on a loaded machine (at 7 a request they needed 290, and once fell short).
      const LeaseRequest r = request("shared", {{"c:" + std::to_string(i), {1e6, 1e6}}, {"p", {rate, burst}}}, 50);
      while (!stop.load()) {
        const LeaseReply reply = one(*b, r);
        if (reply.status == QuotaStatus::kOk) total += reply.granted;
      }
    });
  waitUntil([&] { return redisMicros(server) - t0 > 1'500'000; }, std::chrono::seconds(10), milliseconds(20));
  stop = true;
  for (auto& t : threads) t.join();
  const double elapsed = static_cast<double>(redisMicros(server) - t0) / 1e6;
  EXPECT_LE(static_cast<double>(total.load()), rate * elapsed + burst);
  EXPECT_GE(static_cast<double>(total.load()), 0.9 * rate * 1.5);
}

// A worker on the real clock: refresh + scheduler tick every 5 ms. Redis is
// killed at 0.6 s and restarted at 1.4 s; the run ends at 2.4 s.
TEST(RedisQuota, RedisKilledAndRestartedMidRunDegradesAndRecovers) {
  RedisServer server;
  RedisQuotaOptions ro = optionsFor(server);
  ro.link.backoff_max = milliseconds(50);
  // Only the kill may degrade: a killed server closes the connection and a
  // stopped one refuses it at once, while on a loaded machine the default
  // command timeout was once passed by a live Redis (a second transition).
  ro.link.command_timeout = milliseconds(1000);
  auto backend = makeRedisQuotaBackend(ro);
  // Records the transitions, and passes them to the shipped log observer so
  // the test output shows the log lines an operator would see.
  class Log final : public QuotaObserver {
   public:
    void onDegraded(std::string_view p, DegradedMode m, bool entered) noexcept override {
      events.push_back(entered);
      inner->onDegraded(p, m, entered);
    }
    std::vector<bool> events;
    QuotaObserverPtr inner = makeLogQuotaObserver();
  } log;
  LeaseOptions lo;
  lo.live_workers = 2;
  lo.safety_factor = 0.5;
  lo.horizon = milliseconds(100);
  lo.lookahead = milliseconds(200);  // the local share starts this long after the switch
  Scheduler scheduler(SchedulerOptions{});
  QuotaLeaser leaser(scheduler, *backend, lo, &log);
  const double rate = 1000, burst = 50;
  const std::uint32_t p = leaser.addProvider(
      QuotaProviderSpec{"gw", RateLimit{rate, burst}, DegradedMode::kLocalShare, std::nullopt, {}, kNoProvider});
  auto clock = makeSteadyTimeSource();
  const MonoTime start = clock->now();
  const CampaignId id = leaser.addCampaign({"a", std::nullopt, 1.0, p}, start);
  scheduler.addBacklog(id, 1ull << 40);
  std::uint64_t sent_up1 = 0, sent_down = 0, sent_up2 = 0;
  MonoTime killed_at{}, degraded_at{}, restarted_at{};
  bool killed = false, restarted = false;
  for (MonoTime next = start; next - start < milliseconds(2400); next += milliseconds(5)) {
    waitUntil([&] { return clock->now() >= next; }, milliseconds(100), milliseconds(1));
    const MonoTime now = clock->now();
    if (!killed && now - start >= milliseconds(600)) {
      server.kill();
      killed = true;
      killed_at = clock->now();
    }
    if (killed && !restarted && now - start >= milliseconds(1400)) {
      server.start();
      restarted = true;
      restarted_at = clock->now();
    }
    leaser.refresh(now);
    if (killed && degraded_at == MonoTime{} && leaser.degraded(p)) degraded_at = now;
    std::uint64_t n = 0;
    for (const Grant& g : scheduler.tick(now, kUnlimitedCapacity)) n += g.count;
    (killed ? (restarted ? sent_up2 : sent_down) : sent_up1) += n;
  }
  ASSERT_NE(degraded_at, MonoTime{});
  EXPECT_LE(degraded_at - killed_at, milliseconds(100));
  EXPECT_FALSE(leaser.degraded(p));
  EXPECT_EQ(log.events, (std::vector<bool>{true, false}));
  const auto secs = [](Nanos d) { return std::chrono::duration<double>(d).count(); };
  // One lease: this worker's share of the rate over the lease horizon. It may
  // be held, not yet spent (a lease is spent over the horizon's refill part),
  // when Redis goes away, and is spent after.
  const double lease = std::ceil(rate / 2 * std::chrono::duration<double>(lo.horizon).count());
  // Up: within the global bucket (plus the one lease held across the switch).
  EXPECT_LE(static_cast<double>(sent_up1), rate * secs(killed_at - start) + burst + lease);
  // Down: leases already held, then, a lookahead after the switch, the local
  // share, 1000 * 0.5 / 2 = 250/s.
  EXPECT_LE(static_cast<double>(sent_down), 250 * secs(restarted_at - killed_at) + 2 * lease);
  EXPECT_GE(static_cast<double>(sent_down), 250 * (secs(restarted_at - killed_at) - 0.2) * 0.7);
  // After the restart the bucket came back empty: no catch-up burst.
  EXPECT_LE(static_cast<double>(sent_up2), rate * secs(clock->now() - restarted_at) + lease);
  EXPECT_GE(backend->stats().connects, 2u);
}

// The adaptive provider rate and its pause live in Redis beside the buckets:
// one worker's report slows and pauses the provider for a worker on another
// connection, and the climb after the pause follows AdaptiveRate's.
TEST(RedisQuota, AThrottleReportPausesAndSlowsTheProviderForEveryWorker) {
  RedisServer server;
  auto w1 = makeRedisQuotaBackend(optionsFor(server));
  auto w2 = makeRedisQuotaBackend(optionsFor(server));
  w1->connect();
  w2->connect();
  auto req = [](std::uint64_t want, Nanos throttled) {
    LeaseRequest r = request("sms", {{"c:a", {1e6, 1e6}}, {"p", {400, 40}}}, want);
    r.adaptive = AdaptiveLevel{1, AdaptiveRateOptions{}, BreakerOptions{}, throttled, 0, 0};
    return r;
  };
  LeaseReply r = one(*w1, req(10, Nanos{-1}));
  ASSERT_EQ(r.status, QuotaStatus::kOk);
  EXPECT_EQ(r.granted, 10u);
  EXPECT_DOUBLE_EQ(r.effective_rate, 400.0);
  EXPECT_EQ(r.paused, Nanos{0});

  const std::int64_t a0 = redisMicros(server);
  r = one(*w1, req(0, milliseconds(300)));  // a 429 with Retry-After 0.3 s
  const std::int64_t b0 = redisMicros(server);
  ASSERT_EQ(r.status, QuotaStatus::kOk);
  EXPECT_DOUBLE_EQ(r.effective_rate, 320.0);
  EXPECT_GT(r.paused, milliseconds(250));
  EXPECT_LE(r.paused, milliseconds(300));
  // Worker 2, on its own connection: paused, nothing granted.
  r = one(*w2, req(10, Nanos{-1}));
  ASSERT_EQ(r.status, QuotaStatus::kOk);
  EXPECT_EQ(r.granted, 0u);
  EXPECT_GT(r.paused, Nanos{0});
  EXPECT_EQ(r.next_token, r.paused);
  // A second report within the hold (250 ms) does not decrease again.
  r = one(*w2, req(0, milliseconds(100)));
  EXPECT_DOUBLE_EQ(r.effective_rate, 320.0);
  EXPECT_NE(server.command("PTTL pacer:{sms}:a"), "-2");

  // Out of the pause (asking is harmless: want 0 takes nothing, reports nothing).
  ASSERT_TRUE(
      waitUntil([&] { return one(*w2, req(0, Nanos{-1})).paused == Nanos{0}; }, milliseconds(2000), milliseconds(20)));
  const std::int64_t a = redisMicros(server);
  r = one(*w2, req(100, Nanos{-1}));
  const std::int64_t b = redisMicros(server);
  ASSERT_EQ(r.status, QuotaStatus::kOk);
  EXPECT_EQ(r.paused, Nanos{0});
  // Out of the pause since (report time + 0.3 s), climbing at a quarter of
  // the ceiling (100/s) per second from 320 towards 392 (0.98 of 400).
  const double lo = std::min(392.0, 320 + 100 * (static_cast<double>(a - b0) / 1e6 - 0.3));
  const double hi = std::min(392.0, 320 + 100 * (static_cast<double>(b - a0) / 1e6 - 0.3));
  EXPECT_GE(r.effective_rate, lo - 0.01);
  EXPECT_LE(r.effective_rate, hi + 0.01);
  // The bucket's burst shrank with the rate: 40 * rate / 400, about 32-39.
  EXPECT_GE(r.granted, 31u);
  EXPECT_LE(r.granted, 40u);
}

// A throttle judge's cut (keep) and its restore act in Redis as in
// AdaptiveRate::onCapacity / restoreLimit: the rate comes down to keep x
// rate x hold_fraction; a restore puts the limit back (in whole, or as far
// as its keep says), and the rate climbs fast towards it again.
TEST(RedisQuota, AJudgedCutAndItsRestoreActInRedisAsInAdaptiveRate) {
  RedisServer server;
  auto w = makeRedisQuotaBackend(optionsFor(server));
  w->connect();
  auto req = [](Nanos throttled, double keep, double restore) {
    LeaseRequest r = request("sms", {{"c:a", {1e6, 1e6}}, {"p", {400, 40}}}, 0);
    r.adaptive = AdaptiveLevel{1, AdaptiveRateOptions{}, BreakerOptions{}, throttled, 0, 0, keep, restore};
    return r;
  };
  LeaseReply r = one(*w, req(Nanos{0}, 0.75, 0));  // the provider took 3/4 of what it was sent
  ASSERT_EQ(r.status, QuotaStatus::kOk);
  EXPECT_NEAR(r.effective_rate, 400 * 0.75 * 0.98, 0.01);
  EXPECT_EQ(r.paused, Nanos{0}) << "no Retry-After named: no pause";
  // Another worker's word on the same moment: the round's measured keeps
  // averaged, from the rate before it, never one cut on top of the first.
  r = one(*w, req(Nanos{0}, 0.65, 0));
  EXPECT_NEAR(r.effective_rate, 400 * 0.7 * 0.98, 0.01);
  // A judge's first step back (keep 1) in the round changes nothing.
  r = one(*w, req(Nanos{0}, 1.0, 0));
  EXPECT_NEAR(r.effective_rate, 400 * 0.7 * 0.98, 0.05);
  // The script's clock is Redis's TIME, which the test cannot move: the waits
  // below are time passing on purpose, and the bounds checked allow for it.
  // Without a restore the rate only probes slowly (5.6 over 30 s) towards the new limit, 280.
  std::this_thread::sleep_for(milliseconds(500));
  r = one(*w, req(Nanos{-1}, 0, 0));
  EXPECT_LT(r.effective_rate, 280.0);
  // The cut was noise: the limit is 400 again and the rate climbs at 100/s per second.
  r = one(*w, req(Nanos{-1}, 0, 1.0));
  std::this_thread::sleep_for(milliseconds(500));
  r = one(*w, req(Nanos{-1}, 0, 0));
  EXPECT_GT(r.effective_rate, 320.0);
  EXPECT_LE(r.effective_rate, 392.0);
  // A second round of cuts (5 s after the first), then a restore as far as
  // 0.9 of the rate at that cut.
  std::this_thread::sleep_for(milliseconds(4200));
  r = one(*w, req(Nanos{0}, 0.5, 0));
  const double at_cut = r.effective_rate / (0.5 * 0.98);
  r = one(*w, req(Nanos{-1}, 0, 0.9));
  ASSERT_TRUE(waitUntil([&] { return one(*w, req(Nanos{-1}, 0, 0)).effective_rate >= 0.9 * at_cut * 0.98 - 0.01; },
                        milliseconds(5000), milliseconds(50)));
  std::this_thread::sleep_for(milliseconds(500));
  r = one(*w, req(Nanos{-1}, 0, 0));
  EXPECT_LE(r.effective_rate, 0.9 * at_cut + 0.01) << "no further than the restore's keep, then only the slow probe";
}

// As AdaptiveRate (AFixedCeilingFoundAgainIsProbedLessOften): a judged cut
// that finds the ceiling again where the last one was makes the script's
// next probe twice as slow; a cut elsewhere, the configured pace again.
TEST(RedisQuota, AFixedCeilingFoundAgainIsProbedLessOftenInRedisToo) {
  RedisServer server;
  auto w = makeRedisQuotaBackend(optionsFor(server));
  w->connect();
  AdaptiveRateOptions o;
  o.hold_fraction = 0.9;  // a wide probe band, so that it lasts through the waits below
  o.probe_time = std::chrono::seconds(4);
  auto req = [&](double keep) {
    LeaseRequest r = request("sms", {{"c:a", {1e6, 1e6}}, {"p", {400, 40}}}, 0);
    r.adaptive = AdaptiveLevel{1, o, BreakerOptions{}, keep > 0 ? Nanos{0} : Nanos{-1}, 0, 0, keep, 0};
    return r;
  };
  // The probe's speed over at least 0.8 s of Redis's clock, per second.
  const auto speed = [&] {
    const double before = one(*w, req(0)).effective_rate;
    const std::int64_t t0 = redisMicros(server);
    EXPECT_TRUE(waitUntil([&] { return redisMicros(server) - t0 >= 800'000; }, milliseconds(3000), milliseconds(20)));
    const double after = one(*w, req(0)).effective_rate;
    return (after - before) / (static_cast<double>(redisMicros(server) - t0) / 1e6);
  };
  LeaseReply r = one(*w, req(0.75));  // from the ceiling: the limit is 300, far from where it was
  ASSERT_EQ(r.status, QuotaStatus::kOk);
  EXPECT_NEAR(r.effective_rate, 270, 0.01);
  const double first = speed();  // 30 over 4 s
  EXPECT_NEAR(first, 7.5, 1.0);
  // A new round (5 s on Redis's clock after the first), at the same ceiling.
  const std::int64_t cut = redisMicros(server);
  ASSERT_TRUE(waitUntil([&] { return redisMicros(server) - cut >= 4'300'000; }, milliseconds(6000), milliseconds(20)));
  const double at = one(*w, req(0)).effective_rate;
  ASSERT_LT(at, 360.0) << "still in the probe band";
  r = one(*w, req(300.0 / at));
  EXPECT_NEAR(r.effective_rate, 270, 0.5);
  EXPECT_NEAR(speed(), 3.75, 1.0) << "found again where it was: half as fast";
  // The next round finds it far lower: the limit moved, the configured pace again.
  const std::int64_t cut2 = redisMicros(server);
  ASSERT_TRUE(waitUntil([&] { return redisMicros(server) - cut2 >= 4'300'000; }, milliseconds(6000), milliseconds(20)));
  r = one(*w, req(0.7));
  const double lim = r.effective_rate / 0.9;
  EXPECT_NEAR(speed(), lim * 0.1 / 4, 1.0);
}

// As AdaptiveRate::onCapacity: a round of judged cuts (every worker's judge
// on the same overshoot, each naming the same Retry-After) pauses once, and
// again only for a longer pause.
TEST(RedisQuota, ARoundOfJudgedCutsPausesOnceUnlessAskedForLonger) {
  RedisServer server;
  auto w = makeRedisQuotaBackend(optionsFor(server));
  w->connect();
  auto req = [](Nanos throttled, double keep) {
    LeaseRequest r = request("sms", {{"c:a", {1e6, 1e6}}, {"p", {400, 40}}}, 0);
    r.adaptive = AdaptiveLevel{1, AdaptiveRateOptions{}, BreakerOptions{}, throttled, 0, 0, keep, 0};
    return r;
  };
  LeaseReply r = one(*w, req(milliseconds(600), 1.0));  // a first step back, Retry-After 0.6 s
  ASSERT_EQ(r.status, QuotaStatus::kOk);
  EXPECT_GT(r.paused, milliseconds(500));
  const std::int64_t t0 = redisMicros(server);
  ASSERT_TRUE(waitUntil([&] { return redisMicros(server) - t0 >= 300'000; }, milliseconds(2000), milliseconds(10)));
  r = one(*w, req(milliseconds(600), 0.8));
  EXPECT_LE(r.paused, milliseconds(320)) << "the round's second word paused again";
  EXPECT_NEAR(r.effective_rate, 400 * 0.8 * 0.98, 0.01);
  r = one(*w, req(milliseconds(2000), 0.8));
  EXPECT_GT(r.paused, milliseconds(1800)) << "a longer Retry-After pauses again";
}

// As the in-process backend: one worker judges the provider's throttles for
// all, the first to report answers, until it has reported none for two
// seconds (Redis's clock); only its noise level is kept, heard by all.
TEST(RedisQuota, OneWorkerJudgesForAllUntilItFallsSilent) {
  RedisServer server;
  auto w = makeRedisQuotaBackend(optionsFor(server));
  w->connect();
  auto ask = [&](std::uint64_t worker, std::uint64_t answers, double noise) {
    LeaseRequest r = request("sms", {{"c:a", {1e6, 1e6}}, {"p", {400, 40}}}, 1);
    r.worker = worker;
    r.adaptive = AdaptiveLevel{1, AdaptiveRateOptions{}, BreakerOptions{}, Nanos{-1}, answers, 0, 0, 0, noise};
    LeaseReply reply = one(*w, r);
    EXPECT_EQ(reply.status, QuotaStatus::kOk);
    return reply;
  };
  EXPECT_FALSE(ask(1, 0, -1).judge) << "no answers yet: nobody judges";
  EXPECT_TRUE(ask(2, 5, -1).judge) << "the first to report answers";
  EXPECT_FALSE(ask(1, 5, -1).judge);
  EXPECT_EQ(ask(1, 5, 0.3).noise, 0) << "a worker that does not judge sets no noise";
  EXPECT_DOUBLE_EQ(ask(2, 5, 0.125).noise, 0.125);
  const std::int64_t last = redisMicros(server);
  EXPECT_DOUBLE_EQ(ask(1, 5, -1).noise, 0.125) << "heard by every worker";
  EXPECT_TRUE(ask(2, 0, -1).judge) << "asking without answers keeps it for two seconds";
  ASSERT_TRUE(waitUntil([&] { return redisMicros(server) - last > 2'100'000; }, milliseconds(4000), milliseconds(20)));
  EXPECT_TRUE(ask(1, 5, -1).judge) << "worker 2 reported no answers for two seconds";
  EXPECT_FALSE(ask(2, 5, -1).judge);
  EXPECT_DOUBLE_EQ(ask(2, 5, -1).noise, 0.125) << "the noise outlives its judge";
  EXPECT_TRUE(ask(0, 5, -1).judge) << "without a worker id each judges alone";
}

// As the in-process backend: the script sums every active worker's last
// answers per second, known only when every one of them is (the throttles of
// one recipient whether or not).
TEST(RedisQuota, SumsEveryWorkersAnswersPerSecond) {
  RedisServer server;
  auto w = makeRedisQuotaBackend(optionsFor(server));
  w->connect();
  auto ask = [&](std::uint64_t worker, AcceptedRates rates) {
    LeaseRequest r = request("sms", {{"c:a", {1e6, 1e6}}, {"p", {400, 40}}}, 1);
    r.worker = worker;
    r.adaptive = AdaptiveLevel{1, AdaptiveRateOptions{}, BreakerOptions{}, Nanos{-1}, 5, 0, 0, 0, -1, rates};
    LeaseReply reply = one(*w, r);
    EXPECT_EQ(reply.status, QuotaStatus::kOk);
    return reply.provider_rates;
  };
  AcceptedRates sum = ask(1, AcceptedRates{100, 20});
  ASSERT_TRUE(sum.known()) << "one worker: its own";
  EXPECT_DOUBLE_EQ(sum.accepted, 100);
  sum = ask(2, AcceptedRates{150.5, 30, 2});
  ASSERT_TRUE(sum.known());
  EXPECT_DOUBLE_EQ(sum.accepted, 250.5);
  EXPECT_DOUBLE_EQ(sum.throttled, 50);
  EXPECT_DOUBLE_EQ(sum.recipient, 2) << "one recipient's throttles: their own sum";
  sum = ask(1, AcceptedRates{110, 0, 1.5});
  EXPECT_DOUBLE_EQ(sum.accepted, 260.5) << "a worker's last report replaces its earlier one";
  EXPECT_DOUBLE_EQ(sum.throttled, 30);
  EXPECT_DOUBLE_EQ(sum.recipient, 3.5);
  sum = ask(3, AcceptedRates{-1, -1, 4});
  EXPECT_FALSE(sum.known()) << "one worker's second held a pause";
  EXPECT_DOUBLE_EQ(sum.recipient, 7.5) << "the recipients' throttles are summed all the same";
  EXPECT_FALSE(ask(1, AcceptedRates{110, 0}).known());
  const std::int64_t last = redisMicros(server);
  ASSERT_TRUE(waitUntil([&] { return redisMicros(server) - last > 2'100'000; }, milliseconds(4000), milliseconds(20)));
  ask(2, AcceptedRates{150, 0});
  sum = ask(1, AcceptedRates{110, 0});
  ASSERT_TRUE(sum.known()) << "worker 3 fell silent two seconds ago";
  EXPECT_DOUBLE_EQ(sum.accepted, 260);
  ask(0, AcceptedRates{});  // a request without a worker id: not counted, and it keeps the reports
  sum = ask(2, AcceptedRates{150, 0});
  ASSERT_TRUE(sum.known()) << "a request without a worker id wiped the workers' reports";
  EXPECT_DOUBLE_EQ(sum.accepted, 260);
}

// The script grants ahead of time up to the lookahead and says where each
// grant's tokens start, as the in-process backend does.
TEST(RedisQuota, GrantsAheadOfTimeAndSaysWhereTheyStart) {
  RedisServer server;
  auto b = makeRedisQuotaBackend(optionsFor(server));
  LeaseRequest r = request("gw", {{"p", {100, 5}}}, 50);
  r.lookahead = std::chrono::seconds(1);
  r.min_grant = 20;
  LeaseReply x = one(*b, r);
  ASSERT_EQ(x.status, QuotaStatus::kOk);
  EXPECT_EQ(x.granted, 50u);
  EXPECT_NEAR(x.start_tokens, 5.0, 1e-6);
  LeaseReply y = one(*b, r);
  EXPECT_EQ(y.granted, 50u);
  EXPECT_NEAR(y.start_tokens, -45.0, 1.0) << "after the first grant's tokens (a few ms refilled)";
  LeaseReply z = one(*b, r);
  EXPECT_EQ(z.granted, 0u) << "below the minimum of 20";
  EXPECT_GT(z.next_token, milliseconds(100));
  EXPECT_LE(z.next_token, milliseconds(150));
  // Tokens sent without the quota (a debt) push later grants back.
  LeaseRequest d = request("gw2", {{"p", {100, 5}}}, 5);
  d.debt = 10;
  LeaseReply w = one(*b, d);
  EXPECT_EQ(w.granted, 0u);
  EXPECT_GT(w.next_token, milliseconds(50)) << "5 - 10 held: 5 owed, then one more";
}

TEST(RedisQuota, CountsTheWorkersAskingForAScope) {
  RedisServer server;
  auto b = makeRedisQuotaBackend(optionsFor(server));
  LeaseRequest r = request("gw", {{"p", {100, 5}}}, 1);
  for (std::uint64_t w : {0xa1u, 0xb2u, 0xc3u}) {
    r.worker = w;
    EXPECT_EQ(one(*b, r).status, QuotaStatus::kOk);
  }
  EXPECT_EQ(one(*b, r).active_workers, 3u);
  EXPECT_NE(server.command("PTTL pacer:{gw}:w"), "-2") << "forgotten when idle";
  r.worker = 0;
  EXPECT_EQ(one(*b, r).active_workers, 0u) << "not counted";
}

// Two workers' answers add up in the shared breaker: 9 faults of 10 from one
// and 1 of 10 from the other open it for both.
TEST(RedisQuota, FaultsFromAllWorkersOpenTheSharedBreaker) {
  RedisServer server;
  auto w1 = makeRedisQuotaBackend(optionsFor(server));
  auto w2 = makeRedisQuotaBackend(optionsFor(server));
  auto req = [](std::uint64_t ok, std::uint64_t faults) {
    LeaseRequest r = request("sms", {{"c:a", {1e6, 1e6}}, {"p", {400, 40}}}, 0);
    r.adaptive = AdaptiveLevel{1, AdaptiveRateOptions{}, BreakerOptions{}, Nanos{-1}, ok, faults};
    return r;
  };
  LeaseReply r = one(*w1, req(1, 9));
  ASSERT_EQ(r.status, QuotaStatus::kOk);
  EXPECT_FALSE(r.circuit_open) << "10 answers: fewer than 20, not judged";
  r = one(*w2, req(9, 1));
  EXPECT_TRUE(r.circuit_open) << "10 faults of 20";
  EXPECT_GT(r.paused, std::chrono::milliseconds(4900));
  EXPECT_DOUBLE_EQ(r.effective_rate, 320.0) << "sustained faults lower the rate";
  r = one(*w1, req(0, 0));
  EXPECT_TRUE(r.circuit_open);
  EXPECT_GT(r.paused, Nanos{0});
}

}  // namespace
}  // namespace pacer
