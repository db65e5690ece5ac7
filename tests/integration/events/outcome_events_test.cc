// Outcome events end to end: ledger rows written through the real PostgreSQL
// ledger with the outbox on, published by the drainer to pacer-kafka-mock,
// consumed back and matched against the ledger by id; and a drainer that
// dies between the broker's acknowledgement and the outbox delete.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <librdkafka/rdkafkacpp.h>

#include <chrono>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "pacer/events/outcome_drainer.h"
#include "pacer/ledger/pg_ledger.h"
#include "pacer/ledger/pg_outbox.h"
#include "pacer/logging/logging.h"
#include "pacer/sink.h"
#include "support/kafka_mock_process.h"
#include "support/postgres_server.h"
#include "support/thrown.h"
#include "support/wait_until.h"

namespace pacer::events {
namespace {

using pacer::testing::KafkaMockOptions;
using pacer::testing::KafkaMockProcess;
using pacer::testing::PostgresServer;
using Clock = std::chrono::steady_clock;

constexpr int kPartitions = 4;

// An event as a consumer saw it.
struct Seen {
  std::string key;
  nlohmann::json value;
};

class OutcomeEventsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = std::make_unique<PostgresServer>(); }
  static void TearDownTestSuite() { server_.reset(); }

  void SetUp() override {
    const std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    pg_.conninfo = server_->createDatabase("t_" + name);
    pg_.connect_timeout_s = 2;
    ledger::migrate(pg_);
    pg_.outbox_worker = "worker-a";
    topic_ = "outcomes";
    KafkaMockOptions o;
    o.topics = {fmt::format("{}:{}", topic_, kPartitions)};
    kafka_ = std::make_unique<KafkaMockProcess>(o);
  }

  OutcomeDrainerOptions drainerOptions(std::size_t batch) const {
    OutcomeDrainerOptions o;
    o.brokers = kafka_->bootstraps();
    o.topic = topic_;
    o.pg = pg_;
    o.batch = batch;
    o.poll = std::chrono::milliseconds(10);
    o.ack_timeout = std::chrono::milliseconds(10000);
    return o;
  }

  static DeliveryRecord row(const std::string& id, std::int64_t offset, DeliveryStatus status) {
    DeliveryRecord r;
    r.message_id = id;
    r.campaign = fmt::format("camp-{}", offset % 7);
    r.topic = "messages";
    r.partition = static_cast<std::int32_t>(offset % 3);
    r.offset = offset;
    r.status = status;
    r.reason = status == DeliveryStatus::kSent ? "" : "a reason";
    r.fingerprint = static_cast<std::uint64_t>(offset) + 1;
    r.provider = "sms-a";
    r.provider_message_id = status == DeliveryStatus::kSent ? fmt::format("p-{}", offset) : "";
    return r;
  }

  // Writes `n` outcome rows from `first` in batches of 250 through the real
  // ledger, mixed statuses.
  void writeRows(LedgerInterface& ledger, std::int64_t first, std::int64_t n) {
    static constexpr DeliveryStatus kStatuses[] = {DeliveryStatus::kSent, DeliveryStatus::kSent,
                                                   DeliveryStatus::kFailed, DeliveryStatus::kRejected,
                                                   DeliveryStatus::kInvalidToken};
    std::vector<DeliveryRecord> batch;
    for (std::int64_t i = first; i < first + n; ++i) {
      batch.push_back(row(fmt::format("m-{}", i), i, kStatuses[i % 5]));
      if (batch.size() == 250 || i + 1 == first + n) {
        ledger.record(batch);
        batch.clear();
      }
    }
  }

  std::int64_t scalar(const std::string& sql) {
    pqxx::connection c(pg_.conninfo);
    pqxx::read_transaction tx(c);
    return tx.exec1(sql)[0].as<std::int64_t>();
  }

  // Rows of `worker` above its published-up-to cursor: not yet published.
  std::int64_t unpublished(const std::string& worker = "worker-a") {
    return scalar(fmt::format("SELECT count(*) FROM outbox WHERE worker = '{0}' AND id > coalesce((SELECT "
                              "published_up_to FROM outbox_cursor WHERE worker = '{0}'), 0)",
                              worker));
  }

