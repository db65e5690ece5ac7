// The recipient rules on their own (src/core/delivery/rules_gate.h): what
// the gate hands back to its host, and what it holds meanwhile, on a
// simulated clock with the system's tz database and an in-memory cap store.
#include "rules_gate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "support/wall_time.h"

namespace pacer::delivery_detail {
namespace {

using std::chrono::hours;
using std::chrono::seconds;
using ::testing::HasSubstr;

using test::utc;

// The members of the worker's campaign that the gate uses, and no more.
struct FakeCampaign {
  CampaignInfo info;
  CampaignRules rules;
  struct {
    std::size_t n = 0;
    std::size_t size() const { return n; }
  } queue;
  bool sched_paused = false;
  CampaignStats stats;
};

using Gate = RulesGate<FakeCampaign>;

struct Row {
  DeliveryStatus status;
  std::string reason;
};

// Keeps what the gate hands back; queued messages count in the campaign's queue.
struct FakeHost final : Gate::Host {
  void row(FakeCampaign*, Item& item, DeliveryStatus status, std::string reason) override {
    rows.push_back(Row{status, std::move(reason)});
    ids.push_back(item.msg.id);
  }
  void enqueue(FakeCampaign* c, Item&& item) override {
    ++c->queue.n;
    queued.push_back(std::move(item));
  }
  void park(FakeCampaign*, Item&& item, WallTime until, MonoTime) override {
    parked.emplace_back(until, std::move(item));
  }
  void admit(FakeCampaign*, Item&& item, MonoTime) override { admitted.push_back(std::move(item)); }

  std::vector<Row> rows;
  std::vector<std::string> ids;  // of the rows
  std::vector<Item> queued, admitted;
  std::vector<std::pair<WallTime, Item>> parked;
};

class RulesGateTest : public ::testing::Test {
 protected:
  // The wall clock reads `wall` at the simulated clock's start.
  void make(WallTime wall, bool can_park = false) {
    options_.zones = zones();
    clock_.wall_base = wall;
    clock_.mono_base = start_;
    gate_.emplace(options_, host_, clock_, can_park, bytes_, totals_);
  }
  static TimeZoneTablePtr zones() {
    static const TimeZoneTablePtr table = TimeZoneTable::loadSystem();
    return table;
  }
  void setRules(const CampaignInfo& info) {
    c_.info = info;
    c_.stats.priority_class = gate_->setRules(c_.rules, c_.info);
  }
  // Campaign "c" quiet from 21:00 to 08:00 in `zone` (none: no zone of its own).
  void setQuietNights(const char* zone = "Etc/UTC") {
    CampaignInfo info;
    info.id = "c";
    info.quiet_hours = "21:00-08:00";
    if (zone != nullptr) info.time_zone = zone;
    setRules(info);
  }
  static Item item(std::string id, std::string recipient) {
    Item i;
    i.msg.id = std::move(id);
    i.msg.campaign = "c";
    i.msg.recipient = std::move(recipient);
    return i;
  }
  MonoTime at(WallTime w) const { return clock_.monoAt(w); }

