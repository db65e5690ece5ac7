// The Redis Cluster routing both Redis adapters share
// (src/adapters/redis_cluster): redirects and CLUSTER SLOTS replies, read
// from RESP bytes by hiredis's own reader as they would come off a socket.
#include "cluster_routing.h"
#include "script_node.h"  // ReplyPtr

#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include <memory>
#include <string>

namespace pacer::redis_cluster {
namespace {

ReplyPtr parse(const std::string& resp) {
  redisReader* reader = redisReaderCreate();
  redisReaderFeed(reader, resp.data(), resp.size());
  void* out = nullptr;
  const int rc = redisReaderGetReply(reader, &out);
  redisReaderFree(reader);
  if (rc != REDIS_OK || out == nullptr) throw std::runtime_error("not one whole RESP reply");
  return ReplyPtr(static_cast<redisReply*>(out));
}

std::string bulk(const std::string& s) { return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n"; }
std::string range(int lo, int hi, const std::string& host, int port) {
  return "*3\r\n:" + std::to_string(lo) + "\r\n:" + std::to_string(hi) + "\r\n*3\r\n" + bulk(host) + ":" +
         std::to_string(port) + "\r\n" + bulk("nodeid");
}

TEST(ClusterRouting, RedirectsNameTheirKindAndNode) {
  RedisAddress to;
  EXPECT_EQ(parseRedirect("MOVED 3999 127.0.0.1:6381", to), Redirect::kMoved);
  EXPECT_EQ(to.host, "127.0.0.1");
  EXPECT_EQ(to.port, 6381);
  EXPECT_EQ(parseRedirect("ASK 12 redis-b.internal:7002", to), Redirect::kAsk);
  EXPECT_EQ(to.host, "redis-b.internal");
  EXPECT_EQ(to.port, 7002);
  // Anything else is not a redirect, and leaves `to` alone.
  for (const char* other : {"NOSCRIPT No matching script", "MOVED 3999", "MOVED 3999 host:", "MOVED 3999 :6379",
                            "MOVED 3999 host:99999", "MOVED 3999 host:12ab", "ERR ASK 1 h:1", "CLUSTERDOWN"}) {
    EXPECT_EQ(parseRedirect(other, to), Redirect::kNone) << other;
    EXPECT_EQ(to.port, 7002) << other;
  }
}

TEST(ClusterRouting, ClusterSlotsAssignsEveryRangeToItsMasterAndAddsNewNodes) {
  SlotMap map({RedisAddress{"127.0.0.1", 7000}});
  EXPECT_FALSE(map.known());
  EXPECT_EQ(map.owner(16383), 0u);  // before any map: the first seed
  const ReplyPtr r = parse("*3\r\n" + range(0, 5460, "127.0.0.1", 7000) + range(5461, 10922, "127.0.0.1", 7001) +
                           range(10923, 16383, "", 7002));
  ASSERT_TRUE(map.apply(*r, 0));
  EXPECT_TRUE(map.known());
  ASSERT_EQ(map.nodes().size(), 3u);
  EXPECT_EQ(map.nodes()[2].host, "127.0.0.1");  // an empty host is the asked node's
  EXPECT_EQ(map.nodes()[2].port, 7002);
  EXPECT_EQ(map.owner(0), 0u);
  EXPECT_EQ(map.owner(5460), 0u);
  EXPECT_EQ(map.owner(5461), 1u);
  EXPECT_EQ(map.owner(10922), 1u);
  EXPECT_EQ(map.owner(10923), 2u);
  EXPECT_EQ(map.owner(16383), 2u);
  // A MOVED overrides one slot; a node already known keeps its index.
  map.setOwner(42, map.nodeFor(RedisAddress{"127.0.0.1", 7002}));
  EXPECT_EQ(map.owner(42), 2u);
  EXPECT_EQ(map.nodes().size(), 3u);
}

// [start, end, master, replica]: a range with one replica.
std::string rangeWithReplica(int lo, int hi, int port, int replica_port) {
  const auto node = [](int p) { return "*3\r\n" + bulk("127.0.0.1") + ":" + std::to_string(p) + "\r\n" + bulk("id"); };
  return "*4\r\n:" + std::to_string(lo) + "\r\n:" + std::to_string(hi) + "\r\n" + node(port) + node(replica_port);
}

TEST(ClusterRouting, AFailoverRereadCountsTheSlotsThatChangedMasterAndReplicasAreMet) {
  SlotMap map({RedisAddress{"127.0.0.1", 7000}});
  std::size_t moved = 99;
  ASSERT_TRUE(map.apply(
      *parse("*2\r\n" + rangeWithReplica(0, 8191, 7000, 7003) + rangeWithReplica(8192, 16383, 7001, 7004)), 0, &moved));
  EXPECT_EQ(moved, 0u);  // the first map moves nothing
  // Masters and replicas are all nodes to ask: 7000, 7003, 7001, 7004.
  ASSERT_EQ(map.nodes().size(), 4u);
  EXPECT_EQ(map.nodes()[1].port, 7003);
  EXPECT_EQ(map.owner(100), 0u);
  EXPECT_EQ(map.owner(9000), 2u);
  // 7000 died and 7003 was promoted: its 8192 slots have a new master.
  ASSERT_TRUE(map.apply(
      *parse("*2\r\n" + range(0, 8191, "127.0.0.1", 7003) + rangeWithReplica(8192, 16383, 7001, 7004)), 2, &moved));
  EXPECT_EQ(moved, 8192u);
  EXPECT_EQ(map.owner(100), 1u);
  EXPECT_EQ(map.owner(9000), 2u);
  EXPECT_EQ(map.nodes().size(), 4u);
}

TEST(ClusterRouting, AMalformedClusterSlotsReplyLeavesTheMapAsItWas) {
  SlotMap map({RedisAddress{"127.0.0.1", 7000}});
  ASSERT_TRUE(map.apply(*parse("*1\r\n" + range(0, 16383, "127.0.0.1", 7001)), 0));
  EXPECT_EQ(map.owner(9000), 1u);
  // The first range is well formed, the second has a port that is not an integer.
  const ReplyPtr bad = parse("*2\r\n" + range(0, 100, "127.0.0.1", 7002) + "*3\r\n:101\r\n:16383\r\n*2\r\n" +
                             bulk("127.0.0.1") + bulk("7003"));
  EXPECT_FALSE(map.apply(*bad, 0));
  EXPECT_EQ(map.owner(50), 1u);
  EXPECT_EQ(map.nodes().size(), 2u);
  EXPECT_FALSE(map.apply(*parse("-ERR This instance has cluster support disabled\r\n"), 0));
}

}  // namespace
}  // namespace pacer::redis_cluster
