// The Redis quota backend on a real three-master Redis Cluster: slot routing,
// MOVED after a slot migration, ASK during one.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pacer/quota_redis.h"
#include "support/quota_requests.h"
#include "support/redis_server.h"

namespace pacer {
namespace {

using testing::RedisCluster;
using testing::RedisServer;

LeaseRequest request(const std::string& scope, double rate, double burst, std::uint64_t want) {
  LeaseRequest r;
  r.scope = scope;
  r.levels = {QuotaLevel{"c:x", {1e6, 1e6}}, QuotaLevel{"p", {rate, burst}}};
  r.want = want;
  return r;
}

LeaseReply one(QuotaBackend& b, const LeaseRequest& r) { return testing::acquireOne(b, r); }

class RedisClusterQuota : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cluster_ = new RedisCluster(3); }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  RedisQuotaBackendPtr backend() {
    RedisQuotaOptions o;
    o.cluster = true;
    o.nodes = {RedisAddress{"127.0.0.1", cluster_->nodes()[0]->port()}};
    auto b = makeRedisQuotaBackend(o);
    b->connect();
    return b;
  }
  RedisServer& other(RedisServer& not_this) {
    for (auto& n : cluster_->nodes())
      if (n.get() != &not_this) return *n;
    throw std::runtime_error("no other node");
  }
  static RedisCluster* cluster_;
};
RedisCluster* RedisClusterQuota::cluster_ = nullptr;

TEST_F(RedisClusterQuota, BatchAcrossSlotsIsOneRoundTripPerNode) {
  auto b = backend();
  std::vector<LeaseRequest> rs;
  for (int i = 0; i < 60; ++i) rs.push_back(request("prov-" + std::to_string(i), 100, 10, 4));
  std::vector<LeaseReply> replies(rs.size());
  const auto before = b->stats().round_trips;
  b->acquire(rs, MonoTime{}, replies);
  for (const LeaseReply& r : replies) {
    EXPECT_EQ(r.status, QuotaStatus::kOk);
    EXPECT_EQ(r.granted, 4u);
  }
  // The first batch also loads the script on the nodes it had not met yet.
  EXPECT_LE(b->stats().round_trips - before, 3u + 2u);
  EXPECT_EQ(b->stats().moved, 0u);
  const auto second = b->stats().round_trips;
  b->acquire(rs, MonoTime{}, replies);
  EXPECT_EQ(b->stats().round_trips - second, 3u);
  // Keys are where Redis Cluster says: each provider's keys on its slot's owner.
  const int slot = redisClusterSlot("pacer:{prov-7}:p");
  EXPECT_EQ(cluster_->owner(slot).command("EXISTS pacer:{prov-7}:p"), "1");
}

TEST_F(RedisClusterQuota, MovedAfterSlotMigrationIsFollowedAndKeepsTheBucket) {
  auto b = backend();
  const std::string scope = "moving-gw";
  const int slot = redisClusterSlot("{" + scope + "}");
  ASSERT_EQ(one(*b, request(scope, 10, 20, 1000)).granted, 20u);  // drain the provider bucket
  RedisServer& from = cluster_->owner(slot);
  RedisServer& to = other(from);
  cluster_->migrateSlot(slot, from, to, true);
  ASSERT_EQ(&cluster_->owner(slot), &to);
  const LeaseReply r = one(*b, request(scope, 10, 20, 1000));
  ASSERT_EQ(r.status, QuotaStatus::kOk);
  EXPECT_LE(r.granted, 2u);  // the migrated bucket is still (nearly) empty: nothing granted twice
  EXPECT_GE(b->stats().moved, 1u);
  EXPECT_EQ(to.command("EXISTS pacer:{moving-gw}:p"), "1");
  // The map was refreshed: the next call goes straight to the new owner.
  const auto moved = b->stats().moved;
  EXPECT_EQ(one(*b, request(scope, 10, 20, 1000)).status, QuotaStatus::kOk);
  EXPECT_EQ(b->stats().moved, moved);
}

TEST_F(RedisClusterQuota, AskDuringMigrationIsFollowed) {
  auto b = backend();
  const std::string scope = "asking-gw";
  const int slot = redisClusterSlot("{" + scope + "}");
  ASSERT_EQ(one(*b, request(scope, 10, 20, 1000)).granted, 20u);
  RedisServer& from = cluster_->owner(slot);
  RedisServer& to = other(from);
  cluster_->migrateSlot(slot, from, to, false);  // keys moved, slot still owned by `from`
  const LeaseReply r = one(*b, request(scope, 10, 20, 1000));
  ASSERT_EQ(r.status, QuotaStatus::kOk);
  EXPECT_LE(r.granted, 2u);
  EXPECT_GE(b->stats().asked, 1u);
  EXPECT_EQ(b->stats().moved, 0u);
  for (auto& n : cluster_->nodes())
    n->command("CLUSTER SETSLOT " + std::to_string(slot) + " NODE " + to.command("CLUSTER MYID"));
}

}  // namespace
}  // namespace pacer
