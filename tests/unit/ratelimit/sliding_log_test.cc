#include "sliding_log.h"

#include <gtest/gtest.h>

namespace pacer::ratelimit {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

MonoTime at(Nanos t) { return monoAt(t); }

TEST(SlidingLog, CountsUnitsInTheTrailingWindow) {
  SlidingLog sl({10, 1}, seconds(1), 1000, at(Nanos{0}));
  EXPECT_EQ(sl.acquireUpTo(4, at(Nanos{0})), 4u);
  EXPECT_EQ(sl.acquireUpTo(100, at(milliseconds(500))), 6u);
  EXPECT_FALSE(sl.canDoWork(at(milliseconds(999))));
  EXPECT_EQ(sl.acquireUpTo(100, at(milliseconds(1000))), 4u);  // the first four expired
  EXPECT_EQ(sl.acquireUpTo(100, at(milliseconds(1500))), 6u);
}

TEST(SlidingLog, NoWindowEverHoldsMoreThanTheLimit) {
  SlidingLog sl({100, 1}, seconds(1), 1000, at(Nanos{0}));
  std::vector<std::uint32_t> per_ms;
  for (int ms = 0; ms < 5000; ++ms)
    per_ms.push_back(static_cast<std::uint32_t>(sl.acquireUpTo(7, at(milliseconds(ms)))));
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < per_ms.size(); ++i) {
    sum += per_ms[i];
    if (i >= 1000) sum -= per_ms[i - 1000];
    ASSERT_LE(sum, 100u) << "at " << i << " ms";
  }
}

TEST(SlidingLog, MemoryGrowsOnlyWithUse) {
  SlidingLog sl({10000, 1}, seconds(1), 1u << 20, at(Nanos{0}));
  EXPECT_EQ(sl.entries(), 0u);
  sl.acquireUpTo(3, at(Nanos{0}));
  EXPECT_EQ(sl.entries(), 3u);
}

TEST(SlidingLog, TimeUntilIsWhenTheOldestNeededEntryExpires) {
  SlidingLog sl({3, 1}, seconds(1), 1000, at(Nanos{0}));
  ASSERT_TRUE(sl.canDoWork(at(milliseconds(0))));
  ASSERT_TRUE(sl.canDoWork(at(milliseconds(100))));
  ASSERT_TRUE(sl.canDoWork(at(milliseconds(200))));
  const Nanos wait = sl.timeUntil(2, at(milliseconds(300)));
  EXPECT_EQ(wait, milliseconds(800));
  EXPECT_FALSE(sl.tryAcquire(2, at(milliseconds(1099))));
  EXPECT_TRUE(sl.tryAcquire(2, at(milliseconds(300) + wait)));
  EXPECT_EQ(sl.timeUntil(4, at(seconds(5))), kNever);
}

TEST(SlidingLog, ValidateRefusesALogAboveItsMemoryCap) {
  LimiterOptions o;
  o.algorithm = Algorithm::kSlidingLog;
  o.max_log_entries = 1000;
  EXPECT_THROW(validateLimit({1001, 1}, o), InvalidLimitError);
  EXPECT_NO_THROW(validateLimit({1000, 1}, o));
  EXPECT_THROW(validateLimit({0.5, 1}, o), InvalidLimitError);  // below one message per window
  EXPECT_NO_THROW(validateLimit({0, 1}, o));                    // rate 0: nothing passes, by design
  o.algorithm = Algorithm::kSlidingWindow;
  EXPECT_THROW(validateLimit({0.5, 1}, o), InvalidLimitError);
}

TEST(SlidingLog, SetLimitKeepsTheNewestEntries) {
  SlidingLog sl({10, 1}, seconds(1), 1000, at(Nanos{0}));
  ASSERT_EQ(sl.acquireUpTo(10, at(Nanos{0})), 10u);
  sl.setLimit({4, 1}, at(milliseconds(10)));
  EXPECT_EQ(sl.entries(), 4u);
  EXPECT_FALSE(sl.canDoWork(at(milliseconds(500))));
  EXPECT_EQ(sl.acquireUpTo(10, at(seconds(1))), 4u);
}

}  // namespace
}  // namespace pacer::ratelimit
