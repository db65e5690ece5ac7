// WorkerCore on a simulated clock with an in-memory ledger, sink and parking.
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <numeric>
#include <set>

#include "pacer/worker.h"
#include "support/quota_requests.h"
#include "support/series.h"
#include "support/worker_fixture.h"

namespace pacer {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

using test_support::FakeLedger;
using test_support::FakeSink;
using test_support::QuotaWorker;

RawMessage raw(std::int64_t offset, std::string campaign, std::int32_t partition = 0, std::string payload = "p") {
  RawMessage r;
  r.position = Position{"t", partition, offset};
  r.key = std::move(campaign);
  r.headers.emplace_back("message-id", "m" + std::to_string(partition) + "-" + std::to_string(offset));
  r.value = std::move(payload);
  return r;
}

CampaignInfo campaign(std::string id, std::optional<double> rate, double burst = 1, std::string provider = "") {
  CampaignInfo c;
  c.id = std::move(id);
  if (rate) c.limit = RateLimit{*rate, burst};
  c.provider = std::move(provider);
  return c;
}

class WorkerCoreTest : public test_support::WorkerCoreFixture {
 protected:
  void make(WorkerOptions o = {}, bool with_parking = false) {
    o.ledger_flush_interval = milliseconds(50);
    makeCore(o, with_parking);
  }
  // One message to campaign "a" (unlimited) that every attempt answers with
  // HTTP 500; retries 100 ms apart, doubling, without jitter.
  void startFailingOneMessage(WorkerOptions& o) {  // sets o.retry's delay and jitter too
    o.retry.base_delay = milliseconds(100);
    o.retry.jitter = 0;
    make(o);
    sink_.answer = [](const Message&) {
      SendResult r;
      r.outcome = SendOutcome::kFault;
      r.status = 500;
      r.reason = "HTTP 500";
      return r;
    };
    core_->upsertCampaign(campaign("a", std::nullopt), clock_.now());
    core_->offer(raw(0, "a"), clock_.now());
  }
  std::optional<std::int64_t> committed(std::int32_t p = 0) const { return core_->committable(TopicPartition{"t", p}); }
  std::size_t sentOf(const std::string& c) const {
    return static_cast<std::size_t>(std::count_if(sink_.submitted.begin(), sink_.submitted.end(),
                                                  [&](const Message& m) { return m.campaign == c; }));
  }
};

TEST_F(WorkerCoreTest, SendsAtTheCampaignRateAndNeverAbove) {
  make();
  core_->upsertCampaign(campaign("a", 100, 5), clock_.now());
  for (int i = 0; i < 5000; ++i) core_->offer(raw(i, "a"), clock_.now());
  for (int s = 1; s <= 20; ++s) {
    run(seconds(1));
    // r*t + b, never more; and at least r*t (backlogged all the way).
    EXPECT_LE(sink_.submitted.size(), static_cast<std::size_t>(100 * s + 5)) << s << " s";
    EXPECT_GE(sink_.submitted.size(), static_cast<std::size_t>(100 * s)) << s << " s";
  }
}

TEST_F(WorkerCoreTest, CommitsOnlyWhatTheLedgerHolds) {
  make();
  core_->upsertCampaign(campaign("a", std::nullopt), clock_.now());
  ledger_.available = false;
  for (int i = 0; i < 100; ++i) core_->offer(raw(i, "a"), clock_.now());
  run(seconds(2));
  EXPECT_EQ(sink_.submitted.size(), 100u) << "sending goes on while rows fit";
  EXPECT_EQ(committed(), 0) << "nothing is committed past an unwritten row";
  EXPECT_GT(ledger_.calls, 1) << "the write is retried";
  ledger_.available = true;
  run(seconds(1));
  EXPECT_EQ(committed(), 100);
  EXPECT_EQ(ledger_.count(DeliveryStatus::kSent), 100u);
}

TEST_F(WorkerCoreTest, StopsSendingAtTheUnrecordedBoundWhileTheLedgerIsDown) {
  WorkerOptions o;
  o.max_unrecorded = 30;
  make(o);
  core_->upsertCampaign(campaign("a", std::nullopt), clock_.now());
  ledger_.available = false;
  for (int i = 0; i < 100; ++i) core_->offer(raw(i, "a"), clock_.now());
  run(seconds(2));
  EXPECT_EQ(sink_.submitted.size(), 30u) << "a crash now could send at most 30 twice";
  ledger_.available = true;
  run(seconds(2));
  EXPECT_EQ(sink_.submitted.size(), 100u);
  EXPECT_EQ(committed(), 100);
}

TEST_F(WorkerCoreTest, CommitWaitsForTheSlowestCampaignInThePartition) {
  make();
  core_->upsertCampaign(campaign("slow", 1), clock_.now());
  core_->upsertCampaign(campaign("fast", std::nullopt), clock_.now());
  core_->offer(raw(0, "fast"), clock_.now());
  core_->offer(raw(1, "slow"), clock_.now());
  core_->offer(raw(2, "slow"), clock_.now());
  core_->offer(raw(3, "fast"), clock_.now());
  run(milliseconds(200));
  EXPECT_EQ(committed(), 2) << "offset 2 (slow, no token yet) holds the commit";
  run(seconds(1));
  EXPECT_EQ(committed(), 4);
}

TEST_F(WorkerCoreTest, BadInputIsRejectedWithAReasonAndTheOffsetAdvances) {
  WorkerOptions o;
  o.decode.max_message_bytes = 100;
  make(o);
  core_->upsertCampaign(campaign("a", std::nullopt), clock_.now());
  CampaignInfo done = campaign("done", std::nullopt);
  done.state = CampaignState::kCompleted;
  core_->upsertCampaign(done, clock_.now());
  RawMessage no_key = raw(0, "a");
  no_key.key.reset();
  core_->offer(no_key, clock_.now());
  core_->offer(raw(1, "nobody"), clock_.now());
  core_->offer(raw(2, "a", 0, std::string(200, 'x')), clock_.now());
  core_->offer(raw(3, "done"), clock_.now());
  core_->offer(raw(4, "a"), clock_.now());
  run(milliseconds(100));
  EXPECT_EQ(committed(), 5);
  EXPECT_EQ(ledger_.count(DeliveryStatus::kRejected), 4u);
  EXPECT_EQ(ledger_.byId.at("m0-0").reason, "no campaign: the Kafka key (campaign id) is empty");
  EXPECT_EQ(ledger_.byId.at("m0-1").reason, "unknown campaign 'nobody'");
  EXPECT_NE(ledger_.byId.at("m0-2").reason.find("max_message_bytes"), std::string::npos);
  EXPECT_EQ(ledger_.byId.at("m0-3").reason, "campaign 'done' is completed");
  EXPECT_EQ(ledger_.byId.at("m0-4").status, DeliveryStatus::kSent);
  EXPECT_EQ(sink_.submitted.size(), 1u);
}

TEST_F(WorkerCoreTest, FaultsAreRetriedWithBackoffThenFailWithTheLastReason) {
  WorkerOptions o;
  o.retry.max_attempts = 3;
  startFailingOneMessage(o);
  run(milliseconds(50));
  EXPECT_EQ(sink_.submitted.size(), 1u);
  run(milliseconds(100));
  EXPECT_EQ(sink_.submitted.size(), 2u) << "second attempt after 100 ms";
  run(milliseconds(150));
  EXPECT_EQ(sink_.submitted.size(), 2u) << "third waits 200 ms";
  run(milliseconds(100));
  EXPECT_EQ(sink_.submitted.size(), 3u);
  run(milliseconds(100));
  const DeliveryRecord& r = ledger_.byId.at("m0-0");
  EXPECT_EQ(r.status, DeliveryStatus::kFailed);
  EXPECT_EQ(r.attempts, 3);
  EXPECT_NE(r.reason.find("HTTP 500"), std::string::npos) << r.reason;
  EXPECT_EQ(committed(), 1);
}

TEST_F(WorkerCoreTest, ANewMaxAttemptsAppliesToMessagesAlreadyRetrying) {
  WorkerOptions o;
  o.retry.max_attempts = 2;
  startFailingOneMessage(o);
  run(milliseconds(50));
  ASSERT_EQ(sink_.submitted.size(), 1u);
  RetryPolicy more = o.retry;
  more.max_attempts = 4;
  core_->setTuning(more, o.adaptive, clock_.now());  // a reload while the first attempt's retry waits
  run(seconds(5));
  EXPECT_EQ(sink_.submitted.size(), 4u) << "four attempts, not the two configured at start";
  EXPECT_EQ(ledger_.byId.at("m0-0").attempts, 4);
  EXPECT_EQ(ledger_.byId.at("m0-0").status, DeliveryStatus::kFailed);
}

// One throttle, with nothing to say it is more than noise, delays its own
// message by the Retry-After; the provider keeps sending the others. It is an
// attempt in the ledger, but it does not use up the fault budget (max_attempts).
TEST_F(WorkerCoreTest, ALoneThrottleDelaysOnlyItsOwnMessageAndCostsNoFaultAttempts) {
  WorkerOptions o;
  o.retry.max_attempts = 1;
  make(o);
  core_->upsertProvider(ProviderInfo{"sms", RateLimit{1000, 10}}, clock_.now());
  core_->upsertCampaign(campaign("a", std::nullopt, 1, "sms"), clock_.now());
  core_->upsertCampaign(campaign("b", std::nullopt, 1, "sms"), clock_.now());
  int throttles = 1;
  sink_.answer = [&](const Message&) {
    SendResult r;
    if (throttles-- > 0) {
      r.outcome = SendOutcome::kThrottled;
      r.status = 429;
      r.retry_after = seconds(2);
    }
    return r;
  };
  core_->offer(raw(0, "a"), clock_.now());
  run(milliseconds(20));
  ASSERT_EQ(sink_.submitted.size(), 1u);
  core_->offer(raw(1, "b"), clock_.now());
  run(milliseconds(20));
  EXPECT_EQ(sink_.submitted.size(), 2u) << "b goes: one 429 does not pause the provider";
  run(milliseconds(1900));
  EXPECT_EQ(sink_.submitted.size(), 2u) << "a waits out its Retry-After";
  run(milliseconds(200));
  EXPECT_EQ(sink_.submitted.size(), 3u);
  EXPECT_EQ(ledger_.count(DeliveryStatus::kSent), 2u) << "a 429 does not use up the fault budget";
  EXPECT_EQ(ledger_.byId.at("m0-0").attempts, 2) << "the throttled attempt is counted in the ledger";
  EXPECT_EQ(ledger_.byId.at("m0-1").attempts, 1);
  EXPECT_FALSE(core_->providerStats(clock_.now()).at(0).paused);
}

// Throttles far above the noise level are a ceiling: the whole provider
// pauses for the longest Retry-After they named, and its rate comes down to
// what it accepted.
TEST_F(WorkerCoreTest, ThrottlesAboveTheNoiseLevelPauseTheWholeProvider) {
  make();
  core_->upsertProvider(ProviderInfo{"sms", RateLimit{100, 2}}, clock_.now());
  core_->upsertCampaign(campaign("a", std::nullopt, 1, "sms"), clock_.now());
  for (int i = 0; i < 2000; ++i) core_->offer(raw(i, "a"), clock_.now());
  bool refuse = false;
  sink_.answer = [&](const Message&) {
    SendResult r;
    if (refuse) {
      r.outcome = SendOutcome::kThrottled;
      r.status = 429;
      r.retry_after = seconds(3);
    }
    return r;
  };
  run(seconds(2));
  refuse = true;  // from now on every other answer is a 429: half of what is sent is refused
  std::size_t n = 0;
  sink_.answer = [&](const Message&) {
    SendResult r;
    if (refuse && n++ % 2 == 0) {
      r.outcome = SendOutcome::kThrottled;
      r.status = 429;
      r.retry_after = seconds(3);
    }
    return r;
  };
  Nanos waited{0};
  while (core_->providerStats(clock_.now()).at(0).capacity_cuts == 0 && waited < seconds(5)) {
    run(milliseconds(5));
    waited += milliseconds(5);
  }
  const ProviderStats p = core_->providerStats(clock_.now()).at(0);
  ASSERT_EQ(p.capacity_cuts, 1u) << "judged within a period or two";
  EXPECT_LE(waited, milliseconds(2100));
  EXPECT_TRUE(p.paused);
  EXPECT_EQ(p.last_verdict.keep, 1.0) << "one period's word: a step back, the measured cut waits for a second";
  ASSERT_TRUE(p.effective.has_value());
  EXPECT_NEAR(*p.effective, 100 * 0.98, 1.0) << "just under the rate the throttles came at";
  refuse = false;
  const std::size_t at_cut = sink_.submitted.size();
  run(milliseconds(2900));
  EXPECT_EQ(sink_.submitted.size(), at_cut) << "nothing during the 3 s Retry-After";
  run(milliseconds(1000));
  EXPECT_GT(sink_.submitted.size(), at_cut + 20) << "sending again after it";
}

TEST_F(WorkerCoreTest, ProviderStatsCountThrottlesAndServerErrorsApart) {
  WorkerOptions o;
  o.retry.base_delay = milliseconds(10);
  o.retry.jitter = 0;
  o.retry.max_attempts = 10;
  make(o);
  core_->upsertProvider(ProviderInfo{"sms", RateLimit{1000, 10}}, clock_.now());
  core_->upsertCampaign(campaign("a", std::nullopt, 1, "sms"), clock_.now());
  std::vector<int> answers{500, 502, 429, 200};
  sink_.answer = [&](const Message&) {
    SendResult r;
    const int status = answers.empty() ? 200 : answers.front();
    if (!answers.empty()) answers.erase(answers.begin());
    if (status != 200) {
      r.outcome = status == 429 ? SendOutcome::kThrottled : SendOutcome::kFault;
      r.status = status;
      r.retry_after = milliseconds(10);
    }
    return r;
  };
  core_->offer(raw(0, "a"), clock_.now());
  run(milliseconds(500));
  EXPECT_EQ(ledger_.count(DeliveryStatus::kSent), 1u);
  const ProviderStats p = core_->providerStats(clock_.now()).at(0);
  EXPECT_EQ(p.server_errors, 2u) << "500 and 502, whatever the retry made of them";
  EXPECT_EQ(p.throttled, 1u);
}

TEST_F(WorkerCoreTest, APermanentRefusalFailsAtOnce) {
  make();
  sink_.answer = [](const Message&) {
    SendResult r;
    r.outcome = SendOutcome::kPermanent;
    r.status = 400;
    r.reason = "HTTP 400: bad number";
    return r;
  };
  core_->upsertCampaign(campaign("a", std::nullopt), clock_.now());
  core_->offer(raw(0, "a"), clock_.now());
  run(milliseconds(100));
  EXPECT_EQ(ledger_.byId.at("m0-0").status, DeliveryStatus::kFailed);
  EXPECT_EQ(ledger_.byId.at("m0-0").reason, "HTTP 400: bad number");
  EXPECT_EQ(sink_.submitted.size(), 1u);
}

// A failure that names a provider message id (the first part of an SMS the
// SMSC holds) keeps it on the failed row, where its receipt then lands.
TEST_F(WorkerCoreTest, AFailedRowKeepsTheProviderMessageIdItsAnswerNamed) {
  make();
  sink_.answer = [](const Message&) {
    SendResult r;
    r.outcome = SendOutcome::kPermanent;
    r.reason = "submit_sm_resp ESME_RINVDSTADR (segment 2/2); segment 1 of 2 accepted, id 0a";
    r.provider_message_id = "0a";
    return r;
  };
  core_->upsertCampaign(campaign("a", std::nullopt), clock_.now());
  core_->offer(raw(0, "a"), clock_.now());
  run(milliseconds(100));
  EXPECT_EQ(ledger_.byId.at("m0-0").status, DeliveryStatus::kFailed);
  EXPECT_EQ(ledger_.byId.at("m0-0").provider_message_id, "0a");
}

// A dead push token is a dead-letter row of its own status, never retried,
// that carries the token, the provider and the provider's timestamp to the
// ledger (which keeps the invalid_tokens table from them).
TEST_F(WorkerCoreTest, AnInvalidTokenIsOneInvalidTokenRowCarryingTheTokenAndNeverRetried) {
  make();
  sink_.answer = [](const Message& m) {
    SendResult r;
    if (m.recipient != "dead-token") return r;
    r.outcome = SendOutcome::kInvalidToken;
    r.status = 410;
    r.reason = "Unregistered";
    r.invalid_since_ms = 1795000000123;
    return r;
  };
  core_->upsertCampaign(campaign("a", std::nullopt, 1, "apns"), clock_.now());
  RawMessage dead = raw(0, "a");
  dead.headers.emplace_back("recipient", "dead-token");
  RawMessage alive = raw(1, "a");
  alive.headers.emplace_back("recipient", "good-token");
  core_->offer(dead, clock_.now());
  core_->offer(alive, clock_.now());
  run(seconds(5));
  ASSERT_EQ(ledger_.byId.size(), 2u);
  const DeliveryRecord& r = ledger_.byId.at("m0-0");
  EXPECT_EQ(r.status, DeliveryStatus::kInvalidToken);
  EXPECT_EQ(deliveryStatusName(r.status), "invalid_token");
  EXPECT_EQ(r.reason, "invalid token: Unregistered");
  EXPECT_EQ(r.attempts, 1);
  EXPECT_EQ(r.token, "dead-token");
  EXPECT_EQ(r.provider, "apns");
  EXPECT_EQ(r.invalid_since_ms, 1795000000123);
  EXPECT_EQ(ledger_.byId.at("m0-1").status, DeliveryStatus::kSent);
  EXPECT_EQ(ledger_.byId.at("m0-1").token, "") << "only a dead token is carried";
  EXPECT_EQ(sink_.submitted.size(), 2u) << "never retried";
  EXPECT_EQ(core_->stats().invalid_tokens, 1u);
  EXPECT_EQ(core_->stats().failed, 0u);
  EXPECT_EQ(core_->campaignStats().at(0).invalid_tokens, 1u);
  EXPECT_EQ(committed(), 2);
}

TEST_F(WorkerCoreTest, TheMemoryBoundStopsReadingAndResumesBelowThreeQuarters) {
  WorkerOptions o;
  o.max_buffered_messages = 100;
  make(o);
  core_->upsertCampaign(campaign("a", 100, 1), clock_.now());
  int next = 0;
  while (core_->wantsMore()) core_->offer(raw(next++, "a"), clock_.now());
  EXPECT_EQ(next, 100);
  EXPECT_FALSE(core_->mayResume());
  run(milliseconds(200));  // ~20 sent
  EXPECT_TRUE(core_->wantsMore());
  EXPECT_FALSE(core_->mayResume());
  run(milliseconds(100));
  EXPECT_TRUE(core_->mayResume());
}

TEST_F(WorkerCoreTest, SkipsWhatTheLedgerAlreadyHoldsOnReplay) {
  make();
  core_->upsertCampaign(campaign("a", std::nullopt), clock_.now());
  core_->assign(TopicPartition{"t", 0}, {1, 2, 4});
  for (int i = 0; i < 6; ++i) core_->offer(raw(i, "a"), clock_.now());
  run(milliseconds(100));
  EXPECT_EQ(sink_.submitted.size(), 3u);
  EXPECT_EQ(core_->stats().skipped_finished, 3u);
  EXPECT_EQ(committed(), 6);
}

TEST_F(WorkerCoreTest, RevokeLetsGoOfThePartitionsQueuedMessages) {
  make();
  core_->upsertCampaign(campaign("a", 10, 1), clock_.now());
  for (int i = 0; i < 50; ++i) {
    core_->offer(raw(i, "a", 0), clock_.now());
    core_->offer(raw(i, "a", 1), clock_.now());
  }
  run(milliseconds(500));
  const std::size_t before = sink_.submitted.size();
  core_->flush(clock_.now());
  core_->revoke(TopicPartition{"t", 0});
  EXPECT_FALSE(committed(0).has_value());
  run(seconds(10));
  for (std::size_t i = before; i < sink_.submitted.size(); ++i)
    EXPECT_EQ(sink_.submitted[i].position.partition, 1) << "nothing of the revoked partition is sent";
  EXPECT_EQ(core_->stats().buffered_messages + sink_.submitted.size() - before,
            50u - static_cast<std::size_t>(std::count_if(sink_.submitted.begin(), sink_.submitted.begin() + before,
                                                         [](const Message& m) { return m.position.partition == 1; })));
}

// A message in the sink when its partition moves comes back answered 5xx
// after the revoke: its new owner reads it again (the offset was not
// committed), so the old owner must not hold it for a retry too. Held that
// way, the two workers' held counts summed to more than the cluster had left.
TEST_F(WorkerCoreTest, AMessageInTheSinkAtARevokeIsLetGoWhenItComesBackForARetry) {
  WorkerOptions o;
  o.retry.base_delay = milliseconds(100);
  o.retry.jitter = 0;
  make(o);
  sink_.instant = false;
  sink_.answer = [](const Message&) {
    SendResult r;
    r.outcome = SendOutcome::kFault;
    r.status = 500;
    r.reason = "HTTP 500";
    return r;
  };
  core_->upsertCampaign(campaign("a", std::nullopt), clock_.now());
  for (int i = 0; i < 10; ++i) {
    core_->offer(raw(i, "a", 0), clock_.now());
    core_->offer(raw(i, "a", 1), clock_.now());
  }
  run(milliseconds(20));
  ASSERT_EQ(sink_.submitted.size(), 20u) << "all 20 in the sink";
  core_->flush(clock_.now());
  core_->revoke(TopicPartition{"t", 0});
  // Eager rebalancing gives the partition back at once: read again here.
  core_->assign(TopicPartition{"t", 0}, {});
  for (int i = 0; i < 10; ++i) core_->offer(raw(i, "a", 0), clock_.now());
  sink_.finishAll();
  run(milliseconds(20));
  const auto held = [&] {
    for (const CampaignStats& s : core_->campaignStats())
      if (s.id == "a") return s.queued + s.retrying + s.in_flight;
    return std::size_t{0};
  };
  EXPECT_EQ(held(), 20u) << "10 of partition 1 retrying, 10 of partition 0 read again; none held twice";
  sink_.answer = nullptr;  // delivered from now on
  sink_.instant = true;
  run(seconds(2));
  std::map<std::string, int> sends;
  for (const Message& m : sink_.submitted) ++sends[m.id];
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(sends["m0-" + std::to_string(i)], 2) << "once before the revoke, once as read again";
    EXPECT_EQ(sends["m1-" + std::to_string(i)], 2) << "once, then its retry";
  }
  EXPECT_EQ(held(), 0u);
  EXPECT_EQ(committed(0), 10);
  EXPECT_EQ(committed(1), 10);
}