  std::int64_t storedCursor(const std::string& worker = "worker-a") {
    return scalar(
        fmt::format("SELECT coalesce((SELECT published_up_to FROM outbox_cursor WHERE worker = '{}'), 0)", worker));
  }

  // Every record of the topic, read from the start until `expected` arrived
  // and nothing more came for a second (or 30 s passed).
  std::vector<Seen> consumeAll(std::size_t expected) {
    std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
    std::string err;
    conf->set("bootstrap.servers", kafka_->bootstraps(), err);
    conf->set("group.id", "events-test", err);
    conf->set("enable.auto.commit", "false", err);
    std::unique_ptr<RdKafka::KafkaConsumer> consumer(RdKafka::KafkaConsumer::create(conf.get(), err));
    EXPECT_TRUE(consumer) << err;
    std::vector<RdKafka::TopicPartition*> parts;
    for (int p = 0; p < kPartitions; ++p)
      parts.push_back(RdKafka::TopicPartition::create(topic_, p, RdKafka::Topic::OFFSET_BEGINNING));
    consumer->assign(parts);
    RdKafka::TopicPartition::destroy(parts);
    std::vector<Seen> out;
    const auto limit = Clock::now() + std::chrono::seconds(30);
    auto quiet_since = Clock::now();
    while (Clock::now() < limit) {
      std::unique_ptr<RdKafka::Message> m(consumer->consume(100));
      if (m->err() == RdKafka::ERR_NO_ERROR) {
        out.push_back(Seen{m->key() ? *m->key() : "",
                           nlohmann::json::parse(static_cast<const char*>(m->payload()),
                                                 static_cast<const char*>(m->payload()) + m->len())});
        quiet_since = Clock::now();
      } else if (out.size() >= expected && Clock::now() - quiet_since > std::chrono::seconds(1)) {
        break;
      }
    }
    consumer->close();
    return out;
  }

  // The ledger's (message_id -> status) and each event's message id count;
  // checks that every ledger row has an event and no event lacks a row.
  // Returns how many outcome events were duplicates.
  std::size_t matchOutcomes(const std::vector<Seen>& seen) {
    std::map<std::string, std::string> ledger;
    {
      pqxx::connection c(pg_.conninfo);
      pqxx::read_transaction tx(c);
      for (const auto& r : tx.exec("SELECT message_id, status, campaign FROM deliveries"))
        ledger[r[0].as<std::string>()] = r[1].as<std::string>() + "/" + r[2].as<std::string>();
    }
    std::map<std::string, int> events;
    std::map<std::int64_t, std::string> by_event_id;
    std::size_t duplicates = 0, without_row = 0;
    for (const Seen& s : seen) {
      if (s.value.at("kind") != "outcome") continue;
      const std::string id = s.value.at("message_id");
      const std::int64_t event_id = s.value.at("event_id");
      // A duplicate is the same event again (same id), never another event for the message.
      auto [it, fresh] = by_event_id.emplace(event_id, id);
      if (!fresh) {
        EXPECT_EQ(it->second, id);
        ++duplicates;
        continue;
      }
      ++events[id];
      EXPECT_EQ(s.key, s.value.at("campaign"));
      const auto row = ledger.find(id);
      if (row == ledger.end()) {
        ++without_row;
        continue;
      }
      EXPECT_EQ(row->second, std::string(s.value.at("status")) + "/" + std::string(s.value.at("campaign")));
    }
    EXPECT_EQ(without_row, 0u) << "events on the topic without a ledger row";
    std::size_t missing = 0, twice = 0;
    for (const auto& [id, status] : ledger) {
      const auto e = events.find(id);
      if (e == events.end()) ++missing;
      else if (e->second != 1) ++twice;
    }
    EXPECT_EQ(missing, 0u) << "ledger rows without an event";
    EXPECT_EQ(twice, 0u) << "ledger rows with two distinct events";
    return duplicates;
  }

  static std::unique_ptr<PostgresServer> server_;
  ledger::PgLedgerOptions pg_;
  std::string topic_;
  std::unique_ptr<KafkaMockProcess> kafka_;
  logging::LoggerPtr log_ = logging::makeLogger(nullptr, logging::Format::kText);
};
std::unique_ptr<PostgresServer> OutcomeEventsTest::server_;

