// pacerd's consumer (KafkaIngest) on pacer-kafka-mock, feeding a WorkerCore on
// the in-memory fakes: how reading is held back at the memory bound.
#include <gtest/gtest.h>
#include <librdkafka/rdkafkacpp.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "pacer/ingest/kafka_ingest.h"
#include "pacer/logging/logging.h"
#include "pacer/worker.h"
#include "support/fakes.h"
#include "support/kafka_test_producer.h"
#include "support/kafka_mock_process.h"
#include "support/wait_until.h"

namespace pacer {
namespace {

using namespace std::chrono_literals;

CampaignInfo ratedCampaign(const std::string& id, double rate, double burst) {
  CampaignInfo c;
  c.id = id;
  c.limit = RateLimit{rate, burst};
  return c;
}

// Produces `count` records of campaign `key` to one partition of `topic`, ids "<key>-<first + i>".
void produceKeyed(const std::string& bootstraps, const std::string& topic, int partition, const std::string& key,
                  int first, int count) {
  std::vector<testing::TestRecord> records = testing::campaignRecords(key, count, 1, first);
  for (testing::TestRecord& r : records) r.partition = partition;
  ASSERT_NO_FATAL_FAILURE(testing::produceRecords(bootstraps, topic, records));
}

// The slow campaign's backlog cannot park (PostgreSQL is slow or away), so it fills the bound
// and stays there. A fast campaign's messages arriving on another partition are still read and
// sent; the backlog's partition stays paused, and memory stays under 5/4 of the bound.
TEST(KafkaIngestBound, ACampaignThatKeepsUpIsReadWhileAnothersBacklogFillsTheBound) {
  testing::KafkaMockOptions mo;
  mo.topics = {"t:2"};
  testing::KafkaMockProcess mock(mo);
  test_support::FakeLedger ledger;
  test_support::FakeSink sink(100);
  test_support::FakeParking parking;
  parking.available = false;
  WorkerOptions o;
  o.park_min_keep = 10;
  o.park_keep_for = 5s;
  o.max_buffered_messages = 1000;
  const TimeSourcePtr clock = makeSteadyTimeSource();
  WorkerCore core(o, ledger, sink, &parking, clock->now());
  core.upsertCampaign(ratedCampaign("slow", 1, 1), clock->now());
  core.upsertCampaign(ratedCampaign("fast", 1000, 100), clock->now());
  ingest::KafkaIngestOptions io;
  io.brokers = mock.bootstraps();
  io.topics = {"t"};
  io.group = "ingest-bound";
  io.session_timeout_ms = 6000;  // the mock needs more than 3000
  ingest::KafkaIngest ingest(io, core, ledger, *clock, logging::makeLogger(nullptr, logging::Format::kText));
  ingest.start();
  const auto turn = [&] {  // as pacerd's loop
    ingest.limit();
    ingest.poll(20ms, 2000, nullptr);
    core.step(clock->now());
  };
  const auto sentOf = [&](const std::string& campaign) {
    return std::count_if(sink.submitted.begin(), sink.submitted.end(),
                         [&](const Message& m) { return m.campaign == campaign; });
  };

  produceKeyed(mock.bootstraps(), "t", 1, "slow", 0, 3000);
  ASSERT_TRUE(testing::waitUntil(
      [&] {
        turn();
        return ingest.paused();
      },
      30s))
      << "the backlog fills the bound";
  EXPECT_GE(core.stats().buffered_messages, 1000u);

  produceKeyed(mock.bootstraps(), "t", 0, "fast", 0, 500);
  EXPECT_TRUE(testing::waitUntil(
      [&] {
        turn();
        return sentOf("fast") == 500;
      },
      30s))
      << "read and sent while the bound is full: " << sentOf("fast") << " of 500";
  EXPECT_TRUE(ingest.paused()) << "the backlog's partition stays paused";
  EXPECT_LT(core.stats().buffered_messages, 1250u) << "within 5/4 of the bound";
  EXPECT_LT(core.stats().buffered_messages + sentOf("slow"), 3000u) << "the backlog was not all read";
}

}  // namespace
}  // namespace pacer