TEST_F(WorkerCoreTest, CancelFailsWhatIsQueuedAndWhatArrives) {
  make();
  core_->upsertCampaign(campaign("a", 1), clock_.now());
  for (int i = 0; i < 5; ++i) core_->offer(raw(i, "a"), clock_.now());
  run(milliseconds(100));
  CampaignInfo c = campaign("a", 1);
  c.state = CampaignState::kCancelled;
  core_->upsertCampaign(c, clock_.now());
  core_->offer(raw(5, "a"), clock_.now());
  run(milliseconds(100));
  EXPECT_EQ(ledger_.count(DeliveryStatus::kSent), 1u);
  EXPECT_EQ(ledger_.count(DeliveryStatus::kFailed), 5u);
  EXPECT_EQ(ledger_.byId.at("m0-5").reason, "cancelled");
  EXPECT_EQ(committed(), 6);
}

// Completed means its total is in the ledger: what is still queued is beyond
// the total and gets a row saying so (never a stalled partition), what
// arrives later is rejected.
TEST_F(WorkerCoreTest, CompletedFailsWhatIsQueuedBeyondTheTotalAndRejectsWhatArrives) {
  make();
  core_->upsertCampaign(campaign("a", 1), clock_.now());
  for (int i = 0; i < 5; ++i) core_->offer(raw(i, "a"), clock_.now());
  run(milliseconds(100));
  CampaignInfo c = campaign("a", 1);
  c.state = CampaignState::kCompleted;
  core_->upsertCampaign(c, clock_.now());
  core_->offer(raw(5, "a"), clock_.now());
  run(milliseconds(100));
  EXPECT_EQ(ledger_.count(DeliveryStatus::kSent), 1u);
  EXPECT_EQ(ledger_.count(DeliveryStatus::kFailed), 4u);
  EXPECT_EQ(ledger_.byId.at("m0-2").reason, "completed: beyond the campaign's total");
  EXPECT_EQ(ledger_.count(DeliveryStatus::kRejected), 1u);
  EXPECT_EQ(ledger_.byId.at("m0-5").reason, "campaign 'a' is completed");
  EXPECT_EQ(committed(), 6);
}

