#include "h2_connection.h"

#include <gtest/gtest.h>

namespace pacer::fake {
namespace {

std::string settingsFrame(std::initializer_list<std::pair<std::uint16_t, std::uint32_t>> entries) {
  std::string f;
  const std::size_t len = entries.size() * 6;
  f += {static_cast<char>(len >> 16), static_cast<char>(len >> 8), static_cast<char>(len), 0x04, 0, 0, 0, 0, 0};
  for (const auto& [id, value] : entries) {
    f += {static_cast<char>(id >> 8), static_cast<char>(id)};
    for (int i = 3; i >= 0; --i) f.push_back(static_cast<char>(value >> (8 * i)));
  }
  return f;
}

TEST(PatchMaxConcurrentStreamsTest, RewritesOnlyTheMaxConcurrentStreamsValueOfTheFirstSettingsFrame) {
  std::string out = settingsFrame({{0x3, kSessionStreamLimit}, {0x4, 1 << 20}}) + "rest";
  ASSERT_TRUE(patchMaxConcurrentStreams(out, 7));
  EXPECT_EQ(out, settingsFrame({{0x3, 7}, {0x4, 1 << 20}}) + "rest");
}

TEST(PatchMaxConcurrentStreamsTest, WaitsForACompleteFrame) {
  std::string whole = settingsFrame({{0x3, kSessionStreamLimit}});
  std::string part = whole.substr(0, 12);
  EXPECT_FALSE(patchMaxConcurrentStreams(part, 7));
  EXPECT_EQ(part, whole.substr(0, 12));
  std::string none;
  EXPECT_FALSE(patchMaxConcurrentStreams(none, 7));
}

}  // namespace
}  // namespace pacer::fake
