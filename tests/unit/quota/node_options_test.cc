// The one builder of Redis node options that both Redis adapters use: it
// passes each adapter's link settings, script and logger through, and refuses
// settings no node could run with, naming the adapter.
#include <gtest/gtest.h>
#include <spdlog/logger.h>

#include <chrono>
#include <memory>
#include <string>

#include "pacer/error.h"
#include "pacer/frequency_cap_redis.h"
#include "pacer/quota_redis.h"
#include "script_node.h"

namespace pacer::redis_cluster {
namespace {

using std::chrono::milliseconds;

// The message of the InvalidError `build` throws; "" when it throws none.
template <typename F>
std::string invalidText(F build) {
  try {
    build();
  } catch (const InvalidError& e) {
    return e.what();
  }
  return "";
}

TEST(NodeOptions, CarriesTheLinkTheScriptAndTheLogger) {
  const RedisLinkOptions link{milliseconds(7), milliseconds(8), milliseconds(9), milliseconds(900)};
  auto logger = std::make_shared<spdlog::logger>("node-options-test");
  const NodeOptions n = makeNodeOptions("test adapter", link, "return 1", "test", logger.get());
  EXPECT_EQ(n.link.connect_timeout, milliseconds(7));
  EXPECT_EQ(n.link.command_timeout, milliseconds(8));
  EXPECT_EQ(n.link.backoff_min, milliseconds(9));
  EXPECT_EQ(n.link.backoff_max, milliseconds(900));
  EXPECT_STREQ(n.script, "return 1");
  EXPECT_EQ(n.log_name, "test");
  EXPECT_EQ(n.log, logger.get());
}

TEST(NodeOptions, RefusesTimeoutsAndBackoffsNoNodeCouldUseNamingTheAdapter) {
  const RedisLinkOptions good{milliseconds(50), milliseconds(50), milliseconds(10), milliseconds(500)};
  const auto with = [&](auto change) {
    RedisLinkOptions l = good;
    change(l);
    return invalidText([&] { makeNodeOptions("my adapter", l, "", "x", nullptr); });
  };
  EXPECT_EQ(with([](RedisLinkOptions&) {}), "");
  EXPECT_EQ(with([](RedisLinkOptions& l) { l.connect_timeout = milliseconds(0); }),
            "my adapter: timeouts must be > 0 ms");
  EXPECT_EQ(with([](RedisLinkOptions& l) { l.command_timeout = milliseconds(-1); }),
            "my adapter: timeouts must be > 0 ms");
  EXPECT_EQ(with([](RedisLinkOptions& l) { l.backoff_min = milliseconds(0); }),
            "my adapter: need 0 < backoff_min <= backoff_max");
  EXPECT_EQ(with([](RedisLinkOptions& l) { l.backoff_max = milliseconds(5); }),
            "my adapter: need 0 < backoff_min <= backoff_max");
  EXPECT_EQ(with([](RedisLinkOptions& l) { l.backoff_max = l.backoff_min; }), "") << "an equal pair is a fixed wait";
}

// Both adapters build their nodes through it: a bad link is refused when the
// adapter is made, before any connection, in the adapter's own words.
TEST(NodeOptions, BothRedisAdaptersCheckTheirLinkThroughIt) {
  RedisQuotaOptions quota;
  quota.link.command_timeout = milliseconds(0);
  EXPECT_EQ(invalidText([&] { makeRedisQuotaBackend(quota); }), "redis quota: timeouts must be > 0 ms");
  RedisFrequencyCapOptions caps;
  caps.link.backoff_min = milliseconds(5000);
  EXPECT_EQ(invalidText([&] { makeRedisFrequencyCapStore(caps); }),
            "redis frequency cap: need 0 < backoff_min <= backoff_max");
  EXPECT_EQ(invalidText([] { makeRedisQuotaBackend(RedisQuotaOptions{}); }), "") << "the defaults are valid";
  EXPECT_EQ(invalidText([] { makeRedisFrequencyCapStore(RedisFrequencyCapOptions{}); }), "");
}

}  // namespace
}  // namespace pacer::redis_cluster
