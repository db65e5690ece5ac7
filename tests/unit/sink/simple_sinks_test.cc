#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "pacer/sink.h"

namespace pacer {
namespace {

Message msg(std::string campaign, std::string id, std::string recipient, std::string payload) {
  Message m;
  m.campaign = std::move(campaign);
  m.id = std::move(id);
  m.recipient = std::move(recipient);
  m.payload = std::move(payload);
  return m;
}

TEST(EscapeForLine, KeepsTextAndEscapesWhatWouldBreakALine) {
  EXPECT_EQ(escapeForLine("hello, world"), "hello, world");
  EXPECT_EQ(escapeForLine("a\nb\tc\\d"), "a\\nb\\tc\\\\d");
  EXPECT_EQ(escapeForLine(std::string("\x00\x1f\x7f", 3)), "\\x00\\x1f\\x7f");
  EXPECT_EQ(escapeForLine("привет 春"), "привет 春");
  EXPECT_EQ(escapeForLine(std::string("\xff\xc3", 2)), "\\xff\\xc3");  // invalid and truncated UTF-8
}

TEST(StdoutSink, WritesOneLinePerMessageAndReportsEachOnce) {
  char* buf = nullptr;
  std::size_t len = 0;
  std::FILE* f = open_memstream(&buf, &len);
  auto sink = makeStdoutSink(f, 2);
  EXPECT_TRUE(sink->submit(msg("promo", "m-1", "+1555", "two\nlines"), 7));
  EXPECT_TRUE(sink->submit(msg("promo", "m-2", "", "x"), 8));
  EXPECT_FALSE(sink->submit(msg("promo", "m-3", "", "y"), 9));  // in-flight bound reached
  EXPECT_EQ(sink->inFlight(), 2u);
  std::vector<SendResult> done;
  sink->poll(done);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].ticket, 7u);
  EXPECT_EQ(done[0].outcome, SendOutcome::kDelivered);
  EXPECT_EQ(done[1].ticket, 8u);
  EXPECT_EQ(sink->inFlight(), 0u);
  done.clear();
  sink->poll(done);
  EXPECT_TRUE(done.empty());
  std::fclose(f);
  EXPECT_EQ(std::string(buf, len), "promo m-1 +1555 two\\nlines\npromo m-2 - x\n");
  std::free(buf);
}

TEST(StdoutSink, AFailedWriteIsARetryWithTheError) {
  std::FILE* f = std::fopen("/dev/full", "w");
  ASSERT_NE(f, nullptr);
  auto sink = makeStdoutSink(f, 4);
  ASSERT_TRUE(sink->submit(msg("c", "m", "", "payload"), 1));
  std::vector<SendResult> done;
  sink->poll(done);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].outcome, SendOutcome::kFault);
  EXPECT_NE(done[0].reason.find("No space left"), std::string::npos) << done[0].reason;
  std::fclose(f);
}

TEST(NullSink, DeliversEverythingWithinItsBound) {
  auto sink = makeNullSink(3);
  for (std::uint64_t t = 0; t < 3; ++t) EXPECT_TRUE(sink->submit(msg("c", "m", "", ""), t));
  EXPECT_FALSE(sink->submit(msg("c", "m", "", ""), 3));
  std::vector<SendResult> done;
  sink->poll(done);
  EXPECT_EQ(done.size(), 3u);
  EXPECT_TRUE(sink->submit(msg("c", "m", "", ""), 3));
}

}  // namespace
}  // namespace pacer
