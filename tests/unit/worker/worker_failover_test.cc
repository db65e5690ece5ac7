// WorkerCore's failover (docs/routes.md) on a simulated clock: a campaign's
// traffic moves to the next provider of its list while the first cannot take
// it (reported down, or its circuit breaker open), comes back when it can,
// each provider's rate holds in every window, and every ledger row names the
// provider that carried its message.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "pacer/error.h"
#include "pacer/worker.h"
#include "support/worker_fixture.h"

namespace pacer {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;

class WorkerFailoverTest : public test_support::WorkerCoreFixture {
 protected:
  void make(WorkerOptions o = {}) {
    o.ledger_flush_interval = milliseconds(10);
    makeCore(o);
    core_->upsertProvider(ProviderInfo{"sms-a", RateLimit{100, 5}}, clock_.now());
    core_->upsertProvider(ProviderInfo{"sms-b", RateLimit{50, 5}}, clock_.now());
    core_->upsertProvider(ProviderInfo{"sms-c", RateLimit{50, 5}}, clock_.now());
  }
};

// Down for 3 s: the traffic goes to sms-b at sms-b's rate, and back to
// sms-a the step after it is up again; no window of either is over its
// rate and burst, each message has exactly one row, naming its carrier.
TEST_F(WorkerFailoverTest, TrafficMovesToTheNextProviderAndBack) {
  sink_.instant = true;
  make();
  core_->upsertCampaign(campaignOn("otp", "sms-a", {"sms-b"}), clock_.now());
  for (int i = 0; i < 1000; ++i) core_->offer(rawMessage(i, "otp"), clock_.now());
  const MonoTime t0 = clock_.now();
  runAndFlush(seconds(2));
  EXPECT_EQ(statsOf("otp").route, "sms-a");
  EXPECT_EQ(sentVia("sms-b", t0, clock_.now()), 0u);
  core_->setProviderDown("sms-a", "binds failing", clock_.now());
  const MonoTime down = clock_.now();
  runAndFlush(seconds(3));
  EXPECT_EQ(statsOf("otp").route, "sms-b");
  EXPECT_THAT(statsOf("otp").route_reason, HasSubstr("sms-a: binds failing"));
  EXPECT_EQ(sentVia("sms-a", down + milliseconds(10), clock_.now()), 0u) << "nothing to the provider that is down";
  // sms-b's rate, 50/s, from the step after the change (its burst at most on top).
  const std::size_t on_b = sentVia("sms-b", down, clock_.now());
  EXPECT_GE(on_b, 140u);
  EXPECT_LE(on_b, 3 * 50u + 5u);
  core_->setProviderDown("sms-a", std::nullopt, clock_.now());
  const MonoTime up = clock_.now();
  runAndFlush(seconds(2));
  EXPECT_EQ(statsOf("otp").route, "sms-a");
  EXPECT_EQ(statsOf("otp").route_reason, "");
  EXPECT_EQ(statsOf("otp").route_changes, 2u);
  EXPECT_EQ(sentVia("sms-b", up + milliseconds(10), clock_.now()), 0u);
  EXPECT_GE(sentVia("sms-a", up, clock_.now()), 190u);
  EXPECT_LE(maxPerSecond("sms-a"), 100u + 5u);
  EXPECT_LE(maxPerSecond("sms-b"), 50u + 5u);
  // One row per message handed over, naming the provider it went to.
  std::map<std::string, std::string> carrier;
  for (const Message& m : sink_.submitted) EXPECT_TRUE(carrier.emplace(m.id, m.provider).second) << m.id << " twice";
  EXPECT_EQ(ledger_.byId.size(), carrier.size());
  for (const auto& [id, row] : ledger_.byId) {
    EXPECT_EQ(row.status, DeliveryStatus::kSent);
    EXPECT_EQ(row.provider, carrier[id]) << id;
  }
}

// A fault answer counts against the provider that gave it, even when the
// campaign has moved on by then; the retry goes to the provider in use.
TEST_F(WorkerFailoverTest, AnAnswerBelongsToTheProviderOfItsAttempt) {
  WorkerOptions o;
  o.retry.base_delay = milliseconds(20);
  make(o);
  core_->upsertCampaign(campaignOn("otp", "sms-a", {"sms-b"}), clock_.now());
  sink_.instant = false;  // answered when the test says
  sink_.answer = [](const Message& m) {
    SendResult r;
    if (m.provider == "sms-a") r.outcome = SendOutcome::kFault;
    return r;
  };
  for (int i = 0; i < 5; ++i) core_->offer(rawMessage(i, "otp"), clock_.now());
  runAndFlush(milliseconds(50));  // handed to sms-a, not answered yet
  ASSERT_EQ(sink_.submitted.size(), 5u);
  core_->setProviderDown("sms-a", "no bound session", clock_.now());
  runAndFlush(milliseconds(10));
  sink_.finishAll();  // sms-a's faults arrive after the move
  runAndFlush(milliseconds(500));
  sink_.finishAll();
  runAndFlush(milliseconds(50));
  ASSERT_EQ(ledger_.byId.size(), 5u);
  for (const auto& [id, row] : ledger_.byId) {
    EXPECT_EQ(row.status, DeliveryStatus::kSent) << id;
    EXPECT_EQ(row.provider, "sms-b") << id;
    EXPECT_EQ(row.attempts, 2) << id;
  }
  for (const ProviderStats& p : core_->providerStats(clock_.now()))
    EXPECT_FALSE(p.circuit_open) << p.id << ": five faults are below the breaker's minimum";
}

// Sustained faults open sms-a's breaker: the campaign goes to sms-b for the
// cooldown, and back to sms-a (the probe) when the breaker half-opens.
TEST_F(WorkerFailoverTest, AnOpenBreakerFailsOverUntilItHalfOpens) {
  WorkerOptions o;
  o.retry.base_delay = milliseconds(20);
  o.retry.max_attempts = 50;
  o.breaker.cooldown = seconds(2);
  make(o);
  core_->upsertCampaign(campaignOn("otp", "sms-a", {"sms-b"}), clock_.now());
  bool a_broken = true;
  sink_.instant = true;
  sink_.answer = [&](const Message& m) {
    SendResult r;
    if (m.provider == "sms-a" && a_broken) r.outcome = SendOutcome::kFault;
    return r;
  };
  for (int i = 0; i < 2000; ++i) core_->offer(rawMessage(i, "otp"), clock_.now());
  runAndFlush(seconds(1));
  EXPECT_EQ(statsOf("otp").route, "sms-b");
  EXPECT_THAT(statsOf("otp").route_reason, HasSubstr("sms-a: circuit breaker open"));
  a_broken = false;
  runAndFlush(seconds(3));
  EXPECT_EQ(statsOf("otp").route, "sms-a");
  EXPECT_GE(statsOf("otp").route_changes, 2u);
  EXPECT_LE(maxPerSecond("sms-a"), 100u + 5u);
  EXPECT_LE(maxPerSecond("sms-b"), 50u + 5u);
  for (const auto& [id, row] : ledger_.byId) EXPECT_EQ(row.status, DeliveryStatus::kSent) << id;
}

// The second in line down: the third takes the traffic. Every provider
// down: the traffic goes to the first, as it would without a list (an SMPP
// sink holds it until a bind or its response timeout), and the reason says so.
TEST_F(WorkerFailoverTest, DownProvidersAreSkippedAndWithNoneUsableTheFirstTakesIt) {
  sink_.instant = true;
  make();
  core_->upsertCampaign(campaignOn("otp", "sms-a", {"sms-b", "sms-c"}), clock_.now());
  core_->setProviderDown("sms-a", "binds failing", clock_.now());
  core_->setProviderDown("sms-b", "no bound session", clock_.now());
  for (int i = 0; i < 10; ++i) core_->offer(rawMessage(i, "otp"), clock_.now());
  runAndFlush(milliseconds(200));
  EXPECT_EQ(statsOf("otp").route, "sms-c");
  EXPECT_EQ(sentVia("sms-c", MonoTime{}, clock_.now()), 10u);
  core_->setProviderDown("sms-c", "binds failing", clock_.now());
  for (int i = 10; i < 20; ++i) core_->offer(rawMessage(i, "otp"), clock_.now());
  runAndFlush(milliseconds(200));
  EXPECT_EQ(statsOf("otp").route, "sms-a");
  EXPECT_THAT(statsOf("otp").route_reason, HasSubstr("no provider usable"));
  ASSERT_EQ(sink_.submitted.size(), 20u);
  for (std::size_t i = 10; i < 20; ++i) EXPECT_EQ(sink_.submitted[i].provider, "sms-a");
  core_->setProviderDown("sms-a", std::nullopt, clock_.now());
  runAndFlush(milliseconds(20));
  EXPECT_EQ(statsOf("otp").route_reason, "");
}

// Without a failover list there is no route to choose: a refresh of the
// campaign while its provider is down names no route reason (the console's
// "limited by" then names the provider's own state, not failover).
TEST_F(WorkerFailoverTest, WithoutAListAProvidersOutageIsNoRouteReason) {
  sink_.instant = true;
  make();
  core_->upsertCampaign(campaignOn("otp", "sms-a", {}), clock_.now());
  core_->setProviderDown("sms-a", "binds failing", clock_.now());
  core_->upsertCampaign(campaignOn("otp", "sms-a", {}), clock_.now());  // the next refresh of its row
  for (int i = 0; i < 5; ++i) core_->offer(rawMessage(i, "otp"), clock_.now());
  runAndFlush(milliseconds(100));
  EXPECT_EQ(statsOf("otp").route, "sms-a");
  EXPECT_EQ(statsOf("otp").route_reason, "");
}

// A list the worker cannot follow is refused before any change: a provider
// of another protocol, a duplicate, the campaign's own provider.
TEST_F(WorkerFailoverTest, AListOfAnotherProtocolOrWithDuplicatesIsRefused) {
  WorkerOptions o;
  o.family_of = [](const std::string& id) { return id == "push" ? std::string("apns") : std::string("smpp"); };
  make(o);
  EXPECT_THROW(core_->upsertCampaign(campaignOn("otp", "sms-a", {"push"}), clock_.now()), InvalidError);
  EXPECT_THROW(core_->upsertCampaign(campaignOn("otp", "sms-a", {"sms-b", "sms-b"}), clock_.now()), InvalidError);
  EXPECT_THROW(core_->upsertCampaign(campaignOn("otp", "sms-a", {"sms-a"}), clock_.now()), InvalidError);
  EXPECT_FALSE(core_->knowsCampaign("otp"));
  EXPECT_NO_THROW(core_->upsertCampaign(campaignOn("otp", "sms-a", {"sms-b", "sms-c"}), clock_.now()));
}

}  // namespace
}  // namespace pacer