TEST_F(OutcomeEventsTest, EveryLedgerRowHasExactlyOneEventMatchedById) {
  auto ledger = ledger::makePgLedger(pg_);
  writeRows(*ledger, 0, 3000);
  // A replay of rows already there adds no ledger row, so no event.
  writeRows(*ledger, 0, 250);
  // A reused id (another message under a held id) gets its own rejected row, and its event.
  DeliveryRecord clash = row("m-3", 9000, DeliveryStatus::kSent);
  ledger->record(std::vector<DeliveryRecord>{clash});
  EXPECT_EQ(scalar("SELECT count(*) FROM outbox"), 3001);
  OutcomeDrainer drainer(drainerOptions(400), log_);
  while (drainer.drainOnce() > 0) {
  }
  EXPECT_EQ(unpublished(), 0);
  EXPECT_EQ(storedCursor(), scalar("SELECT max(id) FROM outbox"));
  EXPECT_EQ(drainer.stats().published, 3001u);
  const std::vector<Seen> seen = consumeAll(3001);
  EXPECT_EQ(seen.size(), 3001u);
  EXPECT_EQ(matchOutcomes(seen), 0u);
}

TEST_F(OutcomeEventsTest, AReceiptThatChangesItsRowIsAnEventOfItsOwn) {
  auto ledger = ledger::makePgLedger(pg_);
  writeRows(*ledger, 0, 10);  // m-0 and m-1 sent, with provider ids p-0, p-1
  DeliveryReceipt delivered{"sms-a", "p-0", ReceiptStatus::kDelivered, "000", 1764172801000, 1764172802000, "stat"};
  DeliveryReceipt unknown{"sms-a", "p-none", ReceiptStatus::kUndelivered, "012", 0, 1764172802000, ""};
  ledger->recordReceipts(std::vector<DeliveryReceipt>{delivered, unknown});
  ledger->recordReceipts(std::vector<DeliveryReceipt>{delivered});  // the same again: no change, no event
  OutcomeDrainer drainer(drainerOptions(100), log_);
  while (drainer.drainOnce() > 0) {
  }
  const std::vector<Seen> seen = consumeAll(12);
  ASSERT_EQ(seen.size(), 12u);
  EXPECT_EQ(matchOutcomes(seen), 0u);
  std::map<std::string, nlohmann::json> receipts;
  for (const Seen& s : seen)
    if (s.value.at("kind") == "receipt") receipts[s.value.at("provider_message_id")] = s.value;
  ASSERT_EQ(receipts.size(), 2u);
  EXPECT_EQ(receipts["p-0"].at("message_id"), "m-0");
  EXPECT_EQ(receipts["p-0"].at("campaign"), "camp-0");
  EXPECT_EQ(receipts["p-0"].at("status"), "delivered");
  EXPECT_EQ(receipts["p-0"].at("reason"), "000 stat");
  EXPECT_EQ(receipts["p-0"].at("done_at_ms"), 1764172801000);
  EXPECT_EQ(receipts["p-0"].at("recorded_at_ms"), 1764172802000);
  // A receipt no delivery row names (yet) is published all the same, without a message.
  EXPECT_EQ(receipts["p-none"].at("message_id"), "");
  EXPECT_EQ(receipts["p-none"].at("status"), "undelivered");
}

TEST_F(OutcomeEventsTest, ACrashBetweenAckAndCursorRepublishesOnlyTheBatchInFlight) {
  auto ledger = ledger::makePgLedger(pg_);
  writeRows(*ledger, 0, 2500);
  std::size_t in_flight = 0;
  {
    OutcomeDrainer first(drainerOptions(500), log_);
    EXPECT_EQ(first.drainOnce(), 500u);
    EXPECT_EQ(first.drainOnce(), 500u);
    // The broker has the third batch; the worker dies before it stores the cursor.
    in_flight = first.publish().size();
    EXPECT_EQ(in_flight, 500u);
  }
  EXPECT_EQ(unpublished(), 1500);
  // More rows land while no drainer runs (the ledger writer goes on).
  writeRows(*ledger, 2500, 500);
  // The same worker id starts again and publishes what was left first.
  OutcomeDrainer second(drainerOptions(500), log_);
  while (second.drainOnce() > 0) {
  }
  EXPECT_EQ(unpublished(), 0);
  const std::vector<Seen> seen = consumeAll(3000 + in_flight);
  EXPECT_EQ(seen.size(), 3000u + in_flight);
  // Duplicates: exactly the batch that was in flight, each carrying its event id.
  EXPECT_EQ(matchOutcomes(seen), in_flight);
}

