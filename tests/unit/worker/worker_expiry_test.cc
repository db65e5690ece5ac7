// WorkerCore's message deadlines (docs/expiry.md) on a simulated clock: a
// message past its deadline gets an `expired` row, is never handed to the
// sink, and leaves the campaign's tokens to the messages behind it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "pacer/worker.h"
#include "support/worker_fixture.h"

namespace pacer {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;

// 2026-11-26T12:00:00Z, in epoch milliseconds.
constexpr std::int64_t kWall0 = 1'795'694'400'000;

RawMessage raw(std::int64_t offset, std::string campaign, std::optional<std::string> expires_at = std::nullopt) {
  RawMessage r;
  r.position = Position{"t", 0, offset};
  r.key = std::move(campaign);
  r.headers.emplace_back("message-id", "m" + std::to_string(offset));
  if (expires_at) r.headers.emplace_back("pacer-expires-at", *expires_at);
  r.value = "p";
  return r;
}

CampaignInfo campaign(std::string id, double rate, double burst, std::int64_t ttl_ms = 0) {
  CampaignInfo c;
  c.id = std::move(id);
  c.limit = RateLimit{rate, burst};
  c.default_ttl_ms = ttl_ms;
  return c;
}

class WorkerExpiryTest : public test_support::WorkerCoreFixture {
 protected:
  // The daemon's wall clock, moving with the simulated one from kWall0.
  void make(WorkerOptions o = {}, bool with_parking = false) {
    o.ledger_flush_interval = milliseconds(10);
    makeCore(o, with_parking, WallTime{milliseconds{kWall0}}, Wall::kFollow);
  }
  std::int64_t wallMs() const { return wall().time_since_epoch().count(); }
  std::int64_t sentAtMs(std::size_t i) const { return sent_at_.at(i).time_since_epoch().count(); }
  std::string in(std::int64_t ms) const { return std::to_string(wallMs() + ms); }
  std::size_t count(DeliveryStatus s) const {
    std::size_t n = 0;
    for (const auto& [id, r] : ledger_.byId) n += r.status == s ? 1 : 0;
    return n;
  }
};

TEST_F(WorkerExpiryTest, APausedCampaignsMessageExpiresWithoutBeingSentOrSpendingItsToken) {
  make();
  // One token, and the next one in 1000 s: whoever spends it decides who goes.
  CampaignInfo c = campaign("otp", 0.001, 1);
  c.state = CampaignState::kPaused;
  core_->upsertCampaign(c, clock_.now());
  core_->offer(raw(0, "otp", in(2000)), clock_.now());
  run(milliseconds(1900));
  EXPECT_TRUE(ledger_.byId.find("m0") == ledger_.byId.end()) << "before its deadline it waits";
  run(milliseconds(500));
  ASSERT_EQ(ledger_.byId.count("m0"), 1u) << "expired while paused, not when resumed";
  const DeliveryRecord& r = ledger_.byId.at("m0");
  EXPECT_EQ(r.status, DeliveryStatus::kExpired);
  EXPECT_THAT(r.reason, HasSubstr("deadline 2026-11-26T12:00:02.000Z"));
  EXPECT_EQ(r.attempts, 0);
  EXPECT_EQ(core_->committable(TopicPartition{"t", 0}), 1) << "an expired message is finished";
  EXPECT_EQ(statsOf("otp").expired, 1u);
  core_->offer(raw(1, "otp"), clock_.now());
  c.state = CampaignState::kActive;
  core_->upsertCampaign(c, clock_.now());
  run(milliseconds(50));
  EXPECT_TRUE(sink_.submitted.size() == 1 && sink_.submitted[0].id == "m1")
      << "the expired message left the one token to the next message";
}

TEST_F(WorkerExpiryTest, TheCampaignsDefaultLifetimeExpiresTheBacklogAndItsTokensGoToNewMessages) {
  make();
  core_->upsertCampaign(campaign("otp", 1, 1, 1500), clock_.now());
  for (int i = 0; i < 5; ++i) core_->offer(raw(i, "otp"), clock_.now());
  run(milliseconds(1900));
  // m0 at once, m1 a second later; m2..m4 outlive their 1.5 s.
  ASSERT_EQ(sink_.submitted.size(), 2u);
  EXPECT_EQ(count(DeliveryStatus::kExpired), 3u);
  EXPECT_EQ(ledger_.byId.at("m4").status, DeliveryStatus::kExpired);
  EXPECT_EQ(sink_.submitted[0].expires_at_ms, kWall0 + 1500) << "the deadline travels with the message";
  core_->offer(raw(5, "otp"), clock_.now());
  run(milliseconds(200));
  ASSERT_EQ(sink_.submitted.size(), 3u) << "the token due at 2 s was not spent on an expired message";
  EXPECT_LE(sentAtMs(sent_at_.size() - 1), kWall0 + 2005);
}

TEST_F(WorkerExpiryTest, TheEarlierOfTheHeaderAndTheCampaignLifetimeIsTheDeadline) {
  make();
  core_->upsertCampaign(campaign("a", 1000, 10, 60'000), clock_.now());
  core_->offer(raw(0, "a", in(5'000)), clock_.now());
  core_->offer(raw(1, "a", in(120'000)), clock_.now());
  core_->offer(raw(2, "a"), clock_.now());
  core_->offer(raw(3, "a", "2026-11-26T12:00:30Z"), clock_.now());
  run(milliseconds(20));
  ASSERT_EQ(sink_.submitted.size(), 4u);
  EXPECT_EQ(sink_.submitted[0].expires_at_ms, kWall0 + 5'000) << "the header's, earlier";
  EXPECT_EQ(sink_.submitted[1].expires_at_ms, kWall0 + 60'000) << "the campaign's, earlier";
  EXPECT_EQ(sink_.submitted[2].expires_at_ms, kWall0 + 60'000) << "the campaign's alone";
  EXPECT_EQ(sink_.submitted[3].expires_at_ms, kWall0 + 30'000) << "RFC 3339";
}

TEST_F(WorkerExpiryTest, AMessageAlreadyPastItsDeadlineWhenReadIsExpiredAtOnce) {
  make();
  core_->upsertCampaign(campaign("a", 1000, 10), clock_.now());
  core_->offer(raw(0, "a", in(-1)), clock_.now());
  core_->offer(raw(1, "a", "2026-11-26T11:59:59.999Z"), clock_.now());
  run(milliseconds(20));
  EXPECT_TRUE(sink_.submitted.empty());
  EXPECT_EQ(count(DeliveryStatus::kExpired), 2u);
}

TEST_F(WorkerExpiryTest, AMessageWaitingForARetryExpiresInsteadOfBeingTriedAgain) {
  WorkerOptions o;
  o.retry.base_delay = seconds(2);
  o.retry.jitter = 0;
  make(o);
  sink_.answer = [](const Message&) {
    SendResult r;
    r.outcome = SendOutcome::kFault;
    r.status = 500;
    r.reason = "HTTP 500";
    return r;
  };
  core_->upsertCampaign(campaign("a", 1000, 10), clock_.now());
  core_->offer(raw(0, "a", in(1000)), clock_.now());
  run(milliseconds(1500));
  EXPECT_EQ(sink_.submitted.size(), 1u);
  ASSERT_EQ(ledger_.byId.count("m0"), 1u) << "expired during its backoff";
  EXPECT_EQ(ledger_.byId.at("m0").status, DeliveryStatus::kExpired);
  EXPECT_EQ(ledger_.byId.at("m0").attempts, 1);
  run(seconds(3));
  EXPECT_EQ(sink_.submitted.size(), 1u) << "never tried again";
}

TEST_F(WorkerExpiryTest, TheCheckAtSendingCatchesWhatTheScanHasNotAndPassesTheGrantOn) {
  WorkerOptions o;
  o.expiry_scan_interval = std::chrono::hours(1);  // only the check at the moment of sending
  make(o);
  core_->upsertCampaign(campaign("a", 1, 1), clock_.now());
  core_->offer(raw(0, "a"), clock_.now());
  run(milliseconds(10));
  ASSERT_EQ(sink_.submitted.size(), 1u);
  core_->offer(raw(1, "a", in(500)), clock_.now());
  core_->offer(raw(2, "a"), clock_.now());
  run(milliseconds(1100));
  ASSERT_EQ(ledger_.byId.count("m1"), 1u);
  EXPECT_EQ(ledger_.byId.at("m1").status, DeliveryStatus::kExpired);
  ASSERT_EQ(sink_.submitted.size(), 2u) << "m2 took the grant m1 could not use, at 1 s, not 2 s";
  EXPECT_EQ(sink_.submitted[1].id, "m2");
}

TEST_F(WorkerExpiryTest, AParkedMessageKeepsItsDeadlineAndExpiresWhenClaimed) {
  WorkerOptions o;
  o.park_min_keep = 2;
  o.park_keep_for = milliseconds(1);
  make(o, true);
  core_->upsertCampaign(campaign("slow", 1, 1), clock_.now());
  for (int i = 0; i < 6; ++i) core_->offer(raw(i, "slow", in(2500)), clock_.now());
  run(milliseconds(500));
  EXPECT_GT(parking_.size(), 0u) << "the excess is parked";
  run(seconds(8));
  EXPECT_LE(sink_.submitted.size(), 3u) << "at 1/s, only what fell due before 2.5 s";
  EXPECT_EQ(count(DeliveryStatus::kExpired) + sink_.submitted.size(), 6u) << "every message has its outcome";
  EXPECT_GE(count(DeliveryStatus::kExpired), 3u);
  for (const Message& m : sink_.submitted) EXPECT_EQ(m.expires_at_ms, kWall0 + 2500);
}

TEST_F(WorkerExpiryTest, ADefaultLifetimeOutsideItsBoundsIsARowProblem) {
  CampaignInfo c = campaign("a", 1, 1, 10);
  ASSERT_TRUE(rowProblem(c).has_value());
  EXPECT_THAT(*rowProblem(c), HasSubstr("default_ttl_ms"));
  c.default_ttl_ms = 31LL * 24 * 3600 * 1000;
  EXPECT_TRUE(rowProblem(c).has_value());
  c.default_ttl_ms = 300'000;
  EXPECT_FALSE(rowProblem(c).has_value());
}

}  // namespace
}  // namespace pacer