  const MonoTime start_ = MonoTime{} + hours(1000);
  WorkerOptions options_;
  WallClock clock_;
  FakeHost host_;
  std::size_t bytes_ = 0;
  WorkerStats totals_;
  std::optional<Gate> gate_;
  FakeCampaign c_;
};

TEST_F(RulesGateTest, AQuietMessageWaitsInMemoryAndIsAdmittedAgainWhenTheWindowEnds) {
  make(utc(2024, 6, 1, 22));
  setQuietNights();
  Item i = item("m1", "r1");
  const std::size_t size = i.bytes();
  EXPECT_TRUE(gate_->holdForQuiet(&c_, i, start_));
  EXPECT_EQ(gate_->waiting(), 1u);
  EXPECT_EQ(c_.rules.quiet_waiting, 1u);
  EXPECT_EQ(bytes_, size) << "a message held here counts in the worker's bytes";
  EXPECT_EQ(gate_->nextDue(), utc(2024, 6, 2, 8));
  gate_->releaseWaiting(at(utc(2024, 6, 2, 7, 59, 59)));
  EXPECT_TRUE(host_.admitted.empty());
  gate_->releaseWaiting(at(utc(2024, 6, 2, 8)));
  ASSERT_EQ(host_.admitted.size(), 1u);
  EXPECT_EQ(host_.admitted[0].msg.id, "m1");
  EXPECT_FALSE(host_.admitted[0].waiting_quiet);
  EXPECT_EQ(gate_->waiting(), 0u);
  EXPECT_EQ(c_.rules.quiet_waiting, 0u);
  EXPECT_EQ(bytes_, 0u);
  EXPECT_EQ(gate_->nextDue(), std::nullopt);
  EXPECT_TRUE(host_.rows.empty());
}

TEST_F(RulesGateTest, AWaitLongerThanParkWaitAfterIsParkedWithItsTime) {
  make(utc(2024, 6, 1, 22), true);
  setQuietNights();
  Item i = item("m1", "r1");
  EXPECT_TRUE(gate_->holdForQuiet(&c_, i, start_));
  ASSERT_EQ(host_.parked.size(), 1u);
  EXPECT_EQ(host_.parked[0].first, utc(2024, 6, 2, 8));
  EXPECT_EQ(gate_->waiting(), 0u);
  EXPECT_EQ(bytes_, 0u) << "the host counts what it parks";
}

TEST_F(RulesGateTest, QuietHoursWithoutAZoneTableAreARejectedRow) {
  make(utc(2024, 6, 1, 12));
  options_.zones = nullptr;
  gate_.emplace(options_, host_, clock_, false, bytes_, totals_);
  setQuietNights(nullptr);
  Item i = item("m1", "r1");
  EXPECT_TRUE(gate_->holdForQuiet(&c_, i, start_));
  ASSERT_EQ(host_.rows.size(), 1u);
  EXPECT_EQ(host_.rows[0].status, DeliveryStatus::kRejected);
  EXPECT_THAT(host_.rows[0].reason, HasSubstr("no time zone table"));
}

TEST_F(RulesGateTest, ACappedMessageJoinsTheQueueOnlyOnceOneDecideClearedIt) {
  make(utc(2024, 6, 1, 12));
  CampaignInfo info;
  info.id = "c";
  info.frequency_cap = FrequencyCapRule{1, hours(24)};
  setRules(info);
  EXPECT_EQ(c_.stats.priority_class, "bulk") << "the default class";
  gate_->toQueue(&c_, item("m1", "r1"));
  gate_->toQueue(&c_, item("m2", "r1"));
  gate_->toQueue(&c_, item("m3", ""));
  EXPECT_TRUE(host_.queued.empty()) << "not before the store answered";
  EXPECT_EQ(gate_->unchecked(), 2u);
  ASSERT_EQ(host_.rows.size(), 1u);
  EXPECT_THAT(host_.rows[0].reason, HasSubstr("no recipient: campaign 'c' has a frequency cap (campaign:c)"));

  gate_->checkCaps(start_);
  EXPECT_EQ(totals_.cap_round_trips, 1u) << "one decide() for the batch";
  ASSERT_EQ(host_.queued.size(), 1u);
  EXPECT_EQ(host_.queued[0].msg.id, "m1");
  EXPECT_EQ(host_.queued[0].caps_counted, 1u) << "its count is a reservation it keeps";
  ASSERT_EQ(host_.rows.size(), 2u);
  EXPECT_EQ(host_.ids[1], "m2");
  EXPECT_EQ(host_.rows[1].status, DeliveryStatus::kSuppressed);
  EXPECT_EQ(host_.rows[1].reason, "suppressed: frequency cap campaign:c 1/1d, allowed at 2024-06-02T12:00:00Z");
  EXPECT_EQ(gate_->unchecked(), 0u);
  EXPECT_EQ(bytes_, 0u);
}

TEST_F(RulesGateTest, ADeferredMessageWaitsForItsCapAndACountGivenBackFreesTheSlot) {
  make(utc(2024, 6, 1, 12));
  CampaignInfo info;
  info.id = "c";
  info.frequency_cap = FrequencyCapRule{1, hours(24)};
  info.cap_policy = CapPolicy::kDefer;
  setRules(info);
  gate_->toQueue(&c_, item("m1", "r1"));
  gate_->toQueue(&c_, item("m2", "r1"));
  gate_->checkCaps(start_);
  ASSERT_EQ(host_.queued.size(), 1u);
  EXPECT_EQ(c_.stats.deferred, 1u);
  EXPECT_EQ(totals_.deferred, 1u);
  EXPECT_EQ(gate_->waiting(), 1u);
  EXPECT_EQ(c_.rules.quiet_waiting, 0u) << "waiting for a cap, not for quiet hours";
  EXPECT_EQ(gate_->nextDue(), utc(2024, 6, 2, 12));

  // m1 ends without being sent: its count goes back at the next flush.
  gate_->giveBack(host_.queued[0], c_.rules);
  gate_->flushGiveBacks(start_ + seconds(1));
  EXPECT_EQ(totals_.cap_round_trips, 2u) << "one release() for what was given back";
  gate_->toQueue(&c_, item("m3", "r1"));
  gate_->checkCaps(start_ + seconds(2));
  ASSERT_EQ(host_.queued.size(), 2u);
  EXPECT_EQ(host_.queued[1].msg.id, "m3") << "the slot m1 gave back";

  gate_->releaseWaiting(at(utc(2024, 6, 2, 12)));
  ASSERT_EQ(host_.admitted.size(), 1u);
  EXPECT_EQ(host_.admitted[0].msg.id, "m2");
  EXPECT_EQ(host_.admitted[0].caps_counted, 0u) << "asked again: its slot was not held while it waited";
}

TEST_F(RulesGateTest, DroppedMessagesLeaveTheCountsAndTheBytes) {
  make(utc(2024, 6, 1, 12));
  CampaignInfo info;
  info.id = "c";
  info.frequency_cap = FrequencyCapRule{1, hours(24)};
  setRules(info);
  gate_->toQueue(&c_, item("m1", "r1"));
  gate_->toQueue(&c_, item("m2", "r2"));
  gate_->dropHeld(&c_, [](Item& i) { return i.msg.id == "m1"; });
  EXPECT_EQ(gate_->unchecked(), 1u);
  EXPECT_EQ(bytes_, c_.rules.unchecked.front().bytes());
  gate_->dropHeld(&c_, [](Item&) { return true; });
  EXPECT_EQ(gate_->unchecked(), 0u);
  EXPECT_EQ(bytes_, 0u);
  gate_->checkCaps(start_);
  EXPECT_EQ(totals_.cap_round_trips, 0u) << "nothing left to ask";
}

}  // namespace
}  // namespace pacer::delivery_detail
