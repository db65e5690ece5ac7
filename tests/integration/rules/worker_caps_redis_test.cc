// Two WorkerCores (two workers) sharing one real redis-server for their
// frequency caps, on a simulated clock: a recipient capped at 1 a day gets one
// message across both; while Redis is down capped messages wait, never sent
// unchecked, and go once it is back.
#include <gtest/gtest.h>

#include "pacer/frequency_cap_redis.h"
#include "pacer/worker.h"
#include "support/fakes.h"
#include "support/redis_server.h"

namespace pacer {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::seconds;

const WallTime kT0 = WallTime(std::chrono::sys_days{std::chrono::year{2024} / 6 / 1}) + hours(12);

RawMessage raw(std::int64_t offset, std::string recipient) {
  RawMessage r;
  r.position = Position{"t", 0, offset};
  r.key = "promo";
  r.headers = {{"message-id", "m" + std::to_string(offset)}, {"recipient", std::move(recipient)}};
  r.value = "p";
  return r;
}

struct Worker {
  explicit Worker(const testing::RedisServer& server) {
    RedisFrequencyCapOptions ro;
    ro.port = server.port();
    ro.link.backoff_max = milliseconds(100);
    store = makeRedisFrequencyCapStore(ro);
    WorkerOptions o;
    o.caps = store.get();
    o.class_caps = {{"bulk", FrequencyCapRule{1, hours(24)}}};
    core = std::make_unique<WorkerCore>(o, ledger, sink, nullptr, now);
    CampaignInfo c;
    c.id = "promo";
    c.limit = RateLimit{100, 5};
    core->upsertCampaign(c, now);
  }
  // Steps for `d` of simulated time; the wall clock moves with it.
  void run(Nanos d) {
    const MonoTime end = now + d;
    while (now < end) {
      now += milliseconds(5);
      core->setWallClock(kT0 + std::chrono::duration_cast<milliseconds>(now - MonoTime{}), now);
      core->step(now);
    }
  }
  RedisFrequencyCapStorePtr store;
  test_support::FakeLedger ledger;
  test_support::FakeSink sink{100};
  MonoTime now{};
  std::unique_ptr<WorkerCore> core;
};

TEST(WorkerCapsRedis, TwoWorkersShareOneCapPerRecipient) {
  testing::RedisServer server;
  Worker a(server), b(server);
  a.core->offer(raw(0, "+4915112345678"), a.now);
  a.run(seconds(1));
  b.core->offer(raw(1, "+4915112345678"), b.now);
  b.run(seconds(1));
  EXPECT_EQ(a.ledger.byId["m0"].status, DeliveryStatus::kSent);
  EXPECT_EQ(b.ledger.byId["m1"].status, DeliveryStatus::kSuppressed) << b.ledger.byId["m1"].reason;
  EXPECT_EQ(b.ledger.byId["m1"].reason,
            "suppressed: frequency cap class:bulk 1/1d, allowed at 2024-06-02T12:00:00Z");
  EXPECT_GE(b.store->stats().round_trips, 1u);
}

TEST(WorkerCapsRedis, WhileRedisIsDownMessagesWaitThenGo) {
  testing::RedisServer server;
  Worker a(server);
  server.kill();
  for (int i = 0; i < 10; ++i) a.core->offer(raw(i, "+49151" + std::to_string(i)), a.now);
  a.run(seconds(2));
  EXPECT_TRUE(a.sink.submitted.empty()) << "never sent unchecked";
  EXPECT_TRUE(a.ledger.byId.empty()) << "never dropped or dead-lettered";
  EXPECT_GT(a.core->stats().cap_faults, 0u);
  server.start();
  a.run(seconds(3));
  EXPECT_EQ(a.sink.submitted.size(), 10u);
  EXPECT_EQ(a.ledger.count(DeliveryStatus::kSent), 10u);
}

}  // namespace
}  // namespace pacer