TEST_F(OutcomeEventsTest, ARestartResumesAfterTheStoredCursorWhileThePublishedRowsAreStillThere) {
  auto ledger = ledger::makePgLedger(pg_);
  writeRows(*ledger, 0, 2500);
  const std::int64_t first_id = scalar("SELECT min(id) FROM outbox");
  std::size_t in_flight = 0;
  {
    OutcomeDrainer first(drainerOptions(500), log_);
    EXPECT_EQ(first.drainOnce(), 500u);
    EXPECT_EQ(first.drainOnce(), 500u);
    in_flight = first.publish().size();  // acknowledged, the cursor not stored: then the worker dies
    EXPECT_EQ(in_flight, 500u);
  }
  // The published rows are not deleted one by one: the cursor says they are done.
  EXPECT_EQ(scalar("SELECT count(*) FROM outbox"), 2500);
  EXPECT_EQ(storedCursor(), first_id + 999);
  writeRows(*ledger, 2500, 500);
  // The running drainer of the same worker id, small batches, several in flight.
  OutcomeDrainerOptions o = drainerOptions(100);
  o.in_flight = 3;
  OutcomeDrainer second(o, log_);
  second.start();
  pacer::testing::waitUntil([&] { return second.stats().published >= 2000; }, std::chrono::seconds(30),
                            std::chrono::milliseconds(20));
  second.stop();
  // Not one of the 1000 rows at or below the cursor again; all of the rest.
  EXPECT_EQ(second.stats().published, 2000u);
  EXPECT_EQ(storedCursor(), first_id + 2999);
  // At the stop the rows the cursor covers went, in bulk.
  EXPECT_EQ(scalar("SELECT count(*) FROM outbox"), 0);
  const std::vector<Seen> seen = consumeAll(3000 + in_flight);
  EXPECT_EQ(seen.size(), 3000u + in_flight);
  // Duplicates: the batch that was in flight at the crash, nothing else.
  EXPECT_EQ(matchOutcomes(seen), in_flight);
}

// Two running drainers of one worker id would each move the cursor past rows the other's
// writer had not committed yet: the second refuses to start, naming the id, and takes over
// once the first is gone (its session, and the id's advisory lock, with it).
TEST_F(OutcomeEventsTest, ASecondDrainerOfTheSameWorkerIdRefusesWhileTheFirstRuns) {
  auto ledger = ledger::makePgLedger(pg_);
  writeRows(*ledger, 0, 300);
  auto first = std::make_unique<OutcomeDrainer>(drainerOptions(100), log_);
  EXPECT_EQ(first->drainOnce(), 100u);
  OutcomeDrainer second(drainerOptions(100), log_);
  const std::string refused = pacer::test_support::thrownBy<InvalidError>([&] { second.start(); });
  EXPECT_NE(refused.find("events.worker_id 'worker-a' is in use by another running pacerd"), std::string::npos)
      << refused;
  EXPECT_THROW(second.drainOnce(), ledger::OutboxWorkerBusyError);
  first.reset();
  while (second.drainOnce() > 0) {
  }
  EXPECT_EQ(unpublished(), 0);
  EXPECT_EQ(matchOutcomes(consumeAll(300)), 0u);
}

TEST_F(OutcomeEventsTest, TheRunningDrainerPublishesRowsAsTheyAreWrittenAndOnlyItsOwn) {
  ledger::PgLedgerOptions other = pg_;
  other.outbox_worker = "worker-b";
  auto theirs = ledger::makePgLedger(other);
  theirs->record(std::vector<DeliveryRecord>{row("b-1", 50000, DeliveryStatus::kSent)});
  OutcomeDrainer drainer(drainerOptions(100), log_);
  drainer.start();
  auto ledger = ledger::makePgLedger(pg_);
  writeRows(*ledger, 0, 1000);
  pacer::testing::waitUntil([&] { return drainer.stats().published >= 1000; }, std::chrono::seconds(30),
                     std::chrono::milliseconds(20));
  drainer.stop();
  EXPECT_EQ(drainer.stats().published, 1000u);
  // worker-b's row waits for worker-b.
  EXPECT_EQ(scalar("SELECT count(*) FROM outbox WHERE worker = 'worker-b'"), 1);
  EXPECT_EQ(scalar("SELECT count(*) FROM outbox WHERE worker = 'worker-a'"), 0);
  const std::vector<Seen> seen = consumeAll(1000);
  EXPECT_EQ(seen.size(), 1000u);
  for (const Seen& s : seen) EXPECT_NE(s.value.at("message_id"), "b-1");
}

