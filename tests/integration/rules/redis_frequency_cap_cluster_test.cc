// The Redis frequency-cap store on a real three-master Redis Cluster: a
// batch is grouped by slot owner (one round trip per master), MOVED after a
// slot migration and ASK during one are followed with the count kept, and a
// master that is down leaves only its recipients kUnavailable.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "pacer/frequency_cap_redis.h"
#include "support/redis_server.h"

namespace pacer {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;
using testing::RedisCluster;
using testing::RedisServer;

const WallTime kT0 = WallTime(std::chrono::sys_days{std::chrono::year{2024} / 6 / 1});

RedisFrequencyCapStorePtr clusterStore(RedisCluster& cluster) {
  RedisFrequencyCapOptions o;
  o.cluster_nodes = {RedisAddress{"127.0.0.1", cluster.nodes()[0]->port()}};
  o.link.command_timeout = milliseconds(500);
  auto s = makeRedisFrequencyCapStore(o);
  std::string why;
  if (s->connect(why) != CapFault::kNone) throw std::runtime_error("connect: " + why);
  return s;
}

int slotOf(std::string_view recipient) { return redisClusterSlot("{" + std::string(recipient) + "}"); }

CapDecision one(FrequencyCapStore& s, const CapQuery& q, WallTime now, CapBatchResult* result = nullptr) {
  CapDecision d;
  const CapBatchResult r = s.decide(std::span<const CapQuery>(&q, 1), now, std::span<CapDecision>(&d, 1));
  if (result) *result = r;
  return d;
}

class RedisClusterCap : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cluster_ = new RedisCluster(3); }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  RedisServer& other(RedisServer& not_this) {
    for (auto& n : cluster_->nodes())
      if (n.get() != &not_this) return *n;
    throw std::runtime_error("no other node");
  }
  static RedisCluster* cluster_;
};
RedisCluster* RedisClusterCap::cluster_ = nullptr;

TEST_F(RedisClusterCap, RecipientsOnEveryMasterAreCountedInOneRoundTripPerMaster) {
  auto s = clusterStore(*cluster_);
  // A cap of 2 per hour, each recipient three times in one batch: the third is capped.
  std::vector<std::string> ids;
  std::set<int> owners;
  for (int i = 0; i < 30; ++i) {
    ids.push_back("spread-" + std::to_string(i));
    owners.insert(cluster_->owner(slotOf(ids.back())).port());
  }
  ASSERT_EQ(owners.size(), 3u);  // the recipients are on every master
  std::vector<CapQuery> q;
  for (const std::string& id : ids)
    for (int k = 0; k < 3; ++k) q.push_back(CapQuery{id, "class:bulk", 2, hours(1)});
  std::vector<CapDecision> out(q.size());
  const std::uint64_t before = s->stats().round_trips;
  const CapBatchResult r = s->decide(q, kT0, out);
  EXPECT_EQ(r.fault, CapFault::kNone) << s->lastError();
  EXPECT_EQ(r.decided, q.size());
  EXPECT_EQ(s->stats().round_trips - before, 3u);  // one pipeline per master
  EXPECT_EQ(s->stats().moved, 0u);
  for (std::size_t i = 0; i < q.size(); ++i) {
    const std::size_t k = i % 3;
    if (k < 2) {
      EXPECT_EQ(out[i].verdict, CapVerdict::kAllowed) << q[i].recipient;
      EXPECT_EQ(out[i].in_window, k + 1);
    } else {
      EXPECT_EQ(out[i].verdict, CapVerdict::kCapped) << q[i].recipient;
      EXPECT_EQ(out[i].at, kT0 + hours(1));
    }
  }
  // Each recipient's key is where Redis Cluster says.
  for (const std::string& id : ids)
    EXPECT_EQ(cluster_->owner(slotOf(id)).command("EXISTS fc:{" + id + "}:class:bulk"), "1") << id;

  // Giving back one send of every recipient is one round trip per master
  // too, and frees exactly one place each.
  std::vector<CapRelease> back;
  for (const std::string& id : ids) back.push_back(CapRelease{id, "class:bulk", kT0});
  const std::uint64_t trips = s->stats().round_trips;
  const CapBatchResult rel = s->release(back, kT0 + minutes(1));
  EXPECT_EQ(rel.fault, CapFault::kNone) << s->lastError();
  EXPECT_EQ(rel.decided, ids.size());
  EXPECT_EQ(s->stats().round_trips - trips, 3u);
  std::vector<CapQuery> again;
  for (const std::string& id : ids)
    for (int k = 0; k < 2; ++k) again.push_back(CapQuery{id, "class:bulk", 2, hours(1)});
  std::vector<CapDecision> out2(again.size());
  ASSERT_EQ(s->decide(again, kT0 + minutes(2), out2).fault, CapFault::kNone) << s->lastError();
  for (std::size_t i = 0; i < again.size(); ++i)
    EXPECT_EQ(out2[i].verdict, i % 2 == 0 ? CapVerdict::kAllowed : CapVerdict::kCapped) << again[i].recipient;
}