// A row pacerd skipped for its values (rowProblem: a send_rate of 1e-300, a
// provider at NaN) and never had a good version of: each message of it, and
// of the campaigns of such a provider, gets a rejected row naming the row and
// why; the provider's other campaigns go on. Held for this worker's
// configuration (no reason), messages wait instead; a good row lets later
// messages go.
TEST_F(WorkerCoreTest, MessagesOfARowHeldForItsValuesGetARowSayingWhy) {
  make();
  core_->upsertProvider(ProviderInfo{"sms", RateLimit{1000, 10}}, clock_.now());
  core_->upsertCampaign(campaign("good", std::nullopt, 1, "sms"), clock_.now());
  core_->holdCampaign("tiny", "send_rate 1e-300 is below the smallest rate, 0.001 per second", clock_.now());
  core_->holdProvider("nanp", "rate NaN is not a finite number", clock_.now());
  core_->upsertCampaign(campaign("onnan", 10, 2, "nanp"), clock_.now());
  core_->holdCampaign("classy", "", clock_.now());
  core_->offer(raw(0, "tiny"), clock_.now());
  core_->offer(raw(1, "onnan"), clock_.now());
  core_->offer(raw(2, "good"), clock_.now());
  core_->offer(raw(3, "classy"), clock_.now());
  core_->holdCampaign("tiny", "send_rate 1e-300 is below the smallest rate, 0.001 per second", clock_.now());
  core_->offer(raw(4, "tiny"), clock_.now());
  run(milliseconds(100));
  EXPECT_EQ(sentOf("good"), 1u);
  EXPECT_EQ(ledger_.count(DeliveryStatus::kRejected), 3u);
  EXPECT_EQ(ledger_.byId.at("m0-0").reason,
            "campaign 'tiny' is skipped: its row is invalid: send_rate 1e-300 is below the smallest rate, 0.001 per "
            "second (fix the row and send the message again)");
  EXPECT_EQ(ledger_.byId.at("m0-4").status, DeliveryStatus::kRejected) << "held again by the next refresh: the same";
  EXPECT_EQ(ledger_.byId.at("m0-1").reason,
            "provider 'nanp' is skipped: its row is invalid: rate NaN is not a finite number (fix the row and send "
            "the message again)");
  EXPECT_EQ(ledger_.byId.count("m0-3"), 0u) << "held for this worker's configuration: it waits";
  EXPECT_EQ(committed(), 3) << "up to the message that waits";
  core_->upsertCampaign(campaign("tiny", 100, 2), clock_.now());
  core_->upsertProvider(ProviderInfo{"nanp", RateLimit{100, 2}}, clock_.now());
  core_->offer(raw(5, "tiny"), clock_.now());
  core_->offer(raw(6, "onnan"), clock_.now());
  run(milliseconds(100));
  EXPECT_EQ(sentOf("tiny"), 1u) << "a good row: later messages go";
  EXPECT_EQ(sentOf("onnan"), 1u);
}

