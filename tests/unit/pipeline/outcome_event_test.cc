// Outcome events: the JSON each event is published as (parsed back by an
// independent JSON parser), and the bookkeeping of one batch between produce
// and the broker's acknowledgements.
#include "pacer/outcome_event.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <set>

namespace pacer {
namespace {

OutcomeEvent sample() {
  OutcomeEvent e;
  e.id = 42;
  e.kind = "outcome";
  e.message_id = "m-1";
  e.campaign = "otp";
  e.status = "failed";
  e.reason = "provider said 500";
  e.provider = "sms-a";
  e.provider_message_id = "abc";
  e.attempts = 3;
  e.recorded_at_ms = 1764172800123;
  return e;
}

TEST(OutcomeEventTest, EncodesEveryFieldUnderItsName) {
  const nlohmann::json j = nlohmann::json::parse(encodeOutcomeEvent(sample()));
  EXPECT_EQ(j.at("event_id"), 42);
  EXPECT_EQ(j.at("kind"), "outcome");
  EXPECT_EQ(j.at("message_id"), "m-1");
  EXPECT_EQ(j.at("campaign"), "otp");
  EXPECT_EQ(j.at("status"), "failed");
  EXPECT_EQ(j.at("reason"), "provider said 500");
  EXPECT_EQ(j.at("provider"), "sms-a");
  EXPECT_EQ(j.at("provider_message_id"), "abc");
  EXPECT_EQ(j.at("attempts"), 3);
  EXPECT_EQ(j.at("recorded_at_ms"), 1764172800123);
  EXPECT_FALSE(j.contains("done_at_ms"));  // 0: not said
}

TEST(OutcomeEventTest, AReceiptCarriesTheProvidersDoneTime) {
  OutcomeEvent e = sample();
  e.kind = "receipt";
  e.status = "delivered";
  e.done_at_ms = 1764172801000;
  const nlohmann::json j = nlohmann::json::parse(encodeOutcomeEvent(e));
  EXPECT_EQ(j.at("kind"), "receipt");
  EXPECT_EQ(j.at("done_at_ms"), 1764172801000);
}

TEST(OutcomeEventTest, AnyStatusTextIsCopiedAsItIs) {
  // A status the ledger gains later (expired, ...) needs no change here.
  OutcomeEvent e = sample();
  e.status = "expired";
  EXPECT_EQ(nlohmann::json::parse(encodeOutcomeEvent(e)).at("status"), "expired");
}

TEST(OutcomeEventTest, QuotesControlCharactersAndBackslashesSoTheValueParses) {
  OutcomeEvent e = sample();
  e.reason = std::string("a \"quoted\" \\ reason\nwith\ttabs and \x01 a NUL ") + std::string(1, '\0') + "end";
  const nlohmann::json j = nlohmann::json::parse(encodeOutcomeEvent(e));
  EXPECT_EQ(j.at("reason"), e.reason);
}

TEST(OutcomeEventTest, KeepsValidUtf8AndReplacesInvalidBytes) {
  OutcomeEvent e = sample();
  e.reason = "caf\xc3\xa9 \xf0\x9f\x93\xb1";  // é and a phone emoji
  EXPECT_EQ(nlohmann::json::parse(encodeOutcomeEvent(e)).at("reason"), e.reason);
  e.reason = "bad \xff\xc3( \xed\xa0\x80 end";  // a stray byte, a cut sequence, a surrogate
  const nlohmann::json j = nlohmann::json::parse(encodeOutcomeEvent(e));
  EXPECT_EQ(j.at("reason"), "bad \xef\xbf\xbd\xef\xbf\xbd( \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd end");
}

TEST(OutcomeEventTest, RandomBytesAlwaysGiveParsableJson) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> byte(0, 255), len(0, 40);
  for (int i = 0; i < 2000; ++i) {
    OutcomeEvent e = sample();
    e.reason.clear();
    for (int k = len(rng); k > 0; --k) e.reason.push_back(static_cast<char>(byte(rng)));
    EXPECT_NO_THROW(nlohmann::json::parse(encodeOutcomeEvent(e))) << i;
  }
}

TEST(OutboxBatchTest, CompleteOnlyWhenEveryIdHasItsReport) {
  OutboxBatch b;
  b.start({5, 6, 7});
  EXPECT_FALSE(b.complete());
  EXPECT_TRUE(b.report(6, true));
  EXPECT_TRUE(b.report(5, false));
  EXPECT_EQ(b.pending(), 1u);
  EXPECT_FALSE(b.complete());
  EXPECT_TRUE(b.report(7, true));
  EXPECT_TRUE(b.complete());
  EXPECT_EQ(b.failed(), 1u);
  // Only what the broker acknowledged may leave the outbox; 5 goes again.
  EXPECT_EQ(b.acknowledged(), (std::vector<std::int64_t>{6, 7}));
}

TEST(OutboxBatchTest, IgnoresUnknownAndRepeatedReports) {
  OutboxBatch b;
  b.start({1, 2});
  EXPECT_FALSE(b.report(3, true));   // not in the batch
  EXPECT_TRUE(b.report(1, false));
  EXPECT_FALSE(b.report(1, true));   // a second report does not turn a failure into an ack
  EXPECT_EQ(b.pending(), 1u);
  EXPECT_TRUE(b.acknowledged().empty());
}

TEST(OutboxBatchTest, ANewBatchForgetsTheOldOne) {
  OutboxBatch b;
  b.start({1, 2});
  b.report(1, true);
  b.start({3});
  EXPECT_FALSE(b.report(2, true));  // a late report of the old batch
  EXPECT_EQ(b.pending(), 1u);
  EXPECT_EQ(b.failed(), 0u);
  EXPECT_TRUE(b.acknowledged().empty());
}

TEST(OutboxBatchTest, AcknowledgedIsExactlyTheAckedSetInOrder) {
  // Reports in random order, some failed: what may be deleted is exactly
  // the acknowledged ids, ascending, never a failed or unreported one.
  std::mt19937 rng(11);
  for (int round = 0; round < 200; ++round) {
    std::vector<std::int64_t> ids;
    for (std::int64_t id = 100; id < 100 + 1 + static_cast<std::int64_t>(rng() % 50); ++id) ids.push_back(id);
    OutboxBatch b;
    b.start(ids);
    std::shuffle(ids.begin(), ids.end(), rng);
    std::set<std::int64_t> acked;
    const std::size_t reported = rng() % (ids.size() + 1);
    for (std::size_t i = 0; i < reported; ++i) {
      const bool ok = rng() % 3 != 0;
      b.report(ids[i], ok);
      if (ok) acked.insert(ids[i]);
    }
    EXPECT_EQ(b.complete(), reported == ids.size());
    EXPECT_EQ(b.pending(), ids.size() - reported);
    EXPECT_EQ(b.acknowledged(), std::vector<std::int64_t>(acked.begin(), acked.end()));
  }
}

}  // namespace
}  // namespace pacer
