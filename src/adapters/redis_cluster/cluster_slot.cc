// Redis Cluster key slots: CRC16-XMODEM of the hash tag, modulo 16384.
#include <array>

#include "pacer/redis_cluster.h"

namespace pacer {
namespace {

constexpr std::array<std::uint16_t, 256> makeTable() {
  std::array<std::uint16_t, 256> t{};
  for (unsigned i = 0; i < 256; ++i) {
    std::uint16_t c = static_cast<std::uint16_t>(i << 8);
    for (int b = 0; b < 8; ++b) c = static_cast<std::uint16_t>((c & 0x8000) ? (c << 1) ^ 0x1021 : (c << 1));
    t[i] = c;
  }
  return t;
}
constexpr std::array<std::uint16_t, 256> kCrcTable = makeTable();

}  // namespace

std::uint16_t crc16Xmodem(std::string_view data) noexcept {
  std::uint16_t crc = 0;
  for (unsigned char ch : data) crc = static_cast<std::uint16_t>((crc << 8) ^ kCrcTable[((crc >> 8) ^ ch) & 0xff]);
  return crc;
}

std::uint16_t redisClusterSlot(std::string_view key) noexcept {
  const std::size_t open = key.find('{');
  if (open != std::string_view::npos) {
    const std::size_t close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1) key = key.substr(open + 1, close - open - 1);
  }
  return static_cast<std::uint16_t>(crc16Xmodem(key) & 16383);
}

}  // namespace pacer