TEST_F(WorkerCoreTest, PausedCampaignWaitsAndOthersGoOn) {
  make();
  CampaignInfo p = campaign("p", std::nullopt);
  p.state = CampaignState::kPaused;
  core_->upsertCampaign(p, clock_.now());
  core_->upsertCampaign(campaign("a", std::nullopt), clock_.now());
  core_->offer(raw(0, "p"), clock_.now());
  core_->offer(raw(1, "a"), clock_.now());
  run(milliseconds(100));
  EXPECT_EQ(sentOf("p"), 0u);
  EXPECT_EQ(sentOf("a"), 1u);
  p.state = CampaignState::kActive;
  core_->upsertCampaign(p, clock_.now());
  run(milliseconds(100));
  EXPECT_EQ(sentOf("p"), 1u);
  EXPECT_EQ(committed(), 2);
}

// A graceful stop (SIGTERM): what is in flight finishes and is recorded;
// nothing new is sent, retried or claimed; the commit stops at the first
// unsent message, so the next owner reads exactly the rest.
TEST_F(WorkerCoreTest, DrainFinishesWhatIsInFlightAndStartsNothingNew) {
  make(WorkerOptions{}, true);
  sink_.instant = false;
  core_->upsertCampaign(campaign("a", 100, 10), clock_.now());
  for (int i = 0; i < 200; ++i) core_->offer(raw(i, "a"), clock_.now());
  run(milliseconds(100));  // 10 + 100/s x 0.1 s = 20 submitted, none answered
  const std::size_t in_flight = sink_.submitted.size();
  ASSERT_GE(in_flight, 15u);
  ASSERT_EQ(core_->stats().unrecorded, in_flight);
  core_->drain();
  sink_.finishAll();
  run(seconds(2));  // 200 more tokens would have accrued
  EXPECT_EQ(sink_.submitted.size(), in_flight) << "no new sends after drain()";
  EXPECT_TRUE(core_->flush(clock_.now()));
  EXPECT_EQ(core_->stats().unrecorded, 0u);
  EXPECT_EQ(ledger_.count(DeliveryStatus::kSent), in_flight) << "what was in flight is recorded";
  EXPECT_EQ(committed(), static_cast<std::int64_t>(in_flight)) << "committed up to the first unsent message";
  core_->releaseParked();
  EXPECT_EQ(parking_.releases, 1) << "claims on parked messages are given back";
}

// A fault answered during the drain is not retried by this worker; it stays
// uncommitted for the next owner, with nothing recorded for it.
TEST_F(WorkerCoreTest, DrainDoesNotRetryAndLeavesTheFaultUncommitted) {
  make();
  sink_.instant = false;
  sink_.answer = [](const Message& m) {
    SendResult r;
    if (m.position.offset == 0) {
      r.outcome = SendOutcome::kFault;
      r.reason = "HTTP 503";
    }
    return r;
  };
  core_->upsertCampaign(campaign("a", std::nullopt), clock_.now());
  for (int i = 0; i < 5; ++i) core_->offer(raw(i, "a"), clock_.now());
  run(milliseconds(10));
  ASSERT_EQ(sink_.submitted.size(), 5u);
  core_->drain();
  sink_.finishAll();
  run(seconds(5));
  EXPECT_EQ(sink_.submitted.size(), 5u) << "the fault is not retried while draining";
  EXPECT_EQ(core_->stats().unrecorded, 0u);
  EXPECT_EQ(ledger_.count(DeliveryStatus::kSent), 4u);
  EXPECT_FALSE(ledger_.byId.contains("m0-0"));
  EXPECT_EQ(committed(), 0) << "offset 0 is read again by the next owner";
}

// A routing sink can refuse one provider's messages (its own sink is full)
// while it has room for others: the refused campaign must not lose its
// place in the scheduler, and the others must not lose their tick.
TEST_F(WorkerCoreTest, ASinkFullForOneCampaignStallsNeitherItNorTheOthers) {
  make();
  bool b_full = true;
  sink_.refuse = [&](const Message& m) { return b_full && m.campaign == "b"; };
  core_->upsertCampaign(campaign("a", 200, 10), clock_.now());
  core_->upsertCampaign(campaign("b", 200, 10), clock_.now());
  for (int i = 0; i < 600; ++i) core_->offer(raw(i, i % 2 ? "b" : "a"), clock_.now());
  run(seconds(1));
  EXPECT_GE(sentOf("a"), 200u) << "a's grants are not lost to b's full sink";
  EXPECT_EQ(sentOf("b"), 0u);
  b_full = false;
  run(seconds(3));
  EXPECT_EQ(sentOf("a"), 300u);
  EXPECT_EQ(sentOf("b"), 300u) << "b sends its whole queue once its sink has room";
  EXPECT_EQ(committed(), 600);
}

// The same with nothing else queued: the refused messages, all paid, are the
// whole backlog; once they go, the tick has nothing left to split (pacerd
// died of a division by zero here behind an SMPP provider sink with a window of 2).
TEST_F(WorkerCoreTest, PaidMessagesAFullSinkRefusedGoWhenTheyAreAllThatIsQueued) {
  make();
  bool full = true;
  sink_.refuse = [&](const Message&) { return full; };
  core_->upsertCampaign(campaign("b", 200, 10), clock_.now());
  for (int i = 0; i < 5; ++i) core_->offer(raw(i, "b"), clock_.now());
  run(milliseconds(100));
  EXPECT_EQ(sentOf("b"), 0u);
  full = false;
  run(seconds(1));
  EXPECT_EQ(sentOf("b"), 5u);
  EXPECT_EQ(committed(), 5);
}

TEST_F(WorkerCoreTest, ASlowCampaignsExcessIsParkedSoTheOffsetAdvances) {
  WorkerOptions o;
  o.park_min_keep = 10;
  o.park_keep_for = seconds(5);
  make(o, true);
  core_->upsertCampaign(campaign("slow", 1), clock_.now());
  core_->upsertCampaign(campaign("fast", 1000, 10), clock_.now());
  for (int i = 0; i < 500; ++i) core_->offer(raw(i, "slow"), clock_.now());
  for (int i = 500; i < 2500; ++i) core_->offer(raw(i, "fast"), clock_.now());
  run(seconds(3));
  EXPECT_EQ(sentOf("fast"), 2000u) << "the fast campaign is not held back";
  EXPECT_EQ(parking_.size(), 490u);
  EXPECT_EQ(core_->stats().buffered_messages, 10u - sentOf("slow"));
  // The commit waits only for the slow campaign's in-memory head.
  EXPECT_EQ(committed(), static_cast<std::int64_t>(sentOf("slow")));
}

