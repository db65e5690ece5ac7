// A test's Kafka producer: records with a partition, a key and a message-id
// header, produced and flushed, every one acknowledged by the broker (the
// mock cluster, over TCP). Its checks are gtest assertions: call it under
// ASSERT_NO_FATAL_FAILURE where what follows needs the records.
#pragma once

#include <gtest/gtest.h>
#include <librdkafka/rdkafkacpp.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace pacer::testing {

// Counts a producer's delivery reports: how many records the broker
// acknowledged and how many it did not.
class DeliveryCounter : public RdKafka::DeliveryReportCb {
 public:
  void dr_cb(RdKafka::Message& m) override { (m.err() == RdKafka::ERR_NO_ERROR ? delivered : failed)++; }
  int delivered = 0;
  int failed = 0;
};

struct TestRecord {
  std::int32_t partition = 0;
  std::optional<std::string> key;
  std::optional<std::string> id;  // message-id header
  std::string value;
};

// `count` records for `campaign` (the key), record i on partition
// i % partitions with id "<campaign>-<i>" and value "payload <i>", i from `first`.
inline std::vector<TestRecord> campaignRecords(const std::string& campaign, int count, int partitions,
                                               int first = 0) {
  std::vector<TestRecord> out;
  for (int i = first; i < first + count; ++i)
    out.push_back(
        TestRecord{i % partitions, campaign, campaign + "-" + std::to_string(i), "payload " + std::to_string(i)});
  return out;
}

inline void produceRecords(const std::string& bootstraps, const std::string& topic,
                           const std::vector<TestRecord>& records) {
  DeliveryCounter reports;
  std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
  std::string err;
  ASSERT_EQ(conf->set("bootstrap.servers", bootstraps, err), RdKafka::Conf::CONF_OK) << err;
  ASSERT_EQ(conf->set("linger.ms", "5", err), RdKafka::Conf::CONF_OK) << err;
  ASSERT_EQ(conf->set("dr_cb", &reports, err), RdKafka::Conf::CONF_OK) << err;
  std::unique_ptr<RdKafka::Producer> producer(RdKafka::Producer::create(conf.get(), err));
  ASSERT_NE(producer, nullptr) << err;
  for (const TestRecord& r : records) {
    RdKafka::Headers* headers = RdKafka::Headers::create();
    if (r.id) headers->add("message-id", *r.id);
    RdKafka::ErrorCode e;
    do {
      e = producer->produce(topic, r.partition, RdKafka::Producer::RK_MSG_COPY, const_cast<char*>(r.value.data()),
                            r.value.size(), r.key ? r.key->data() : nullptr, r.key ? r.key->size() : 0, 0, headers,
                            nullptr);
      if (e == RdKafka::ERR__QUEUE_FULL) producer->poll(10);
    } while (e == RdKafka::ERR__QUEUE_FULL);
    if (e != RdKafka::ERR_NO_ERROR) delete headers;  // kept by librdkafka only on success
    ASSERT_EQ(e, RdKafka::ERR_NO_ERROR) << RdKafka::err2str(e);
    producer->poll(0);
  }
  ASSERT_EQ(producer->flush(20000), RdKafka::ERR_NO_ERROR);
  ASSERT_EQ(reports.delivered, static_cast<int>(records.size()));
  ASSERT_EQ(reports.failed, 0);
}

}  // namespace pacer::testing
