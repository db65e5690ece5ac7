// The independent checks behind "recipients over cap: 0" and "sent inside
// quiet window: 0" do find what they look for.
#include "oracle.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <string>

namespace pacer::sim {
namespace {

using namespace std::chrono;

std::int64_t utcMs(sys_days day, hours h, minutes m, milliseconds extra = milliseconds{0}) {
  return duration_cast<milliseconds>((day + h + m + extra).time_since_epoch()).count();
}

TEST(SimOracle, CapOracleCountsRecipientsOverTheLimitInARollingWindow) {
  CapOracle o(FrequencyCapRule{3, hours{24}});
  o.sent(1, 0);
  o.sent(1, 1000);
  o.sent(1, 2000);
  o.sent(1, 86'400'000);  // the first has just left the window
  EXPECT_EQ(o.recipientsOverCap(), 0u);
  o.sent(2, 0);
  o.sent(2, 1);
  o.sent(2, 2);
  o.sent(2, 86'399'999);  // still inside the first one's window
  EXPECT_EQ(o.recipientsOverCap(), 1u);
  o.sent(2, 86'400'000);
  EXPECT_EQ(o.recipientsOverCap(), 1u);  // recipients, not sends
}

TEST(SimOracle, QuietWindowCheckUsesLocalTimeAcrossTheSpringChangeAndRestoresTz) {
  // The oracle must put back whatever TZ was; this test then puts back the
  // process's own (and has glibc re-read it: other tests format local time).
  const char* before = std::getenv("TZ");
  const std::string saved = before ? before : "";
  ::setenv("TZ", "Asia/Tokyo", 1);
  const sys_days day = 2024y / March / 10;
  const QuietWindow w{hours{21}, hours{8}};
  const std::vector<std::string> zones{"America/New_York", "Europe/London"};
  std::vector<std::vector<SendRun>> sends(2);
  sends[0] = {
      {utcMs(day, hours{6}, minutes{30}), 3},                       // 01:30 EST: inside
      {utcMs(day, hours{11}, minutes{59}, milliseconds{59'500}), 1},  // 07:59:59.5 EDT: inside
      {utcMs(day, hours{12}, minutes{0}), 5},                       // 08:00 EDT: outside
      {utcMs(day, hours{12}, minutes{30}), 7},                      // 08:30 EDT (07:30 EST): outside
  };
  sends[1] = {
      {utcMs(day, hours{20}, minutes{59}), 2},  // 20:59 GMT: outside
      {utcMs(day, hours{21}, minutes{0}), 4},   // 21:00 GMT: inside
  };
  EXPECT_EQ(sendsInQuietWindow(zones, w, sends), 3u + 1 + 4);
  ASSERT_NE(std::getenv("TZ"), nullptr);
  EXPECT_EQ(std::string(std::getenv("TZ")), "Asia/Tokyo");
  if (before) {
    ::setenv("TZ", saved.c_str(), 1);
  } else {
    ::unsetenv("TZ");
  }
  ::tzset();
}

}  // namespace
}  // namespace pacer::sim