TEST_F(WorkerCoreTest, AboveTheBoundOnlyPartitionsWhoseReadsParkAreToPauseUpToTheCeiling) {
  WorkerOptions o;
  o.park_min_keep = 10;
  o.park_keep_for = seconds(5);
  o.max_buffered_messages = 100;
  make(o, true);
  core_->upsertCampaign(campaign("slow", 1), clock_.now());        // keeps 10
  core_->upsertCampaign(campaign("fast", 100, 10), clock_.now());  // keeps 500
  const TopicPartition p0{"t", 0}, p1{"t", 1};
  int next = 0;
  while (core_->wantsMore()) core_->offer(raw(next++, "slow", 1), clock_.now());
  EXPECT_EQ(next, 100) << "the slow backlog fills the bound on its way to parking";
  EXPECT_TRUE(core_->readsPark(p1));
  EXPECT_FALSE(core_->readsPark(p0)) << "nothing read from it yet";
  int fast = 0;
  while (core_->belowCeiling()) core_->offer(raw(fast++, "fast", 0), clock_.now());
  EXPECT_EQ(fast, 25) << "kept messages may go on to 5/4 of the bound";
  EXPECT_FALSE(core_->readsPark(p0)) << "the fast campaign keeps what it read";
  EXPECT_FALSE(core_->wantsMore());
  core_->offer(raw(fast++, "slow", 0), clock_.now());
  EXPECT_TRUE(core_->readsPark(p0)) << "the partition's last message was parked";
  core_->offer(raw(fast++, "fast", 0), clock_.now());
  EXPECT_FALSE(core_->readsPark(p0));
  core_->revoke(p1);
  EXPECT_FALSE(core_->readsPark(p1)) << "a revoked partition forgets";
}

TEST_F(WorkerCoreTest, ParkedMessagesComeBackInOrderAndLeaveParkingWithTheirLedgerRow) {
  WorkerOptions o;
  o.park_min_keep = 10;
  o.park_keep_for = seconds(1);
  make(o, true);
  core_->upsertCampaign(campaign("a", 20, 1), clock_.now());
  for (int i = 0; i < 100; ++i) core_->offer(raw(i, "a"), clock_.now());
  run(milliseconds(100));
  EXPECT_EQ(parking_.size(), 80u);  // keep = max(10, 20/s * 1 s)
  run(seconds(6));
  EXPECT_EQ(ledger_.count(DeliveryStatus::kSent), 100u);
  EXPECT_EQ(parking_.size(), 0u);
  for (std::size_t i = 0; i < sink_.submitted.size(); ++i)
    EXPECT_EQ(sink_.submitted[i].position.offset, static_cast<std::int64_t>(i)) << "FIFO through parking";
  EXPECT_EQ(ledger_.unparked.size(), 80u);
  EXPECT_TRUE(ledger_.unparked.contains("m0-99"));
  EXPECT_FALSE(ledger_.unparked.contains("m0-0"));
}

TEST_F(WorkerCoreTest, ParkingUnavailableKeepsMessagesAndTheCommit) {
  WorkerOptions o;
  o.park_min_keep = 10;
  o.park_keep_for = seconds(1);
  make(o, true);
  parking_.available = false;
  core_->upsertCampaign(campaign("a", 1), clock_.now());
  for (int i = 0; i < 50; ++i) core_->offer(raw(i, "a"), clock_.now());
  run(seconds(2));
  EXPECT_EQ(committed(), static_cast<std::int64_t>(sentOf("a")));
  EXPECT_EQ(core_->stats().buffered_messages, 50u - sentOf("a")) << "nothing dropped";
  parking_.available = true;
  run(seconds(1));
  EXPECT_EQ(parking_.size(), 40u);
}

TEST_F(WorkerCoreTest, ARateChangeAppliesOnTheNextStep) {
  make();
  core_->upsertCampaign(campaign("a", 10, 1), clock_.now());
  for (int i = 0; i < 10000; ++i) core_->offer(raw(i, "a"), clock_.now());
  run(seconds(2));
  const std::size_t at_ten = sink_.submitted.size();
  EXPECT_NEAR(static_cast<double>(at_ten), 21.0, 1.0);
  core_->upsertCampaign(campaign("a", 1000, 10), clock_.now());
  run(seconds(2));
  EXPECT_NEAR(static_cast<double>(sink_.submitted.size() - at_ten), 2000.0, 10.0);
}

// Dispatch happens once a step: a burst below send_rate x step caps the rate
// at burst per step (pacerd warns about such campaigns).
TEST_F(WorkerCoreTest, ABurstBelowOneStepOfTheRateCapsTheRate) {
  make();
  core_->upsertCampaign(campaign("a", 1000, 1), clock_.now());
  for (int i = 0; i < 10000; ++i) core_->offer(raw(i, "a"), clock_.now());
  run(seconds(2));
  EXPECT_NEAR(static_cast<double>(sink_.submitted.size()), 400.0, 2.0);  // one per 5 ms step
}

// With a latency threshold, a slow answer lowers the provider's adaptive
// rate (once per hold) without pausing it.
TEST_F(WorkerCoreTest, SlowAnswersLowerTheProvidersEffectiveRateWithoutAPause) {
  WorkerOptions o;
  o.adaptive.latency_threshold = milliseconds(500);
  make(o);
  core_->upsertProvider(ProviderInfo{"sms", RateLimit{1000, 100}}, clock_.now());
  core_->upsertCampaign(campaign("a", std::nullopt, 1, "sms"), clock_.now());
  Nanos latency = milliseconds(100);
  sink_.answer = [&](const Message&) {
    SendResult r;
    r.latency = latency;
    return r;
  };
  for (int i = 0; i < 100; ++i) core_->offer(raw(i, "a"), clock_.now());
  run(milliseconds(50));
  auto effective = [&] { return *core_->providerStats(clock_.now()).at(0).effective; };
  EXPECT_DOUBLE_EQ(effective(), 1000.0) << "answers under the threshold change nothing";
  latency = milliseconds(800);
  for (int i = 100; i < 200; ++i) core_->offer(raw(i, "a"), clock_.now());
  run(milliseconds(200));
  // 0.8 of 1000 once (the hold is 250 ms), then back up at 250/s for up to 0.2 s.
  EXPECT_LT(effective(), 851.0) << "lowered by slow answers, once";
  EXPECT_GE(effective(), 800.0);
  EXPECT_FALSE(core_->providerStats(clock_.now()).at(0).paused);
  EXPECT_EQ(sink_.submitted.size(), 200u) << "slow is not a refusal: everything was sent";
}

// Workers sharing a global quota (QuotaWorker, support/worker_fixture.h):
// together they stay within the campaign's and the provider's rate, where
// each alone would have sent the full rate.
//
// Runs two workers for `secs` simulated seconds, stepping every 5 ms at
// staggered phases; returns the sends of both per millisecond.
std::vector<std::uint64_t> runPair(QuotaBackend* quota, const std::vector<CampaignInfo>& campaigns,
                                   const std::optional<ProviderInfo>& provider, int per_campaign, int secs) {
  MonoTime t0{};
  std::vector<std::unique_ptr<QuotaWorker>> ws;
  for (int w = 0; w < 2; ++w) {
    ws.push_back(std::make_unique<QuotaWorker>(quota, static_cast<std::uint64_t>(w) + 1, t0));
    if (provider) ws.back()->core->upsertProvider(*provider, t0);
    for (const CampaignInfo& c : campaigns) ws.back()->core->upsertCampaign(c, t0);
    std::int64_t offset = 0;
    for (const CampaignInfo& c : campaigns)
      for (int i = 0; i < per_campaign; ++i) ws.back()->core->offer(raw(offset++, c.id, w), t0);
  }
  std::vector<std::uint64_t> per_ms(static_cast<std::size_t>(secs) * 1000, 0);
  for (int us = 0; us < secs * 1'000'000; us += 2500) {
    QuotaWorker& w = *ws[static_cast<std::size_t>(us / 2500 % 2)];
    const std::size_t before = w.sink.submitted.size();
    w.core->step(t0 + std::chrono::microseconds(us));
    per_ms[static_cast<std::size_t>(us / 1000)] += w.sink.submitted.size() - before;
  }
  return per_ms;
}

std::uint64_t total(const std::vector<std::uint64_t>& v) { return std::accumulate(v.begin(), v.end(), 0ull); }

TEST(WorkerCoreQuota, TwoWorkersShareACampaignRate) {
  const std::vector<CampaignInfo> campaigns{campaign("a", 100, 10)};
  // Leases outstanding at most: per worker ceil(100 / 2 workers * 250 ms) = 13.
  const double bound = 100 + 10 + 2 * 13;
  QuotaBackendPtr shared = makeLocalQuotaBackend();
  const auto per_ms = runPair(shared.get(), campaigns, std::nullopt, 3000, 10);
  EXPECT_LE(static_cast<double>(testing::maxWindowSum(per_ms, 1000)), bound);
  EXPECT_LE(static_cast<double>(total(per_ms)), 100.0 * 10 + bound - 100);
  EXPECT_GE(static_cast<double>(total(per_ms)), 0.95 * 100 * 10);
  // The same two workers without the global quota: each sends the full rate.
  const auto alone = runPair(nullptr, campaigns, std::nullopt, 3000, 10);
  EXPECT_GE(static_cast<double>(total(alone)), 1.9 * 100 * 10);
}

