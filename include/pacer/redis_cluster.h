// Redis addresses and Redis Cluster key slots, shared by the Redis adapters
// (pacer::quota_redis, pacer::frequency_cap_redis; both route through the
// private pacer::redis_cluster unit in src/adapters/redis_cluster).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace pacer {

struct RedisAddress {
  std::string host = "127.0.0.1";
  int port = 6379;
};

// How a Redis adapter reaches each of its servers, in milliseconds. Each
// adapter's options hold one with its own defaults; every value must be > 0
// and backoff_min <= backoff_max (the adapter's constructor checks).
struct RedisLinkOptions {
  std::chrono::milliseconds connect_timeout;
  std::chrono::milliseconds command_timeout;  // per read or write of a pipelined batch
  std::chrono::milliseconds backoff_min;      // first wait after a failure
  std::chrono::milliseconds backoff_max;      // doubling stops here
};

// The Redis Cluster slot of `key`: CRC16 (XMODEM) of its hash tag (the part
// between the first '{' and the next '}', if non-empty) or of the whole key,
// modulo 16384.
std::uint16_t redisClusterSlot(std::string_view key) noexcept;
// CRC16-CCITT (XMODEM: polynomial 0x1021, initial 0), as Redis Cluster uses.
std::uint16_t crc16Xmodem(std::string_view data) noexcept;

}  // namespace pacer
