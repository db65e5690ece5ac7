// Priority classes in the Redis lease script (lease.lua) against a real
// redis-server: the same answers as the in-process backend (the requests go
// within a few milliseconds, so Redis's clock barely moves), the classes'
// keys, and odd priority arguments clamped or left out.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pacer/quota_redis.h"
#include "support/quota_requests.h"
#include "support/redis_server.h"

namespace pacer {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::acquireOne;
using testing::RedisServer;

LeaseRequest classRequest(const std::string& scope, std::uint32_t rank, std::uint64_t want, double floor = 0.0) {
  LeaseRequest r;
  r.scope = scope;
  r.levels.push_back(QuotaLevel{"p", RateLimit{400, 20}});
  r.want = want;
  r.lookahead = seconds(1);
  r.priority = LeasePriority{0, rank, floor, milliseconds(50), milliseconds(250), seconds(1)};
  return r;
}

struct Step {
  std::uint32_t rank;
  std::uint64_t want;
  double floor;
};

// The grants of `steps` on one scope, in order, at (about) one instant.
std::vector<std::uint64_t> grants(QuotaBackend& b, const std::string& scope, const std::vector<Step>& steps) {
  std::vector<std::uint64_t> out;
  for (const Step& s : steps) {
    const LeaseReply reply = acquireOne(b, classRequest(scope, s.rank, s.want, s.floor));
    EXPECT_EQ(reply.status, QuotaStatus::kOk);
    out.push_back(reply.granted);
  }
  return out;
}

TEST(RedisPriority, AnswersAsTheLocalBackendDoes) {
  RedisServer server;
  RedisQuotaOptions o;
  o.nodes = {RedisAddress{"127.0.0.1", server.port()}};
  auto redis = makeRedisQuotaBackend(o);
  const std::vector<std::vector<Step>> scenarios = {
      // any rank alone: the full lookahead; having seen a higher one: 250 ms
      {{0, 10'000, 0}},
      {{2, 10'000, 0}},
      {{0, 0, 0}, {0, 1, 0}, {2, 10'000, 0}},
      // bulk first, then transactional: the level owes 250 ms, so
      // transactional gets what 250 ms ahead allows (nothing) and bulk, with
      // a higher class asking, only 50 ms ahead (nothing)
      {{2, 10'000, 0}, {1, 5, 0}, {2, 10'000, 0}},
      // transactional asking, then bulk: burst + 50 ms
      {{1, 1, 0}, {2, 10'000, 0}},
      // a floor: rank 0 with rank 2 asking gets 95 % of the rate ahead
      {{2, 1, 0.05}, {0, 10'000, 0.05}},
      // want 0 is not asking
      {{0, 0, 0}, {2, 10'000, 0}},
  };
  for (std::size_t i = 0; i < scenarios.size(); ++i) {
    auto local = makeLocalQuotaBackend();
    const std::string scope = "s" + std::to_string(i);
    const std::vector<std::uint64_t> want = grants(*local, scope, scenarios[i]);
    const std::vector<std::uint64_t> got = grants(*redis, scope, scenarios[i]);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t k = 0; k < got.size(); ++k) {
      // A few ms of Redis's clock may pass between steps: 400/s is a token
      // per 2.5 ms.
      EXPECT_NEAR(static_cast<double>(got[k]), static_cast<double>(want[k]), 4.0) << "scenario " << i << " step " << k;
    }
  }
  // The figures themselves (local backend, one instant).
  auto local = makeLocalQuotaBackend();
  EXPECT_EQ(grants(*local, "a", {{0, 10'000, 0}}), (std::vector<std::uint64_t>{420}));
  EXPECT_EQ(grants(*local, "b", {{1, 1, 0}, {2, 10'000, 0}}), (std::vector<std::uint64_t>{1, 39}));
  EXPECT_EQ(grants(*local, "c", {{2, 1, 0.05}, {0, 10'000, 0.05}}), (std::vector<std::uint64_t>{1, 115}));
  // The classes' hash and the floor's bucket carry the scope's hash tag and expire.
  EXPECT_NE(server.command("PTTL pacer:{s5}:cls"), "-2");
  EXPECT_NE(server.command("PTTL pacer:{s5}:k0"), "-2");
  EXPECT_EQ(server.command("EXISTS pacer:{s4}:k1"), "0") << "no floor, no class bucket";
}

// With a floor, the class's own bucket may hold the fewest tokens: the reply
// names the shared level it stands for (a level of the request), not an index
// the caller never sent (which it would take for a broken reply).
TEST(RedisPriority, AClassBucketThatBindsIsReportedAsTheSharedLevel) {
  RedisServer server;
  RedisQuotaOptions o;
  o.nodes = {RedisAddress{"127.0.0.1", server.port()}};
  auto redis = makeRedisQuotaBackend(o);
  ASSERT_EQ(acquireOne(*redis, classRequest("fl", 2, 1, 0.05)).status, QuotaStatus::kOk);
  const LeaseReply first = acquireOne(*redis, classRequest("fl", 0, 10'000, 0.05));
  ASSERT_EQ(first.status, QuotaStatus::kOk);
  EXPECT_NEAR(static_cast<double>(first.granted), 115.0, 2.0);
  // 100 ms on by Redis's own clock (the script's clock): the shared level
  // (400/s) has refilled more than the class's bucket (380/s), so the
  // class's bucket binds.
  const std::int64_t from = server.micros();
  ASSERT_TRUE(testing::waitUntil([&] { return server.micros() - from >= 100'000; }, std::chrono::seconds(5)));
  const LeaseReply second = acquireOne(*redis, classRequest("fl", 0, 10'000, 0.05));
  ASSERT_EQ(second.status, QuotaStatus::kOk);
  EXPECT_EQ(second.binding, 0u);
  EXPECT_GT(second.granted, 0u);
  // The in-process backend says the same.
  auto local = makeLocalQuotaBackend();
  acquireOne(*local, classRequest("fl", 2, 1, 0.05), MonoTime{});
  acquireOne(*local, classRequest("fl", 0, 10'000, 0.05), MonoTime{});
  const LeaseReply l = acquireOne(*local, classRequest("fl", 0, 10'000, 0.05), MonoTime{milliseconds(100)});
  EXPECT_EQ(l.binding, 0u);
  EXPECT_GT(l.granted, 0u);
}

TEST(RedisPriority, OddPriorityArgumentsAreClampedOrLeftOut) {
  RedisServer server;
  RedisQuotaOptions o;
  o.nodes = {RedisAddress{"127.0.0.1", server.port()}};
  auto redis = makeRedisQuotaBackend(o);
  LeaseRequest r = classRequest("bad", 1, 10);
  r.priority->active_window = Nanos{-5};  // sent as 1 us at least: still valid
  EXPECT_EQ(acquireOne(*redis, r).status, QuotaStatus::kOk);
  // A priority level outside the request's levels is not sent as priority.
  LeaseRequest outside = classRequest("bad2", 1, 10);
  outside.priority->level = 3;
  EXPECT_EQ(acquireOne(*redis, outside).status, QuotaStatus::kOk);
  EXPECT_EQ(server.command("EXISTS pacer:{bad2}:cls"), "0");
}

}  // namespace
}  // namespace pacer