TEST(WorkerCoreQuota, TwoWorkersShareAProviderRateAcrossCampaigns) {
  const std::vector<CampaignInfo> campaigns{campaign("a", 200, 20, "sms"), campaign("b{x}", std::nullopt, 1, "sms")};
  ProviderInfo sms{"sms", RateLimit{150, 15}};
  // Leases outstanding: per worker and campaign ceil(150 / 2 * 250 ms) = 19.
  const double bound = 150 + 15 + 2 * 2 * 19;
  QuotaBackendPtr shared = makeLocalQuotaBackend();
  const auto per_ms = runPair(shared.get(), campaigns, sms, 3000, 10);
  EXPECT_LE(static_cast<double>(testing::maxWindowSum(per_ms, 1000)), bound);
  EXPECT_GE(static_cast<double>(total(per_ms)), 0.95 * 150 * 10);
}

// Two workers on `shared`, each with a campaign of 5,000 messages on provider
// "sms" (200/s, burst 20).
std::vector<std::unique_ptr<QuotaWorker>> twoSmsWorkers(QuotaBackend* shared, MonoTime t0) {
  std::vector<std::unique_ptr<QuotaWorker>> ws;
  for (int w = 0; w < 2; ++w) {
    ws.push_back(std::make_unique<QuotaWorker>(shared, static_cast<std::uint64_t>(w) + 1, t0));
    ws.back()->core->upsertProvider(ProviderInfo{"sms", RateLimit{200, 20}}, t0);
    ws.back()->core->upsertCampaign(campaign("c" + std::to_string(w), std::nullopt, 1, "sms"), t0);
    for (int i = 0; i < 5000; ++i) ws.back()->core->offer(raw(i, "c" + std::to_string(w), w), t0);
  }
  return ws;
}

// Two workers whose sinks hold 10 messages for 100 ms each (an SMSC
// answering in 100 ms, a window of 10): each carries 100/s, just its share
// of the provider's 200/s. A full sink cannot spend the lease tokens falling
// due, so a worker whose sink was full holds no more than the sink's room:
// the tokens then fall due when it can send them, and the two use the rate.
TEST(WorkerCoreQuota, SinkBoundWorkersLeaseWithinTheirRoomAndUseTheRate) {
  QuotaBackendPtr shared = makeLocalQuotaBackend();
  const MonoTime t0{};
  std::vector<std::unique_ptr<QuotaWorker>> ws;
  std::vector<std::deque<MonoTime>> sent_at(2);
  for (int w = 0; w < 2; ++w) {
    ws.push_back(std::make_unique<QuotaWorker>(shared.get(), static_cast<std::uint64_t>(w) + 1, t0, 10));
    ws.back()->sink.instant = false;
    ws.back()->core->upsertProvider(ProviderInfo{"sms", RateLimit{200, 5}}, t0);
    ws.back()->core->upsertCampaign(campaign("c" + std::to_string(w), std::nullopt, 1, "sms"), t0);
    for (int i = 0; i < 5000; ++i) ws.back()->core->offer(raw(i, "c" + std::to_string(w), w), t0);
  }
  std::vector<std::uint64_t> per_ms(10000, 0);
  for (int us = 0; us < 10'000'000; us += 2500) {
    const auto i = static_cast<std::size_t>(us / 2500 % 2);
    QuotaWorker& w = *ws[i];
    const MonoTime now = t0 + std::chrono::microseconds(us);
    std::size_t answered = 0;
    while (!sent_at[i].empty() && sent_at[i].front() + milliseconds(100) <= now) sent_at[i].pop_front(), ++answered;
    w.sink.finishFirst(answered);
    const std::size_t before = w.sink.submitted.size();
    w.core->step(now);
    sent_at[i].insert(sent_at[i].end(), w.sink.submitted.size() - before, now);
    per_ms[static_cast<std::size_t>(us / 1000)] += w.sink.submitted.size() - before;
  }
  EXPECT_LE(testing::maxWindowSum(per_ms, 1000), 205u);
  const std::uint64_t after_first = std::accumulate(per_ms.begin() + 1000, per_ms.end(), 0ull);
  EXPECT_GE(static_cast<double>(after_first), 0.95 * 200 * 9) << "both use what their sinks carry";
  std::uint64_t late = 0;
  for (const auto& w : ws) late += w->core->stats().quota.tokens_late;
  EXPECT_LE(late, 50u) << "few tokens forfeited while a sink was full";
}

// One worker's 429s, judged a ceiling, pause the provider for the other
// worker too (through the shared quota), and both see the provider's shared
// rate come down to what it accepted. Worker 0 reports first, so it is the
// provider's throttle judge: the refused worker is the judge, or not (its own
// connection refused where the judge's is not: one node of the provider).
void a429AtOneWorkerPausesTheProviderAtEveryWorker(int refused) {
  SCOPED_TRACE(refused == 0 ? "the judge refused" : "the other worker refused");
  const int other = 1 - refused;
  QuotaBackendPtr shared = makeLocalQuotaBackend();
  const MonoTime t0{};
  std::vector<std::unique_ptr<QuotaWorker>> ws = twoSmsWorkers(shared.get(), t0);
  bool throttle = false;
  int throttled_ms = -1;
  ws[static_cast<std::size_t>(refused)]->sink.answer = [&](const Message&) {
    SendResult r;
    if (throttle) {
      r.outcome = SendOutcome::kThrottled;
      r.status = 429;
      r.retry_after = seconds(2);
    }
    return r;
  };
  std::vector<std::uint64_t> sent_by[2];
  std::size_t before[2] = {0, 0};
  std::vector<ProviderStats> during[2];
  for (int ms = 0; ms < 8000; ms += 5) {
    // From 2 s the refused worker's provider answers 429 (Retry-After 2 s)
    // until its judge calls it a ceiling.
    if (ms == 2000) throttle = true;
    if (throttle && ws[static_cast<std::size_t>(refused)]->core->providerStats(t0 + milliseconds(ms)).at(0).capacity_cuts > 0) {
      throttle = false;
      throttled_ms = ms;
    }
    if (throttled_ms >= 0 && ms == throttled_ms + 1000)
      for (int w = 0; w < 2; ++w)
        during[w] = ws[static_cast<std::size_t>(w)]->core->providerStats(t0 + milliseconds(ms));
    for (int w = 0; w < 2; ++w) {
      QuotaWorker& q = *ws[static_cast<std::size_t>(w)];
      q.core->step(t0 + milliseconds(ms) + std::chrono::microseconds(2500 * w));
      sent_by[w].push_back(q.sink.submitted.size() - before[w]);
      before[w] = q.sink.submitted.size();
    }
  }
  auto sum = [&](int w, int from_ms, int to_ms) {
    std::uint64_t n = 0;
    for (int ms = from_ms; ms < to_ms; ms += 5) n += sent_by[w][static_cast<std::size_t>(ms / 5)];
    return n;
  };
  EXPECT_GT(sum(other, 1000, 2000), 50u) << "the other worker sends its share before";
  ASSERT_GE(throttled_ms, 2000);
  ASSERT_LE(throttled_ms, 4100) << "judged within two periods";
  const int t = throttled_ms;  // the rest of that step's sends went out with it
  // The other worker spends what it holds (at most ceil(200 / 2 * 250 ms) =
  // 25) until its next request tells it of the pause.
  EXPECT_LE(sum(other, t, t + 500), 25u);
  EXPECT_EQ(sum(other, t + 500, t + 1900), 0u) << "the other worker honours the refused one's Retry-After";
  EXPECT_EQ(sum(refused, t + 5, t + 1900), 0u);
  EXPECT_GT(sum(0, t + 2100, 8000) + sum(1, t + 2100, 8000), 100u) << "both resume after it";
  ASSERT_EQ(during[0].size(), 1u);
  ASSERT_EQ(during[1].size(), 1u);
  for (int w = 0; w < 2; ++w) {  // in the pause: slowed and paused for both
    const std::vector<ProviderStats>& ps = during[w];
    ASSERT_TRUE(ps[0].effective.has_value());
    EXPECT_LT(*ps[0].effective, 200.0) << "the shared rate came down for worker " << w;
    EXPECT_DOUBLE_EQ(*ps[0].effective, *during[0][0].effective) << "one shared rate";
    EXPECT_TRUE(ps[0].paused) << w;
  }
  EXPECT_EQ(ws[static_cast<std::size_t>(other)]->core->stats().quota.shared_pauses, 1u);
}

TEST(WorkerCoreQuota, A429AtOneWorkerPausesTheProviderAtEveryWorker) {
  a429AtOneWorkerPausesTheProviderAtEveryWorker(0);
  a429AtOneWorkerPausesTheProviderAtEveryWorker(1);
}

