// WorkerCore and push answers at their real scope: a throttle of one device
// token defers that message only; the dead-token guard keeps a broken
// configuration from marking an audience dead. Simulated clock, fake sink.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "pacer/quota.h"
#include "pacer/worker.h"
#include "support/fakes.h"
#include "support/worker_fixture.h"

namespace pacer {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

using test_support::FakeLedger;
using test_support::FakeSink;
using test_support::QuotaWorker;

const std::string kHot(64, 'f');  // the device token APNs says gets too many notifications

std::string tokenFor(std::int64_t offset) {
  std::string t = std::to_string(offset);
  return std::string(64 - t.size(), 'a') + t;
}

RawMessage raw(std::int64_t offset, std::string recipient) {
  RawMessage r;
  r.position = Position{"t", 0, offset};
  r.key = "a";
  r.headers.emplace_back("message-id", "m" + std::to_string(offset));
  r.headers.emplace_back("recipient", std::move(recipient));
  r.value = R"({"aps":{"alert":"hi"}})";
  return r;
}

SendResult apns429TooManyRequests() {
  SendResult r;
  r.outcome = SendOutcome::kThrottled;
  r.status = 429;
  r.reason = "APNs 429 TooManyRequests";
  r.scope = AnswerScope::kRecipient;
  return r;
}

class WorkerPushTest : public ::testing::Test {
 protected:
  void make(WorkerOptions o) {
    o.ledger_flush_interval = milliseconds(50);
    o.seed = 11;
    core_ = std::make_unique<WorkerCore>(o, ledger_, sink_, nullptr, clock_.now());
    core_->upsertProvider(ProviderInfo{"apns", RateLimit{100, 5}}, clock_.now());
    CampaignInfo c;
    c.id = "a";
    c.provider = "apns";
    core_->upsertCampaign(c, clock_.now());
  }
  // Steps every 5 ms for `d`; returns the sends per whole simulated second.
  std::vector<std::size_t> run(Nanos d) {
    std::vector<std::size_t> per_second;
    const MonoTime end = clock_.now() + d;
    std::size_t before = sink_.submitted.size();
    for (MonoTime next = clock_.now() + seconds(1); clock_.now() < end;) {
      clock_.advance(milliseconds(5));
      core_->step(clock_.now());
      EXPECT_FALSE(core_->providerStats(clock_.now()).at(0).paused && expect_unpaused_) << "paused at a token's 429";
      if (clock_.now() >= next) {
        per_second.push_back(sink_.submitted.size() - before);
        before = sink_.submitted.size();
        next += seconds(1);
      }
    }
    return per_second;
  }
  // make() with a 200 ms retry base, APNs answering TooManyRequests to the
  // first attempt of each message in `ids`.
  void makeRefusingOnce(std::set<std::string> ids) {
    WorkerOptions o;
    o.retry.base_delay = milliseconds(200);
    make(o);
    sink_.answer = [this, ids = std::move(ids)](const Message& m) {
      const bool refused = ids.count(m.id) > 0 && ++attempts_[m.id] == 1;
      return refused ? apns429TooManyRequests() : SendResult{};
    };
  }
  std::size_t sendsTo(const std::string& token) const {
    return static_cast<std::size_t>(std::count_if(sink_.submitted.begin(), sink_.submitted.end(),
                                                  [&](const Message& m) { return m.recipient == token; }));
  }

