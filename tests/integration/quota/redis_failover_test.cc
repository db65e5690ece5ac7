// The Redis quota on a Redis Cluster with replicas (3 masters + 3 replicas):
// the master that owns a provider's keys is SIGKILLed; the worker degrades to
// its local share, and once the replica is promoted it must find it (a dead
// master never answers MOVED) and lease from the shared bucket again, never
// over the provider's rate.
#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "pacer/quota_lease.h"
#include "pacer/quota_log.h"
#include "pacer/quota_redis.h"
#include "support/redis_server.h"

namespace pacer {
namespace {

using std::chrono::milliseconds;
using testing::RedisCluster;
using testing::RedisServer;
using testing::waitUntil;

double secs(Nanos d) { return std::chrono::duration<double>(d).count(); }

// Sends per tick, and the most sent in any window of `window`.
class WindowMax {
 public:
  explicit WindowMax(Nanos window) : window_(window) {}
  void add(MonoTime at, std::uint64_t n) {
    if (n == 0) return;
    sends_.emplace_back(at, n);
    in_window_ += n;
    while (at - sends_.front().first >= window_) {
      in_window_ -= sends_.front().second;
      sends_.pop_front();
    }
    max_ = std::max(max_, in_window_);
  }
  std::uint64_t max() const { return max_; }

 private:
  Nanos window_;
  std::deque<std::pair<MonoTime, std::uint64_t>> sends_;
  std::uint64_t in_window_ = 0;
  std::uint64_t max_ = 0;
};

// One worker on the real clock (refresh + scheduler tick every 5 ms) against
// the cluster; the owner of the provider's slot is killed 0.5 s in. Polls
// until the provider is degraded and then shared again, with deadlines, and
// runs on for 1.5 s of shared leasing.
TEST(RedisClusterFailover, KilledMasterIsFollowedToItsPromotedReplica) {
  RedisCluster cluster(3, 1, milliseconds(1000));
  const std::string scope = "failover-gw";
  const int slot = redisClusterSlot("{" + scope + "}");
  RedisServer& doomed = cluster.owner(slot);

  RedisQuotaOptions ro;
  ro.cluster = true;
  ro.nodes.clear();
  for (auto& n : cluster.nodes()) ro.nodes.push_back(RedisAddress{"127.0.0.1", n->port()});
  auto backend = makeRedisQuotaBackend(ro);
  backend->connect();
  LeaseOptions lo;
  lo.horizon = milliseconds(100);
  lo.lookahead = milliseconds(200);
  lo.safety_factor = 0.5;  // degraded: 200/s, well apart from the shared 400/s
  Scheduler scheduler(SchedulerOptions{});
  QuotaObserverPtr log = makeLogQuotaObserver();
  QuotaLeaser leaser(scheduler, *backend, lo, log.get());
  const double rate = 400, burst = 20;
  const std::uint32_t p = leaser.addProvider(
      QuotaProviderSpec{scope, RateLimit{rate, burst}, DegradedMode::kLocalShare, std::nullopt, {}, kNoProvider});
  auto clock = makeSteadyTimeSource();
  const MonoTime start = clock->now();
  const CampaignId id = leaser.addCampaign({"a", std::nullopt, 1.0, p}, start);
  scheduler.addBacklog(id, 1ull << 40);

  WindowMax window(std::chrono::seconds(1));
  MonoTime killed_at{}, degraded_at{}, recovered_at{};
  std::uint64_t sent = 0;
  const auto tick = [&](MonoTime now) {
    leaser.refresh(now);
    std::uint64_t n = 0;
    for (const Grant& g : scheduler.tick(now, kUnlimitedCapacity)) n += g.count;
    window.add(now, n);
    sent += n;
  };
  // Runs ticks until `done` or `limit` has passed; true if `done`.
  const auto runUntil = [&](const auto& done, Nanos limit) {
    const MonoTime until = clock->now() + limit;
    for (MonoTime next = clock->now(); next < until; next += milliseconds(5)) {
      waitUntil([&] { return clock->now() >= next; }, milliseconds(100), milliseconds(1));
      const MonoTime now = clock->now();
      tick(now);
      if (done(now)) return true;
    }
    return false;
  };

  ASSERT_FALSE(runUntil([](MonoTime) { return false; }, milliseconds(500)));
  ASSERT_FALSE(leaser.degraded(p));
  const auto refreshes_before = backend->stats().slot_refreshes;
  doomed.kill();
  killed_at = clock->now();
  ASSERT_TRUE(
      runUntil([&](MonoTime now) { return leaser.degraded(p) && (degraded_at = now, true); }, std::chrono::seconds(2)))
      << "the worker never noticed the master was gone";
  // Back to the shared bucket: the map was reread and the promoted replica
  // holds the provider's slot (its keys followed it).
  ASSERT_TRUE(runUntil([&](MonoTime now) { return !leaser.degraded(p) && (recovered_at = now, true); },
                       std::chrono::seconds(15)))
      << "still degraded 15 s after the degradation; slot map rereads: "
      << backend->stats().slot_refreshes - refreshes_before;
  RedisServer& promoted = cluster.owner(slot);
  EXPECT_NE(&promoted, &doomed);
  EXPECT_GT(backend->stats().slot_refreshes, refreshes_before);
  EXPECT_EQ(promoted.command("EXISTS pacer:{" + scope + "}:p"), "1");
  // The first second back repays what the local share sent (LeaseRequest::
  // debt); then the worker leases the whole provider rate.
  EXPECT_FALSE(runUntil([&](MonoTime) { return leaser.degraded(p); }, milliseconds(1000)))
      << "degraded again after recovering";
  const MonoTime shared_from = clock->now();
  const std::uint64_t sent_before = sent;
  EXPECT_FALSE(runUntil([&](MonoTime) { return leaser.degraded(p); }, milliseconds(2000)))
      << "degraded again after recovering";
  std::printf("killed -> degraded %.3f s, degraded -> shared %.3f s\n", secs(degraded_at - killed_at),
              secs(recovered_at - degraded_at));

  // Never over the provider: any 1 s holds at most rate + burst, plus one
  // lease held across a switch (as in the standalone kill test).
  const double lease = std::ceil(rate * secs(lo.horizon));
  EXPECT_LE(static_cast<double>(window.max()), rate + burst + lease);
  // Shared leasing after the recovery runs at (about) the provider's rate,
  // not at the degraded share (half of it).
  EXPECT_GE(static_cast<double>(sent - sent_before), 0.8 * rate * secs(clock->now() - shared_from));
}

}  // namespace
}  // namespace pacer