TEST_F(OutcomeEventsTest, ThePipelinedDrainerKeepsUpWithAWriterAndPublishesEachRowOnce) {
  // Small batches and several in flight: reports of earlier batches arrive
  // while later ones are read and produced, rows land while it drains.
  OutcomeDrainerOptions o = drainerOptions(50);
  o.in_flight = 6;
  OutcomeDrainer drainer(o, log_);
  drainer.start();
  auto ledger = ledger::makePgLedger(pg_);
  for (std::int64_t first = 0; first < 6000; first += 1000) writeRows(*ledger, first, 1000);
  pacer::testing::waitUntil([&] { return drainer.stats().published >= 6000; }, std::chrono::seconds(60),
                            std::chrono::milliseconds(20));
  drainer.stop();
  EXPECT_EQ(drainer.stats().published, 6000u);
  EXPECT_EQ(drainer.stats().failed, 0u);
  EXPECT_EQ(scalar("SELECT count(*) FROM outbox"), 0);
  const std::vector<Seen> seen = consumeAll(6000);
  EXPECT_EQ(seen.size(), 6000u);
  EXPECT_EQ(matchOutcomes(seen), 0u);  // no duplicate without a crash
}

TEST_F(OutcomeEventsTest, AnEventTheProducerRefusesStaysInTheOutboxAndIsTriedAgainWhileTheRestGo) {
  OutcomeDrainerOptions o = drainerOptions(100);
  o.kafka["message.max.bytes"] = "1000";  // the producer refuses the one large event
  auto ledger = ledger::makePgLedger(pg_);
  writeRows(*ledger, 0, 250);
  DeliveryRecord large = row("m-large", 250, DeliveryStatus::kFailed);
  large.reason = std::string(2000, 'x');
  ledger->record(std::vector<DeliveryRecord>{large});
  writeRows(*ledger, 251, 249);
  OutcomeDrainer drainer(o, log_);
  drainer.start();
  // Everything else is published; the refused event fails again on each retry.
  pacer::testing::waitUntil([&] { return drainer.stats().published >= 499 && drainer.stats().failed >= 2; },
                            std::chrono::seconds(30), std::chrono::milliseconds(20));
  drainer.stop();
  EXPECT_EQ(drainer.stats().published, 499u);
  EXPECT_GE(drainer.stats().failed, 2u);
  EXPECT_EQ(scalar("SELECT count(*) FROM outbox"), 1);
  EXPECT_EQ(scalar("SELECT count(*) FROM outbox WHERE message_id = 'm-large'"), 1);
  const std::vector<Seen> seen = consumeAll(499);
  EXPECT_EQ(seen.size(), 499u);
  for (const Seen& s : seen) EXPECT_NE(s.value.at("message_id"), "m-large");
}

TEST_F(OutcomeEventsTest, WithEventsOffTheLedgerWritesNoOutboxRows) {
  ledger::PgLedgerOptions off = pg_;
  off.outbox_worker.clear();
  auto ledger = ledger::makePgLedger(off);
  writeRows(*ledger, 0, 500);
  DeliveryRecord clash = row("m-3", 9000, DeliveryStatus::kSent);
  ledger->record(std::vector<DeliveryRecord>{clash});
  ledger->recordReceipts(std::vector<DeliveryReceipt>{
      DeliveryReceipt{"sms-a", "p-0", ReceiptStatus::kDelivered, "", 0, 1764172802000, ""}});
  EXPECT_EQ(scalar("SELECT count(*) FROM deliveries"), 501);
  EXPECT_EQ(scalar("SELECT count(*) FROM receipts"), 1);
  EXPECT_EQ(scalar("SELECT count(*) FROM outbox"), 0);
}

}  // namespace
}  // namespace pacer::events