  SimulatedTimeSource clock_{monoAt(seconds(1000))};
  FakeLedger ledger_;
  FakeSink sink_{1000};
  std::unique_ptr<WorkerCore> core_;
  bool expect_unpaused_ = true;
  std::map<std::string, int> attempts_;  // per message id, for makeRefusingOnce
};

// One hot token among 990 others, at a provider rate of 100/s: APNs answers
// 429 TooManyRequests to the first attempt of each of its 10 messages, and to
// the first four of one of them. The provider is never paused, every
// simulated second sends its 100, and only those messages wait.
TEST_F(WorkerPushTest, APerTokenThrottleDefersOnlyThatMessage) {
  WorkerOptions o;
  o.retry.base_delay = milliseconds(200);
  o.retry.jitter = 0.5;
  make(o);
  std::map<std::string, int> hot_attempts;  // per message: m0 is throttled 4 times, the other hot ones once
  sink_.answer = [&](const Message& m) {
    if (m.recipient == kHot && ++hot_attempts[m.id] <= (m.id == "m0" ? 4 : 1)) return apns429TooManyRequests();
    return SendResult{};
  };
  for (std::int64_t i = 0; i < 1000; ++i) core_->offer(raw(i, i % 100 == 0 ? kHot : tokenFor(i)), clock_.now());
  const std::vector<std::size_t> per_second = run(seconds(9));
  ASSERT_EQ(per_second.size(), 9u);
  for (std::size_t s = 0; s < per_second.size(); ++s) {
    EXPECT_GE(per_second[s], 98u) << "second " << s << ": the other tokens keep flowing";
    EXPECT_LE(per_second[s], 106u) << "second " << s << ": never over the rate (100/s, burst 5)";
  }
  run(seconds(2));
  const ProviderStats p = core_->providerStats(clock_.now()).at(0);
  EXPECT_EQ(p.throttled, 0u) << "not a provider throttle";
  EXPECT_EQ(p.recipient_throttled, 13u);
  ASSERT_TRUE(p.effective);
  EXPECT_DOUBLE_EQ(*p.effective, 100.0) << "the adaptive rate did not fall";
  EXPECT_EQ(ledger_.count(DeliveryStatus::kSent), 1000u) << "nothing lost";
  EXPECT_EQ(ledger_.byId.at("m0").attempts, 5);
  EXPECT_EQ(ledger_.byId.at("m100").attempts, 2);
  EXPECT_EQ(sendsTo(kHot), 23u) << "10 messages to the hot token, 13 retries";
}

// TooManyRequests for three different tokens within a second is the
// provider's window speaking in the per-token answer: the third and every one
// after it while the crowd lasts pause and slow the provider. Three tokens
// each throttled more than 5 s apart stay each token's own (below).
TEST_F(WorkerPushTest, ACrowdOfTokensThrottledWithinASecondIsTheProvidersThrottle) {
  // m10, m11, m12 (three tokens) are refused once each, within 30 ms at 100/s.
  makeRefusingOnce({"m10", "m11", "m12"});
  for (std::int64_t i = 0; i < 300; ++i) core_->offer(raw(i, tokenFor(i)), clock_.now());
  expect_unpaused_ = false;
  run(seconds(4));
  const ProviderStats p = core_->providerStats(clock_.now()).at(0);
  EXPECT_EQ(p.recipient_throttled, 2u) << "the first two were each token's own";
  EXPECT_EQ(p.throttled, 1u) << "the third was the provider's";
  ASSERT_TRUE(p.effective);
  EXPECT_LT(*p.effective, 100.0) << "a provider throttle the judge acted on";
  run(seconds(3));
  EXPECT_EQ(ledger_.count(DeliveryStatus::kSent), 300u) << "nothing lost";
}

// Two workers sharing an in-process quota, each with 300 messages to
// distinct tokens of one APNs provider at 100/s.
struct TwoPushWorkers {
  QuotaBackendPtr shared = makeLocalQuotaBackend();
  MonoTime t0 = monoAt(seconds(1000));
  std::vector<std::unique_ptr<QuotaWorker>> ws;
  std::map<std::string, int> attempts[2];
  TwoPushWorkers() {
    for (int w = 0; w < 2; ++w) {
      WorkerOptions o;
      o.retry.base_delay = milliseconds(200);
      ws.push_back(std::make_unique<QuotaWorker>(shared.get(), static_cast<std::uint64_t>(w) + 1, t0, 1000, o));
      WorkerCore& core = *ws.back()->core;
      core.upsertProvider(ProviderInfo{"apns", RateLimit{100, 5}}, t0);
      CampaignInfo c;
      c.id = "a";
      c.provider = "apns";
      core.upsertCampaign(c, t0);
      for (std::int64_t i = 0; i < 300; ++i) core.offer(raw(i, tokenFor(1000 * w + i)), t0);
    }
  }
  // Worker w answers TooManyRequests to the first `times` attempts of message `id`.
  void refuse(int w, std::map<std::string, int> times) {
    ws[w]->sink.answer = [this, w, times](const Message& m) {
      auto it = times.find(m.id);
      const bool refused = it != times.end() && ++attempts[w][m.id] <= it->second;
      return refused ? apns429TooManyRequests() : SendResult{};
    };
  }
  void run(int secs) {
    for (int us = 0; us < secs * 1'000'000; us += 2500)
      ws[us / 2500 % 2]->core->step(t0 + std::chrono::microseconds(us));
  }
  ProviderStats stats(int w, int secs) { return ws[w]->core->providerStats(t0 + seconds(secs)).at(0); }
  std::size_t sent() const {
    return ws[0]->ledger.count(DeliveryStatus::kSent) + ws[1]->ledger.count(DeliveryStatus::kSent);
  }
};

// The crowd counted over every worker: two tokens refused at one worker and
// a third at the other within a second, none of them three at one, are the
// provider's window at the third (the quota sums each worker's count). A
// meter knows its second once it has watched one whole: the refusals come
// about 2 s in, the third about 600 ms after the first two.
TEST(WorkerPushCrowd, ACrowdSpreadOverTwoWorkersIsTheProvidersThrottle) {
  TwoPushWorkers two;
  two.refuse(0, {{"m100", 1}, {"m101", 1}});
  two.refuse(1, {{"m130", 1}});
  two.run(8);
  EXPECT_EQ(two.stats(0, 8).recipient_throttled, 2u) << "two at one worker stay the tokens' own";
  EXPECT_EQ(two.stats(1, 8).recipient_throttled, 0u);
  EXPECT_EQ(two.stats(1, 8).throttled, 1u) << "the third, at the other worker, is the provider's";
  EXPECT_EQ(two.sent(), 600u) << "nothing lost";
}

// One hot token refused at each of its quick retries counts once a second
// in the workers' sum: with one more token at the other worker, no crowd.
TEST(WorkerPushCrowd, OneHotTokensQuickRetriesAreNotACrowd) {
  TwoPushWorkers two;
  two.refuse(0, {{"m100", 4}});
  two.refuse(1, {{"m130", 1}});
  two.run(8);
  EXPECT_GE(two.stats(0, 8).recipient_throttled, 3u);
  EXPECT_EQ(two.stats(0, 8).throttled, 0u);
  EXPECT_EQ(two.stats(1, 8).recipient_throttled, 1u) << "two tokens a second are not three";
  EXPECT_EQ(two.stats(1, 8).throttled, 0u);
  EXPECT_EQ(two.sent(), 600u) << "nothing lost";
}

// Three tokens refused once each, 2 s apart at 100/s (m10, m210, m410):
// never three in one second, but three within the crowd's window (5 s), as
// a probe touching the provider's window refuses a token or two a second.
// The third is the provider's.
TEST_F(WorkerPushTest, TokensThrottledSecondsApartAreACrowdWithinTheWindow) {
  makeRefusingOnce({"m10", "m210", "m410"});
  for (std::int64_t i = 0; i < 600; ++i) core_->offer(raw(i, tokenFor(i)), clock_.now());
  expect_unpaused_ = false;
  run(seconds(8));
  const ProviderStats p = core_->providerStats(clock_.now()).at(0);
  EXPECT_EQ(p.recipient_throttled, 2u);
  EXPECT_EQ(p.throttled, 1u) << "the third within 5 s is the provider's";
  EXPECT_EQ(ledger_.count(DeliveryStatus::kSent), 600u) << "nothing lost";
}

// The same, 5.5-6 s apart (m10, m600, m1150): each stays its own.
TEST_F(WorkerPushTest, TokensThrottledMoreThanTheWindowApartStayTheirOwn) {
  makeRefusingOnce({"m10", "m600", "m1150"});
  for (std::int64_t i = 0; i < 1200; ++i) core_->offer(raw(i, tokenFor(i)), clock_.now());
  run(seconds(14));
  const ProviderStats p = core_->providerStats(clock_.now()).at(0);
  EXPECT_EQ(p.recipient_throttled, 3u);
  EXPECT_EQ(p.throttled, 0u);
  ASSERT_TRUE(p.effective);
  EXPECT_DOUBLE_EQ(*p.effective, 100.0);
  EXPECT_EQ(ledger_.count(DeliveryStatus::kSent), 1200u);
}

// The same token throttled on every attempt: the message gives up within the
// retry policy (max_throttled) with a failed row saying why; the others go.
TEST_F(WorkerPushTest, ATokenThrottledForeverFailsWithTheReason) {
  WorkerOptions o;
  o.retry.base_delay = milliseconds(100);
  o.retry.max_delay = seconds(1);
  o.retry.max_throttled = 6;
  make(o);
  sink_.answer = [&](const Message& m) { return m.recipient == kHot ? apns429TooManyRequests() : SendResult{}; };
  for (std::int64_t i = 0; i < 300; ++i) core_->offer(raw(i, i == 7 ? kHot : tokenFor(i)), clock_.now());
  run(seconds(10));
  const DeliveryRecord& row = ledger_.byId.at("m7");
  EXPECT_EQ(row.status, DeliveryStatus::kFailed);
  EXPECT_EQ(row.attempts, 6);
  EXPECT_EQ(row.reason, "gave up after 6 attempts (6 throttled); last: APNs 429 TooManyRequests");
  EXPECT_EQ(ledger_.count(DeliveryStatus::kSent), 299u);
  EXPECT_EQ(core_->committable(TopicPartition{"t", 0}), 300) << "its outcome is in the ledger";
}

// A wrong topic: APNs calls every token bad. The guard records only the first
// few as dead, pauses the provider, and every other message fails with a
// reason naming the guard: nothing more reaches the export.
TEST_F(WorkerPushTest, TheDeadTokenGuardHoldsAnAudienceThatIsAllDead) {
  WorkerOptions o;
  o.dead_token_guard.pause = seconds(5);
  make(o);
  sink_.answer = [](const Message&) {
    SendResult r;
    r.outcome = SendOutcome::kInvalidToken;
    r.status = 400;
    r.reason = "APNs 400 BadDeviceToken";
    return r;
  };
  for (std::int64_t i = 0; i < 400; ++i) core_->offer(raw(i, tokenFor(i)), clock_.now());
  expect_unpaused_ = false;
  run(seconds(1));
  ProviderStats p = core_->providerStats(clock_.now()).at(0);
  EXPECT_TRUE(p.dead_token_guard);
  EXPECT_TRUE(p.paused) << "the guard pauses the provider";
  EXPECT_EQ(p.dead_token_trips, 1u);
  EXPECT_EQ(ledger_.count(DeliveryStatus::kInvalidToken), 16u) << "only what came before it could judge";
  const std::size_t sent_at_trip = sink_.submitted.size();
  run(seconds(4));
  EXPECT_EQ(sink_.submitted.size(), sent_at_trip) << "nothing goes during the pause";
  run(seconds(60));
  EXPECT_EQ(ledger_.count(DeliveryStatus::kInvalidToken), 16u);
  EXPECT_EQ(ledger_.count(DeliveryStatus::kFailed) + 16u, sink_.submitted.size());
  const DeliveryRecord& held = ledger_.byId.at("m20");
  EXPECT_EQ(held.status, DeliveryStatus::kFailed);
  EXPECT_EQ(held.reason.rfind("dead-token guard held: APNs 400 BadDeviceToken; 100% of ", 0), 0u) << held.reason;
  EXPECT_TRUE(held.token.empty()) << "no token for the export";
  p = core_->providerStats(clock_.now()).at(0);
  EXPECT_EQ(p.dead_tokens_held, sink_.submitted.size() - 16u);
  EXPECT_LT(sink_.submitted.size(), 400u) << "each pause holds the rest back";
}

// A normal share of dead tokens (1 in 20) is recorded as it always was.
TEST_F(WorkerPushTest, ANormalShareOfDeadTokensIsRecorded) {
  make(WorkerOptions{});
  sink_.answer = [](const Message& m) {
    SendResult r;
    if (std::stoll(m.id.substr(1)) % 20 == 7) {
      r.outcome = SendOutcome::kInvalidToken;
      r.status = 410;
      r.reason = "APNs 410 Unregistered";
    }
    return r;
  };
  for (std::int64_t i = 0; i < 1000; ++i) core_->offer(raw(i, tokenFor(i)), clock_.now());
  run(seconds(12));
  EXPECT_EQ(ledger_.count(DeliveryStatus::kInvalidToken), 50u);
  EXPECT_EQ(ledger_.count(DeliveryStatus::kSent), 950u);
  const ProviderStats p = core_->providerStats(clock_.now()).at(0);
  EXPECT_FALSE(p.dead_token_guard);
  EXPECT_EQ(p.dead_tokens_held, 0u);
  EXPECT_NEAR(p.dead_token_ratio, 0.05, 0.02);
}

}  // namespace
}  // namespace pacer
