#include "pacer/sinks/routing_sink.h"
#include "support/fakes.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace pacer::sink {
namespace {

using test_support::FakeSink;  // takes up to its capacity, answers each at the next poll()

Message msg(std::string campaign) {
  Message m;
  m.campaign = std::move(campaign);
  m.id = "id";
  return m;
}

struct Routed {
  FakeSink* fallback;
  FakeSink* sms;
  FakeSink* push;
  SinkInterfacePtr sink;
};

// Campaigns c-sms and c-sms2 belong to provider sms, c-push to push, c-other
// to a provider without a sink of its own, c-none to none.
Routed makeRouted(const std::map<std::string, std::string>& provider_of) {
  auto fallback = std::make_unique<FakeSink>(4);
  auto sms = std::make_unique<FakeSink>(2);
  auto push = std::make_unique<FakeSink>(3);
  Routed r{fallback.get(), sms.get(), push.get(), nullptr};
  std::map<std::string, SinkInterfacePtr, std::less<>> by;
  by["sms"] = std::move(sms);
  by["push"] = std::move(push);
  r.sink = makeRoutingSink(std::move(fallback), std::move(by), [&provider_of](std::string_view campaign) {
    auto it = provider_of.find(std::string(campaign));
    return it == provider_of.end() ? std::string_view() : std::string_view(it->second);
  });
  return r;
}

const std::map<std::string, std::string> kProviders{
    {"c-sms", "sms"}, {"c-sms2", "sms"}, {"c-push", "push"}, {"c-other", "email"}};

TEST(RoutingSink, EachMessageGoesThroughItsProvidersSinkElseTheDefault) {
  Routed r = makeRouted(kProviders);
  EXPECT_TRUE(r.sink->submit(msg("c-sms"), 1));
  EXPECT_TRUE(r.sink->submit(msg("c-push"), 2));
  EXPECT_TRUE(r.sink->submit(msg("c-other"), 3));  // provider without its own sink
  EXPECT_TRUE(r.sink->submit(msg("c-none"), 4));   // no provider
  EXPECT_TRUE(r.sink->submit(msg("c-sms2"), 5));
  EXPECT_EQ(r.sms->campaigns(), (std::vector<std::string>{"c-sms", "c-sms2"}));
  EXPECT_EQ(r.push->campaigns(), (std::vector<std::string>{"c-push"}));
  EXPECT_EQ(r.fallback->campaigns(), (std::vector<std::string>{"c-other", "c-none"}));
  EXPECT_EQ(r.sink->inFlight(), 5u);
  EXPECT_EQ(r.sink->maxInFlight(), 4u + 2u + 3u);
}

TEST(RoutingSink, AFullProviderSinkRefusesWithoutSpillingToTheDefault) {
  Routed r = makeRouted(kProviders);
  EXPECT_TRUE(r.sink->submit(msg("c-sms"), 1));
  EXPECT_TRUE(r.sink->submit(msg("c-sms"), 2));
  EXPECT_FALSE(r.sink->submit(msg("c-sms"), 3));  // sms holds 2
  EXPECT_TRUE(r.fallback->campaigns().empty());
  EXPECT_TRUE(r.sink->submit(msg("c-none"), 4));  // the others still take theirs
}

TEST(RoutingSink, EverySubmittedTicketComesBackExactlyOnce) {
  Routed r = makeRouted(kProviders);
  const std::vector<std::string> campaigns{"c-sms", "c-sms2", "c-push", "c-other", "c-none"};
  std::mt19937 rng(7);
  std::set<std::uint64_t> submitted;
  std::multiset<std::uint64_t> returned;
  std::uint64_t next = 1;
  for (int round = 0; round < 2000; ++round) {
    const int n = static_cast<int>(rng() % 6);
    for (int i = 0; i < n; ++i) {
      if (r.sink->submit(msg(campaigns[rng() % campaigns.size()]), next)) submitted.insert(next);
      ++next;
    }
    if (rng() % 3 == 0) {
      std::vector<SendResult> out;
      r.sink->poll(out);
      for (const SendResult& s : out) returned.insert(s.ticket);
    }
  }
  std::vector<SendResult> out;
  r.sink->poll(out);
  for (const SendResult& s : out) returned.insert(s.ticket);
  EXPECT_GT(submitted.size(), 1000u);
  EXPECT_EQ(returned.size(), submitted.size());
  EXPECT_EQ(std::set<std::uint64_t>(returned.begin(), returned.end()), submitted);
  EXPECT_EQ(r.sink->inFlight(), 0u);
}

TEST(RoutingSink, WaitIsSharedAmongTheBusySinks) {
  Routed r = makeRouted(kProviders);
  r.sink->wait(std::chrono::milliseconds(10));  // nothing in flight: the default sink's wait
  EXPECT_EQ(r.fallback->waits, (std::vector<Nanos>{std::chrono::milliseconds(10)}));
  r.sink->submit(msg("c-sms"), 1);
  r.sink->submit(msg("c-push"), 2);
  r.sink->wait(std::chrono::milliseconds(10));
  EXPECT_EQ(r.sms->waits, (std::vector<Nanos>{std::chrono::milliseconds(5)}));
  EXPECT_EQ(r.push->waits, (std::vector<Nanos>{std::chrono::milliseconds(5)}));
  EXPECT_EQ(r.fallback->waits.size(), 1u);
}

// Receipts come from every sink; that they are recorded reaches every sink,
// each of which acknowledges only its own handles (SMPP's are unique in the
// process), so the router need not remember where each came from.
TEST(RoutingSink, ReceiptsComeFromEverySinkAndTheirRecordingReachesEverySink) {
  Routed r = makeRouted(kProviders);
  DeliveryReceipt a, b;
  a.provider_message_id = "a";
  a.ack = 1;
  b.provider_message_id = "b";
  b.ack = 2;
  r.sms->receipts = {a};
  r.fallback->receipts = {b};
  std::vector<DeliveryReceipt> got;
  r.sink->pollReceipts(got);
  ASSERT_EQ(got.size(), 2u);
  r.sink->receiptsRecorded(got);
  for (FakeSink* s : {r.fallback, r.sms, r.push}) {
    EXPECT_EQ(s->recorded_calls, 1);
    ASSERT_EQ(s->recorded.size(), 2u);
    EXPECT_EQ(s->recorded[0].ack + s->recorded[1].ack, 3u);
  }
}

TEST(RoutingSink, WithoutProviderSinksEverythingGoesToTheDefault) {
  auto fallback = std::make_unique<FakeSink>(4);
  FakeSink* f = fallback.get();
  int lookups = 0;
  SinkInterfacePtr s = makeRoutingSink(std::move(fallback), {}, [&lookups](std::string_view) {
    ++lookups;
    return std::string_view("sms");
  });
  EXPECT_TRUE(s->submit(msg("c-sms"), 1));
  EXPECT_EQ(f->campaigns().size(), 1u);
  EXPECT_EQ(lookups, 0);
}

}  // namespace
}  // namespace pacer::sink