// What the provider accepted a second, summed by the quota over every worker's
// report, asked as a worker of its own that took nothing (want 0, rates 0).
AcceptedRates providerWideRates(QuotaBackend& quota, MonoTime now) {
  LeaseRequest r;
  r.scope = "sms";
  r.levels.assign(1, QuotaLevel{"p", RateLimit{200, 20}});
  r.want = 0;
  r.worker = 99;
  r.adaptive = AdaptiveLevel{};
  r.adaptive->rates = AcceptedRates{0, 0};
  return testing::acquireOne(quota, r, now).provider_rates;
}

// A worker that goes on leasing but hears no answers (a provider that stopped
// answering it, its binds lost) reports the seconds it heard nothing, not the
// last second it heard: a stale report would count what it no longer gets
// accepted into the whole provider's figure, which the throttle judge's cut
// and raise are measured against.
TEST(WorkerCoreQuota, AWorkerThatHearsNoAnswersStopsReportingItsLastSecond) {
  QuotaBackendPtr shared = makeLocalQuotaBackend();
  const MonoTime t0{};
  std::vector<std::unique_ptr<QuotaWorker>> ws = twoSmsWorkers(shared.get(), t0);
  auto run = [&](int from_ms, int to_ms) {
    for (int ms = from_ms; ms < to_ms; ms += 5)
      for (int w = 0; w < 2; ++w) ws[static_cast<std::size_t>(w)]->core->step(t0 + milliseconds(ms) + std::chrono::microseconds(2500 * w));
  };
  run(0, 3000);
  const AcceptedRates both = providerWideRates(*shared, t0 + milliseconds(3000));
  ASSERT_TRUE(both.known());
  EXPECT_GE(both.accepted, 180.0) << "both workers' answers, about 100 a second each";
  // Worker 0's sends now go unanswered; it keeps sending, so it keeps leasing.
  ws[0]->sink.instant = false;
  const std::size_t sent_before = ws[0]->sink.submitted.size();
  run(3000, 6000);
  ASSERT_GT(ws[0]->sink.submitted.size(), sent_before + 100) << "it went on sending, and leasing";
  const AcceptedRates one = providerWideRates(*shared, t0 + milliseconds(6000));
  ASSERT_TRUE(one.known());
  EXPECT_LE(one.accepted, 0.7 * both.accepted) << "worker 0's last answered second still counted";
  EXPECT_GE(one.accepted, 0.3 * both.accepted) << "worker 1's answers";
}

}  // namespace
}  // namespace pacer

namespace pacer {
namespace {

// The gauges metrics read: where each campaign's messages are, and how far
// the ledger lags (as of the step the core was given, never the clock).
TEST_F(WorkerCoreTest, StatsSayWhereEachCampaignsMessagesAreAndHowFarTheLedgerLags) {
  make();
  sink_.instant = false;
  core_->upsertCampaign(campaign("a", std::nullopt, 1, "sms"), clock_.now());
  for (int i = 0; i < 10; ++i) core_->offer(raw(i, "a"), clock_.now());
  run(milliseconds(5));
  auto stats = core_->campaignStats();
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(stats[0].provider, "sms");
  EXPECT_FALSE(stats[0].limit) << "unlimited";
  EXPECT_EQ(stats[0].in_flight, 10u);
  EXPECT_EQ(core_->stats().pending_rows, 0u);
  EXPECT_FALSE(core_->stats().oldest_pending_row);

  // Three answered with a retry, the rest delivered; the ledger is down.
  int n = 0;
  sink_.answer = [&](const Message&) {
    SendResult r;
    if (n++ < 3) {
      r.outcome = SendOutcome::kFault;
      r.reason = "HTTP 500";
    }
    return r;
  };
  ledger_.available = false;
  const MonoTime answered = clock_.now() + milliseconds(5);
  sink_.finishAll();
  run(milliseconds(5));
  stats = core_->campaignStats();
  EXPECT_EQ(stats[0].in_flight, 0u);
  EXPECT_EQ(stats[0].retrying, 3u);
  WorkerStats w = core_->stats();
  EXPECT_EQ(w.pending_rows, 7u);
  ASSERT_TRUE(w.oldest_pending_row);
  EXPECT_EQ(*w.oldest_pending_row, answered);
  run(milliseconds(100));
  EXPECT_TRUE(core_->stats().store_failing) << "the write failed and is retried";

  ledger_.available = true;
  sink_.instant = true;
  sink_.finishAll();  // a retry already sent again meanwhile
  run(seconds(5));    // the retries go out after their backoff and are delivered
  stats = core_->campaignStats();
  EXPECT_EQ(stats[0].retrying, 0u);
  EXPECT_EQ(stats[0].in_flight, 0u);
  EXPECT_EQ(stats[0].sent, 10u);
  w = core_->stats();
  EXPECT_FALSE(w.store_failing);
  EXPECT_EQ(w.pending_rows, 0u);
  EXPECT_FALSE(w.oldest_pending_row);
}

}  // namespace
}  // namespace pacer

namespace pacer {
namespace {

// A message reusing the id of one this worker still holds, with other
// content, is not sent under that id (the provider would take it for the
// first): it gets a rejected row of its own. A replay with the same content
// goes on as before.
TEST_F(WorkerCoreTest, AReusedIdWithOtherContentIsNotSentAndGetsItsOwnRow) {
  make();
  sink_.instant = false;
  core_->upsertCampaign(campaign("a", std::nullopt), clock_.now());
  RawMessage first = raw(0, "a", 0, "hello");
  RawMessage other = raw(1, "a", 0, "goodbye");
  other.headers = first.headers;  // the same message-id
  RawMessage again = raw(2, "a", 0, "hello");
  again.headers = first.headers;
  core_->offer(first, clock_.now());
  core_->offer(other, clock_.now());
  core_->offer(again, clock_.now());
  run(milliseconds(100));
  ASSERT_EQ(ledger_.byId.count("m0-0@t/0/1"), 1u);
  const DeliveryRecord& r = ledger_.byId.at("m0-0@t/0/1");
  EXPECT_EQ(r.status, DeliveryStatus::kRejected);
  EXPECT_EQ(r.reason, "message id 'm0-0' already names another message this worker holds; not sent");
  std::size_t submitted_other = 0;
  for (const Message& m : sink_.submitted) submitted_other += m.payload == "goodbye" ? 1 : 0;
  EXPECT_EQ(submitted_other, 0u);
  EXPECT_EQ(sink_.submitted.size(), 2u) << "the first, and its replay under the same id";
}

}  // namespace
}  // namespace pacer