TEST_F(RedisClusterCap, MovedAfterSlotMigrationIsFollowedAndKeepsTheCount) {
  auto s = clusterStore(*cluster_);
  const CapQuery q{"moving-recipient", "class:bulk", 2, hours(1)};
  ASSERT_EQ(one(*s, q, kT0).verdict, CapVerdict::kAllowed) << s->lastError();
  ASSERT_EQ(one(*s, q, kT0 + minutes(1)).verdict, CapVerdict::kAllowed) << s->lastError();
  const int slot = slotOf(q.recipient);
  RedisServer& from = cluster_->owner(slot);
  RedisServer& to = other(from);
  cluster_->migrateSlot(slot, from, to, true);
  ASSERT_EQ(&cluster_->owner(slot), &to);
  CapBatchResult r;
  const CapDecision d = one(*s, q, kT0 + minutes(2), &r);
  EXPECT_EQ(r.fault, CapFault::kNone) << s->lastError();
  EXPECT_EQ(d.verdict, CapVerdict::kCapped);  // the two sends moved with the key: not counted afresh
  EXPECT_EQ(d.at, kT0 + hours(1));
  EXPECT_GE(s->stats().moved, 1u);
  // The map was reread: the next batch goes straight to the new owner.
  const std::uint64_t moved = s->stats().moved;
  const std::uint64_t refreshes = s->stats().slot_refreshes;
  EXPECT_EQ(one(*s, q, kT0 + minutes(3)).verdict, CapVerdict::kCapped);
  EXPECT_EQ(s->stats().moved, moved);
  EXPECT_EQ(s->stats().slot_refreshes, refreshes + 1);
  EXPECT_EQ(one(*s, q, kT0 + hours(1)).verdict, CapVerdict::kAllowed);
}

TEST_F(RedisClusterCap, AskDuringMigrationIsFollowed) {
  auto s = clusterStore(*cluster_);
  const CapQuery q{"asking-recipient", "class:bulk", 1, hours(1)};
  ASSERT_EQ(one(*s, q, kT0).verdict, CapVerdict::kAllowed) << s->lastError();
  const int slot = slotOf(q.recipient);
  RedisServer& from = cluster_->owner(slot);
  RedisServer& to = other(from);
  cluster_->migrateSlot(slot, from, to, false);  // keys moved, slot still owned by `from`
  CapBatchResult r;
  const CapDecision d = one(*s, q, kT0 + minutes(1), &r);
  EXPECT_EQ(r.fault, CapFault::kNone) << s->lastError();
  EXPECT_EQ(d.verdict, CapVerdict::kCapped);
  EXPECT_GE(s->stats().asked, 1u);
  EXPECT_EQ(s->stats().moved, 0u);
  for (auto& n : cluster_->nodes())
    n->command("CLUSTER SETSLOT " + std::to_string(slot) + " NODE " + to.command("CLUSTER MYID"));
}

// Its own cluster: a killed master does not come back into it.
TEST(RedisClusterCapDown, AMasterDownLeavesOnlyItsRecipientsUnavailable) {
  RedisCluster cluster(3);
  auto s = clusterStore(cluster);
  std::vector<std::string> ids;
  for (int i = 0; i < 30; ++i) ids.push_back("down-" + std::to_string(i));
  std::vector<CapQuery> q;
  for (const std::string& id : ids) q.push_back(CapQuery{id, "class:bulk", 1, hours(1)});
  RedisServer& victim = cluster.owner(slotOf(q[0].recipient));
  const int victim_port = victim.port();
  std::vector<bool> on_victim;
  for (const CapQuery& x : q) on_victim.push_back(cluster.owner(slotOf(x.recipient)).port() == victim_port);
  victim.kill();
  const std::uint64_t refreshes = s->stats().slot_refreshes;
  for (int round = 0; round < 2; ++round) {  // the second is while the dead master is backed off
    std::vector<CapDecision> out(q.size());
    const CapBatchResult r = s->decide(q, kT0 + milliseconds(round), out);
    EXPECT_NE(r.fault, CapFault::kNone);
    std::size_t unavailable = 0;
    for (std::size_t i = 0; i < q.size(); ++i) {
      if (on_victim[i]) {
        EXPECT_EQ(out[i].verdict, CapVerdict::kUnavailable) << q[i].recipient;
        ++unavailable;
      } else {
        // Decided: counted in round 0, so capped in round 1.
        EXPECT_EQ(out[i].verdict, round == 0 ? CapVerdict::kAllowed : CapVerdict::kCapped)
            << q[i].recipient << " round " << round << ": " << s->lastError();
      }
    }
    EXPECT_GT(unavailable, 0u);
    EXPECT_LT(unavailable, q.size());
    EXPECT_EQ(r.decided, q.size() - unavailable);
  }
  // A lost master may have failed over: the next batch reread the slot map
  // (here it still names the dead master, so its recipients still wait).
  EXPECT_EQ(s->stats().slot_refreshes, refreshes + 1);
}

}  // namespace
}  // namespace pacer
