#include <gtest/gtest.h>

#include "pacer/quota_redis.h"

namespace pacer {
namespace {

TEST(ClusterSlot, Crc16MatchesTheXmodemCheckValue) {
  EXPECT_EQ(crc16Xmodem("123456789"), 0x31C3);
  EXPECT_EQ(crc16Xmodem(""), 0x0000);
  EXPECT_EQ(crc16Xmodem("A"), 0x58E5);
}

TEST(ClusterSlot, KnownKeysLandInRedisSlots) {
  EXPECT_EQ(redisClusterSlot("foo"), 12182);
  EXPECT_EQ(redisClusterSlot("123456789"), 0x31C3 & 16383);
}

TEST(ClusterSlot, HashTagDecidesTheSlot) {
  EXPECT_EQ(redisClusterSlot("{user1000}.following"), redisClusterSlot("{user1000}.followers"));
  EXPECT_EQ(redisClusterSlot("{user1000}.following"), redisClusterSlot("user1000"));
  EXPECT_EQ(redisClusterSlot("pacer:{sms-gw}:p"), redisClusterSlot("pacer:{sms-gw}:c:welcome"));
  EXPECT_EQ(redisClusterSlot("pacer:{foo}:p"), 12182);
}

TEST(ClusterSlot, EmptyOrUnclosedTagHashesTheWholeKey) {
  EXPECT_EQ(redisClusterSlot("foo{}{bar}"), crc16Xmodem("foo{}{bar}") & 16383);
  EXPECT_EQ(redisClusterSlot("foo{bar"), crc16Xmodem("foo{bar") & 16383);
  // Only the first '{' counts, up to the next '}'.
  EXPECT_EQ(redisClusterSlot("foo{{bar}}zap"), crc16Xmodem("{bar") & 16383);
  EXPECT_EQ(redisClusterSlot("foo{bar}{zap}"), crc16Xmodem("bar") & 16383);
}

}  // namespace
}  // namespace pacer