namespace pacer {
namespace {

// The circuit breaker counts every answer: one fault in ten retries the
// message and changes nothing else; most answers faults opens it, which
// pauses the provider for the cooldown and slows it.
TEST_F(WorkerCoreTest, OnlySustainedFaultsOpenTheProvidersCircuitBreaker) {
  for (const int percent : {10, 60}) {
    WorkerOptions o;
    o.retry.base_delay = milliseconds(50);
    o.retry.max_attempts = 20;
    make(o);
    core_->upsertProvider(ProviderInfo{"sms", RateLimit{1000, 10}}, clock_.now());
    core_->upsertCampaign(campaign("a", std::nullopt, 1, "sms"), clock_.now());
    int n = 0;
    sink_.answer = [&](const Message&) {
      SendResult r;
      if (n++ % 10 < percent / 10) {  // spread evenly
        r.outcome = SendOutcome::kFault;
        r.status = 503;
      }
      return r;
    };
    for (int i = 0; i < 200; ++i) core_->offer(raw(i, "a"), clock_.now());
    run(milliseconds(500));
    const ProviderStats p = core_->providerStats(clock_.now()).at(0);
    if (percent == 10) {
      EXPECT_FALSE(p.circuit_open) << "10% faults";
      EXPECT_DOUBLE_EQ(*p.effective, 1000.0) << "a few faults do not lower the rate";
      EXPECT_EQ(ledger_.count(DeliveryStatus::kSent), 200u);
    } else {
      EXPECT_TRUE(p.circuit_open) << "60% faults";
      EXPECT_TRUE(p.paused);
      EXPECT_LT(*p.effective, 1000.0);
    }
  }
}

// A message costs its payload's length in units, as an SMS costs its
// segments; "!" cannot be sent at all.
class LengthCost final : public MessageCostInterface {
 public:
  MessageCost cost(const Message& m, std::string_view) const override {
    if (m.payload == "!") return MessageCost{0, "no room for this text"};
    return MessageCost{static_cast<std::uint32_t>(m.payload.size()), {}};
  }
};

TEST_F(WorkerCoreTest, AMessageTakesAllItsUnitsAtOnceAndNeverMoreThanTheRate) {
  LengthCost cost;
  WorkerOptions o;
  o.cost = &cost;
  make(o);
  // Burst 1: a 3-unit message is paid over three grants, then goes whole.
  core_->upsertCampaign(campaign("a", 100, 1), clock_.now());
  const std::string payloads[] = {"x", "xx", "xxx"};
  std::uint64_t offered_units = 0;
  for (int i = 0; i < 600; ++i) {
    core_->offer(raw(i, "a", 0, payloads[i % 3]), clock_.now());
    offered_units += payloads[i % 3].size();
  }
  auto unitsSent = [&] {
    std::uint64_t u = 0;
    for (const Message& m : sink_.submitted) u += m.payload.size();
    return u;
  };
  for (int s = 1; s <= 10; ++s) {
    run(seconds(1));
    EXPECT_LE(unitsSent(), static_cast<std::uint64_t>(100 * s + 1)) << s << " s";
    // Backlogged throughout: at most one message's worth (3 units) short.
    EXPECT_GE(unitsSent() + 3, static_cast<std::uint64_t>(100 * s)) << s << " s";
  }
  run(seconds(5));
  EXPECT_EQ(unitsSent(), offered_units);
  EXPECT_EQ(sink_.submitted.size(), 600u);
}

TEST_F(WorkerCoreTest, AMessageNoUnitCanCarryIsRejectedWithTheCostModelsReason) {
  LengthCost cost;
  WorkerOptions o;
  o.cost = &cost;
  make(o);
  core_->upsertCampaign(campaign("a", 100, 1), clock_.now());
  core_->offer(raw(0, "a", 0, "!"), clock_.now());
  core_->offer(raw(1, "a", 0, "ok"), clock_.now());
  run(seconds(1));
  ASSERT_EQ(sink_.submitted.size(), 1u);
  const DeliveryRecord& r = ledger_.byId.at("m0-0");
  EXPECT_EQ(r.status, DeliveryStatus::kRejected);
  EXPECT_NE(r.reason.find("no room for this text"), std::string::npos) << r.reason;
  EXPECT_EQ(committed(), 2);
}

TEST_F(WorkerCoreTest, TheProvidersIdGoesIntoTheRowAndReceiptsReachTheLedgerThroughAnOutage) {
  make();
  core_->upsertProvider(ProviderInfo{"sms", std::nullopt}, clock_.now());
  core_->upsertCampaign(campaign("a", std::nullopt, 1, "sms"), clock_.now());
  sink_.answer = [](const Message& m) {
    SendResult r;
    r.provider_message_id = "smsc-" + m.id;
    return r;
  };
  core_->offer(raw(0, "a"), clock_.now());
  run(milliseconds(100));
  const DeliveryRecord& row = ledger_.byId.at("m0-0");
  EXPECT_EQ(row.provider, "sms");
  EXPECT_EQ(row.provider_message_id, "smsc-m0-0");

  // A receipt while the ledger is down is kept and written once it is back.
  ledger_.available = false;
  DeliveryReceipt receipt;
  receipt.provider = "sms";
  receipt.provider_message_id = "smsc-m0-0";
  receipt.status = ReceiptStatus::kDelivered;
  sink_.receipts.push_back(receipt);
  run(seconds(2));
  EXPECT_TRUE(ledger_.receipts.empty());
  EXPECT_EQ(core_->stats().pending_receipts, 1u);
  ledger_.available = true;
  run(seconds(2));
  ASSERT_EQ(ledger_.receipts.size(), 1u);
  EXPECT_EQ(ledger_.receipts[0].provider_message_id, "smsc-m0-0");
  EXPECT_EQ(core_->stats().pending_receipts, 0u);
  EXPECT_EQ(core_->stats().receipts, 1u);
}

// Receipts arriving steadily with no rows to write (the receipts of what was
// sent a moment ago) are written a batch per flush interval, not one write per
// step once the first interval has passed: each write is a PostgreSQL commit
// on the worker's loop.
TEST_F(WorkerCoreTest, ReceiptsAloneAreWrittenOncePerFlushInterval) {
  make();
  core_->upsertProvider(ProviderInfo{"sms", std::nullopt}, clock_.now());
  for (int i = 0; i < 200; ++i) {  // one receipt every 5 ms step, for 1 s
    DeliveryReceipt r;
    r.provider = "sms";
    r.provider_message_id = "smsc-" + std::to_string(i);
    r.status = ReceiptStatus::kDelivered;
    sink_.receipts.push_back(r);
    run(milliseconds(5));
  }
  run(milliseconds(100));
  EXPECT_EQ(ledger_.receipts.size(), 200u);
  EXPECT_LE(ledger_.calls, 21) << "1 s of receipts at a 50 ms flush interval";
  EXPECT_GE(ledger_.calls, 19);
}

DeliveryReceipt receiptFor(std::string id, std::uint64_t ack) {
  DeliveryReceipt r;
  r.provider = "sms";
  r.provider_message_id = std::move(id);
  r.status = ReceiptStatus::kDelivered;
  r.ack = ack;
  return r;
}

std::vector<std::uint64_t> acksOf(const std::vector<DeliveryReceipt>& rs) {
  std::vector<std::uint64_t> out;
  for (const DeliveryReceipt& r : rs) out.push_back(r.ack);
  return out;
}

// An SMSC forgets a receipt once it is acknowledged, so the sink may hear of
// a receipt (and acknowledge it) only after the ledger took it: never while
// the ledger fails, then exactly once.
TEST_F(WorkerCoreTest, TheSinkIsToldOfReceiptsOnlyOnceTheLedgerHoldsThemAndOnlyOnce) {
  make();
  std::vector<std::string> in_ledger_when_told;
  sink_.on_recorded = [&](std::span<const DeliveryReceipt> rs) {
    for (const DeliveryReceipt& r : rs) {
      const bool held = std::any_of(ledger_.receipts.begin(), ledger_.receipts.end(), [&](const DeliveryReceipt& l) {
        return l.provider_message_id == r.provider_message_id;
      });
      if (held) in_ledger_when_told.push_back(r.provider_message_id);
    }
  };
  ledger_.available = false;
  sink_.receipts = {receiptFor("x-1", 11), receiptFor("x-2", 12)};
  run(seconds(3));
  EXPECT_GT(ledger_.calls, 2) << "the write was tried, and failed, more than once";
  EXPECT_EQ(sink_.recorded_calls, 0);
  EXPECT_TRUE(sink_.recorded.empty());
  EXPECT_EQ(core_->stats().pending_receipts, 2u);

  ledger_.available = true;
  run(seconds(2));
  ASSERT_EQ(ledger_.receipts.size(), 2u);
  EXPECT_EQ(sink_.recorded_calls, 1);
  EXPECT_EQ(acksOf(sink_.recorded), (std::vector<std::uint64_t>{11, 12}));
  EXPECT_EQ(in_ledger_when_told, (std::vector<std::string>{"x-1", "x-2"}));

  sink_.receipts = {receiptFor("x-3", 13)};
  run(seconds(2));
  EXPECT_EQ(sink_.recorded_calls, 2);
  EXPECT_EQ(acksOf(sink_.recorded), (std::vector<std::uint64_t>{11, 12, 13})) << "each receipt told once";
  EXPECT_EQ(in_ledger_when_told.size(), 3u);
}

// The receipts' acknowledgements wait for the ledger write: the loop must
// wake for that write even when no delivery row waits.
TEST_F(WorkerCoreTest, APendingReceiptAloneWakesTheLoopForItsWrite) {
  make();
  sink_.receipts = {receiptFor("x-1", 1)};
  core_->step(clock_.now());
  ASSERT_EQ(core_->stats().pending_receipts, 1u);
  EXPECT_EQ(core_->nextWake(clock_.now(), seconds(1)), clock_.now() + milliseconds(50));
  clock_.advance(milliseconds(50));
  core_->step(clock_.now());
  EXPECT_EQ(acksOf(sink_.recorded), (std::vector<std::uint64_t>{1}));
}

TEST_F(WorkerCoreTest, ReceiptsWrittenByFlushOrWhileDrainingReachTheSinkToo) {
  make();
  sink_.receipts = {receiptFor("x-1", 21)};
  core_->step(clock_.now());  // taken from the sink; not due yet
  ASSERT_TRUE(sink_.recorded.empty());
  ledger_.available = false;
  EXPECT_FALSE(core_->flush(clock_.now()));
  EXPECT_TRUE(sink_.recorded.empty());
  ledger_.available = true;
  EXPECT_TRUE(core_->flush(clock_.now()));
  EXPECT_EQ(acksOf(sink_.recorded), (std::vector<std::uint64_t>{21}));

  core_->drain();
  sink_.receipts = {receiptFor("x-2", 22)};
  run(seconds(1));  // past the retry interval the failed flush started
  EXPECT_EQ(acksOf(sink_.recorded), (std::vector<std::uint64_t>{21, 22}));
  EXPECT_EQ(sink_.recorded_calls, 2);
}

}  // namespace
}  // namespace pacer
