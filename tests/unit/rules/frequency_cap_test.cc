#include "pacer/frequency_cap.h"

#include <gtest/gtest.h>

#include "cap_window.h"
#include "support/cap_simulation.h"

namespace pacer {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;

const WallTime kT0 = WallTime(std::chrono::sys_days{std::chrono::year{2024} / 6 / 1});

CapDecision one(FrequencyCapStore& s, const CapQuery& q, WallTime now) {
  CapDecision d;
  s.decide(std::span<const CapQuery>(&q, 1), now, std::span<CapDecision>(&d, 1));
  return d;
}

const CapQuery kBulk{"+4915112345678", "class:bulk", 3, hours(24)};

TEST(MemoryFrequencyCap, ThreePerDayThenCappedUntilTheFirstLeavesTheWindow) {
  auto s = makeMemoryFrequencyCapStore();
  for (int i = 0; i < 3; ++i) {
    const CapDecision d = one(*s, kBulk, kT0 + hours(i));
    ASSERT_EQ(d.verdict, CapVerdict::kAllowed) << i;
    EXPECT_EQ(d.at, kT0 + hours(i));
    EXPECT_EQ(d.in_window, static_cast<std::uint32_t>(i + 1));
  }
  const CapDecision capped = one(*s, kBulk, kT0 + hours(5));
  EXPECT_EQ(capped.verdict, CapVerdict::kCapped);
  EXPECT_EQ(capped.at, kT0 + hours(24));
  EXPECT_EQ(capped.in_window, 3u);
  // One millisecond early is still capped; at the instant it is allowed.
  EXPECT_EQ(one(*s, kBulk, kT0 + hours(24) - milliseconds(1)).verdict, CapVerdict::kCapped);
  EXPECT_EQ(one(*s, kBulk, kT0 + hours(24)).verdict, CapVerdict::kAllowed);
  // Now the sends at +1 h, +2 h and +24 h count: next free at +25 h.
  EXPECT_EQ(one(*s, kBulk, kT0 + hours(24) + minutes(1)).at, kT0 + hours(25));
}

TEST(MemoryFrequencyCap, QueriesInOneBatchSeeEachOtherInOrder) {
  auto s = makeMemoryFrequencyCapStore();
  const std::vector<CapQuery> q(5, kBulk);
  std::vector<CapDecision> out(5);
  const CapBatchResult r = s->decide(q, kT0, out);
  EXPECT_EQ(r.fault, CapFault::kNone);
  EXPECT_EQ(r.decided, 5u);
  EXPECT_EQ(out[0].verdict, CapVerdict::kAllowed);
  EXPECT_EQ(out[2].verdict, CapVerdict::kAllowed);
  EXPECT_EQ(out[3].verdict, CapVerdict::kCapped);
  EXPECT_EQ(out[4].verdict, CapVerdict::kCapped);
  EXPECT_EQ(out[4].at, kT0 + hours(24));
}

TEST(MemoryFrequencyCap, RecipientsAndScopesCountSeparately) {
  auto s = makeMemoryFrequencyCapStore();
  CapQuery other_recipient = kBulk;
  other_recipient.recipient = "+4915112345679";
  CapQuery other_scope = kBulk;
  other_scope.scope = "campaign:42";
  for (int i = 0; i < 3; ++i) ASSERT_EQ(one(*s, kBulk, kT0).verdict, CapVerdict::kAllowed);
  EXPECT_EQ(one(*s, kBulk, kT0).verdict, CapVerdict::kCapped);
  EXPECT_EQ(one(*s, other_recipient, kT0).verdict, CapVerdict::kAllowed);
  EXPECT_EQ(one(*s, other_scope, kT0).verdict, CapVerdict::kAllowed);
}

TEST(MemoryFrequencyCap, ReleaseGivesTheSlotBack) {
  auto s = makeMemoryFrequencyCapStore();
  std::vector<CapDecision> d;
  for (int i = 0; i < 3; ++i) d.push_back(one(*s, kBulk, kT0 + minutes(i)));
  ASSERT_EQ(one(*s, kBulk, kT0 + minutes(3)).verdict, CapVerdict::kCapped);
  const CapRelease back{kBulk.recipient, kBulk.scope, d[1].at};
  const CapBatchResult r = s->release(std::span<const CapRelease>(&back, 1), kT0 + minutes(4));
  EXPECT_EQ(r.decided, 1u);
  EXPECT_EQ(one(*s, kBulk, kT0 + minutes(5)).verdict, CapVerdict::kAllowed);
  // Releasing the same stamp again, or one never counted, changes nothing.
  const CapRelease again[] = {back, CapRelease{kBulk.recipient, kBulk.scope, kT0 + hours(7)},
                              CapRelease{"nobody", kBulk.scope, kT0}};
  EXPECT_EQ(s->release(again, kT0 + minutes(6)).decided, 0u);
  EXPECT_EQ(one(*s, kBulk, kT0 + minutes(6)).verdict, CapVerdict::kCapped);
}

TEST(MemoryFrequencyCap, BadQueriesAreInvalidAndNotCounted) {
  auto s = makeMemoryFrequencyCapStore();
  std::vector<CapQuery> bad(8, kBulk);
  bad[0].recipient = "";
  bad[1].recipient = "a}b";  // would end the hash tag early
  bad[2].scope = "";
  bad[3].limit = 0;
  bad[4].limit = kMaxCapLimit + 1;
  bad[5].window = milliseconds(0);
  bad[6].window = kMaxCapWindow + milliseconds(1);
  const std::string long_id(kMaxCapRecipientBytes + 1, 'x');
  bad[7].recipient = long_id;
  std::vector<CapDecision> out(bad.size());
  const CapBatchResult r = s->decide(bad, kT0, out);
  EXPECT_EQ(r.decided, 0u);
  for (std::size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i].verdict, CapVerdict::kInvalid) << i;
  EXPECT_EQ(one(*s, kBulk, WallTime(milliseconds(-1))).verdict, CapVerdict::kInvalid);
  EXPECT_EQ(one(*s, kBulk, WallTime(milliseconds(kMaxCapStampMs + 1))).verdict, CapVerdict::kInvalid);
  // Nothing above counted: three fresh sends still fit.
  for (int i = 0; i < 3; ++i) EXPECT_EQ(one(*s, kBulk, kT0).verdict, CapVerdict::kAllowed);
}

