#include "pacer/smpp/framer.h"

#include <gtest/gtest.h>

#include <random>

#include "hex.h"

namespace pacer::smpp {
namespace {

using testing::hex;

TEST(SmppFramer, YieldsWholePdusFromAnyChunking) {
  const std::string one = hex("00000010 00000015 00000000 00000001");
  const std::string two = hex("00000017 80000004 00000000 00000002 61 62 63 31 32 33 00");
  const std::string stream = one + two + one;
  std::mt19937 rng(5);
  for (int trial = 0; trial < 200; ++trial) {
    Framer f;
    std::vector<std::string> got;
    std::size_t i = 0;
    while (i < stream.size()) {
      const std::size_t n = std::min<std::size_t>(1 + rng() % 9, stream.size() - i);
      f.append(stream.substr(i, n));
      i += n;
      std::string_view pdu;
      while (f.next(pdu) == Framer::Next::kPdu) got.emplace_back(pdu);
    }
    ASSERT_EQ(got.size(), 3u);
    EXPECT_EQ(got[0], one);
    EXPECT_EQ(got[1], two);
    EXPECT_EQ(got[2], one);
    EXPECT_EQ(f.buffered(), 0u);
  }
}

TEST(SmppFramer, PrepareAndCommitFillInPlace) {
  Framer f;
  const std::string one = hex("00000010 00000015 00000000 00000007");
  std::uint8_t* p = f.prepare(64);
  std::copy(one.begin(), one.end(), p);
  f.commit(one.size());
  std::string_view pdu;
  ASSERT_EQ(f.next(pdu), Framer::Next::kPdu);
  EXPECT_EQ(pdu, one);
  EXPECT_EQ(f.next(pdu), Framer::Next::kNeedMore);
}

TEST(SmppFramer, ImpossibleLengthBreaksTheStreamUntilReset) {
  Framer f(1024);
  std::string_view pdu;
  f.append(hex("0000000f"));
  EXPECT_EQ(f.next(pdu), Framer::Next::kBadLength);
  EXPECT_EQ(f.next(pdu), Framer::Next::kBadLength);
  f.reset();
  f.append(hex("00000401"));  // 1025 > the 1024 limit
  EXPECT_EQ(f.next(pdu), Framer::Next::kBadLength);
  f.reset();
  f.append(hex("00000010 00000015 00000000"));
  EXPECT_EQ(f.next(pdu), Framer::Next::kNeedMore);
}

}  // namespace
}  // namespace pacer::smpp
