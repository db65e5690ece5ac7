// pacerd's consumer (KafkaIngest) on pacer-kafka-mock, feeding a WorkerCore on
// the in-memory fakes: how reading is held back at the memory bound.
#include <gtest/gtest.h>
#include <librdkafka/rdkafkacpp.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>

#include "pacer/ingest/kafka_ingest.h"
#include "pacer/logging/logging.h"
#include "pacer/worker.h"
#include "support/fakes.h"
#include "support/kafka_delivery_counter.h"
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
  testing::DeliveryCounter reports;
  std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
  std::string err;
  ASSERT_EQ(conf->set("bootstrap.servers", bootstraps, err), RdKafka::Conf::CONF_OK) << err;
  ASSERT_EQ(conf->set("dr_cb", &reports, err), RdKafka::Conf::CONF_OK) << err;
  std::unique_ptr<RdKafka::Producer> producer(RdKafka::Producer::create(conf.get(), err));
  ASSERT_NE(producer, nullptr) << err;
  for (int i = first; i < first + count; ++i) {
    RdKafka::Headers* headers = RdKafka::Headers::create();
    headers->add("message-id", key + "-" + std::to_string(i));
    const std::string value = "p";
    const RdKafka::ErrorCode e = producer->produce(topic, partition, RdKafka::Producer::RK_MSG_COPY,
                                                   const_cast<char*>(value.data()), value.size(), key.data(),
                                                   key.size(), 0, headers, nullptr);
    if (e != RdKafka::ERR_NO_ERROR) delete headers;  // kept by librdkafka only on success
    ASSERT_EQ(e, RdKafka::ERR_NO_ERROR) << RdKafka::err2str(e);
    producer->poll(0);
  }
  ASSERT_EQ(producer->flush(10000), RdKafka::ERR_NO_ERROR);
  ASSERT_EQ(reports.delivered, count);
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