TEST(MemoryFrequencyCap, AClockThatStepsBackNeverLetsASendOver) {
  auto s = makeMemoryFrequencyCapStore();
  CapQuery q = kBulk;
  q.limit = 1;
  ASSERT_EQ(one(*s, q, kT0 + hours(10)).verdict, CapVerdict::kAllowed);
  // Another worker's clock is 2 h behind: the send "in its future" counts.
  const CapDecision d = one(*s, q, kT0 + hours(8));
  EXPECT_EQ(d.verdict, CapVerdict::kCapped);
  EXPECT_EQ(d.at, kT0 + hours(34));
}

TEST(MemoryFrequencyCap, ALowerLimitCapsUntilEnoughSendsLeave) {
  auto s = makeMemoryFrequencyCapStore();
  for (int i = 0; i < 3; ++i) ASSERT_EQ(one(*s, kBulk, kT0 + hours(i)).verdict, CapVerdict::kAllowed);
  CapQuery one_a_day = kBulk;
  one_a_day.limit = 1;
  // Three in the window, limit 1: free when the newest leaves (+2 h + 24 h).
  EXPECT_EQ(one(*s, one_a_day, kT0 + hours(3)).at, kT0 + hours(26));
}

TEST(CapWindow, DropsStampsAtTheWindowEdgeAndKeepsOrder) {
  std::vector<std::int64_t> stamps{100, 200, 300};
  // At 1100 with a 1000 ms window the stamp at 100 has left ((100, 1100] open at the left).
  const rules::CapStep s = rules::applyCap(stamps, 1100, 3, 1000);
  EXPECT_TRUE(s.allowed);
  EXPECT_EQ(stamps, (std::vector<std::int64_t>{200, 300, 1100}));
  // Capped: free when 200 leaves, at 1200.
  const rules::CapStep c = rules::applyCap(stamps, 1150, 3, 1000);
  EXPECT_FALSE(c.allowed);
  EXPECT_EQ(c.at_ms, 1200);
  EXPECT_TRUE(rules::releaseStamp(stamps, 300));
  EXPECT_FALSE(rules::releaseStamp(stamps, 300));
  EXPECT_EQ(stamps, (std::vector<std::int64_t>{200, 1100}));
}

TEST(MemoryFrequencyCap, ThreeSimulatedDaysNeverLetARecipientOverItsCap) {
  auto s = makeMemoryFrequencyCapStore();
  testing::CapSimOptions opts;
  opts.recipients = 5000;
  opts.max_step = minutes(10);
  const testing::CapSimReport r = testing::runCapSimulation(*s, opts, kT0);
  EXPECT_GT(r.decisions, 40'000u);
  EXPECT_GT(r.capped, r.decisions / 10);  // the caps really bite
  EXPECT_GT(r.allowed, r.decisions / 10);
  EXPECT_GT(r.release_requests, 0u);
  EXPECT_EQ(r.released, r.release_requests);
  EXPECT_EQ(r.unavailable, 0u);
  EXPECT_EQ(r.wrong_verdicts, 0u);
  EXPECT_EQ(r.wrong_allowed_at, 0u);
  EXPECT_EQ(r.pairs_over_cap, 0u);
  EXPECT_EQ(r.recipients_over_cap, 0u);
  RecordProperty("decisions", std::to_string(r.decisions));
  RecordProperty("capped", std::to_string(r.capped));
}

}  // namespace
}  // namespace pacer
