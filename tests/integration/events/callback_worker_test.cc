// HTTP callbacks end to end: ledger rows written through the real PostgreSQL
// ledger with callbacks on, POSTed by the callback worker to a loopback HTTP
// receiver, and matched against the ledger by message id and event id.
#include "pacer/events/callback_worker.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <set>
#include <string>
#include <vector>

#include "pacer/ledger/pg_ledger.h"
#include "pacer/logging/logging.h"
#include "pacer/sink.h"
#include "support/http_receiver.h"
#include "support/postgres_server.h"
#include "support/wait_until.h"

namespace pacer::events {
namespace {

using pacer::testing::HttpReceiver;
using pacer::testing::PostgresServer;
using pacer::testing::ReceivedRequest;
using pacer::testing::waitUntil;
using std::chrono::milliseconds;

class CallbackWorkerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = std::make_unique<PostgresServer>(); }
  static void TearDownTestSuite() { server_.reset(); }

  void SetUp() override {
    const std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    pg_.conninfo = server_->createDatabase("t_" + name);
    pg_.connect_timeout_s = 2;
    ledger::migrate(pg_);
    pg_.callback_worker = "worker-a";
  }

  void exec(const std::string& sql) {
    pqxx::connection c(pg_.conninfo);
    pqxx::work tx(c);
    tx.exec(sql);
    tx.commit();
  }

  std::int64_t scalar(const std::string& sql) {
    pqxx::connection c(pg_.conninfo);
    pqxx::read_transaction tx(c);
    return tx.exec1(sql)[0].as<std::int64_t>();
  }

  void campaign(const std::string& id, const std::string& url) {
    exec(fmt::format("INSERT INTO campaigns (id, callback_url) VALUES ('{}', {})", id,
                     url.empty() ? "NULL" : "'" + url + "'"));
  }

  static DeliveryRecord row(const std::string& campaign, std::int64_t offset, DeliveryStatus status) {
    DeliveryRecord r;
    r.message_id = fmt::format("{}-m-{}", campaign, offset);
    r.campaign = campaign;
    r.topic = "messages";
    r.partition = 0;
    r.offset = offset;
    r.status = status;
    r.reason = status == DeliveryStatus::kSent ? "" : "a reason";
    r.fingerprint = static_cast<std::uint64_t>(offset) + 1;
    r.provider = "sms-a";
    r.provider_message_id = status == DeliveryStatus::kSent ? fmt::format("{}-p-{}", campaign, offset) : "";
    return r;
  }

  // `n` rows of each campaign, mixed statuses, in batches through the real ledger.
  void writeRows(LedgerInterface& ledger, const std::vector<std::string>& campaigns, std::int64_t n) {
    static constexpr DeliveryStatus kStatuses[] = {DeliveryStatus::kSent, DeliveryStatus::kSent,
                                                   DeliveryStatus::kFailed, DeliveryStatus::kRejected};
    std::vector<DeliveryRecord> batch;
    for (std::int64_t i = 0; i < n; ++i) {
      for (const std::string& c : campaigns) batch.push_back(row(c, i, kStatuses[i % 4]));
      if (batch.size() >= 100 || i + 1 == n) {
        ledger.record(batch);
        batch.clear();
      }
    }
  }

  CallbackWorkerOptions options() const {
    CallbackWorkerOptions o;
    o.pg = pg_;
    o.queue = 64;
    o.concurrency = 4;
    o.max_attempts = 5;
    o.timeout = milliseconds(2000);
    o.first_backoff = milliseconds(10);
    o.max_backoff = milliseconds(40);
    o.poll = milliseconds(10);
    return o;
  }

  static std::int64_t eventId(const ReceivedRequest& r) { return nlohmann::json::parse(r.body).at("event_id"); }

  static inline std::unique_ptr<PostgresServer> server_;
  ledger::PgLedgerOptions pg_;
  logging::LoggerPtr log_ = logging::makeLogger(stderr, logging::Format::kText);
};

// The receiver answers 500 to the first two POSTs of every event, then 200:
// each ledger row of the hooked campaign (outcomes and a receipt) has exactly
// one accepted callback, retried ones were POSTed exactly three times, the
// bodies carry the ledger's fields, and the campaign without a URL gets none.
TEST_F(CallbackWorkerTest, EveryLedgerRowOfAHookedCampaignGetsOneAcceptedCallbackAfterRetries) {
  std::mutex mu;
  std::map<std::int64_t, int> tries;  // by event id
  HttpReceiver receiver([&](const ReceivedRequest& r) {
    std::lock_guard<std::mutex> lock(mu);
    return ++tries[eventId(r)] <= 2 ? 500 : 200;
  });
  campaign("hooked", receiver.url("/hook?c=hooked"));
  campaign("plain", "");
  const auto ledger = ledger::makePgLedger(pg_);
  const std::int64_t n = 300;
  writeRows(*ledger, {"hooked", "plain"}, n);
  DeliveryReceipt receipt;
  receipt.provider = "sms-a";
  receipt.provider_message_id = "hooked-p-0";
  receipt.status = ReceiptStatus::kDelivered;
  receipt.received_at_ms = 1764172800000;
  ledger->recordReceipts(std::span<const DeliveryReceipt>(&receipt, 1));
  const std::int64_t expected = n + 1;
  ASSERT_EQ(scalar("SELECT count(*) FROM callback_outbox"), expected);  // none for "plain"

  CallbackWorker worker(options(), log_);
  worker.start();
  ASSERT_TRUE(waitUntil([&] { return worker.stats().sent == static_cast<std::uint64_t>(expected); },
                        milliseconds(60000), milliseconds(20)))
      << worker.stats().sent << " of " << expected;
  ASSERT_TRUE(waitUntil([&] { return scalar("SELECT count(*) FROM callback_outbox") == 0; }, milliseconds(10000),
                        milliseconds(20)));
  worker.stop();

  std::map<std::string, int> accepted_by_message;
  std::map<std::int64_t, int> posts_by_event;
  std::set<std::int64_t> accepted_events;
  for (const ReceivedRequest& r : receiver.requests()) {
    EXPECT_EQ(r.method, "POST");
    EXPECT_EQ(r.target, "/hook?c=hooked");
    EXPECT_EQ(r.headers.at("content-type"), "application/json");
    const nlohmann::json e = nlohmann::json::parse(r.body);
    EXPECT_EQ(e.at("campaign"), "hooked");
    EXPECT_EQ(r.headers.at("pacer-event-id"), std::to_string(eventId(r)));
    ++posts_by_event[eventId(r)];
    if (r.status != 200) continue;
    EXPECT_TRUE(accepted_events.insert(eventId(r)).second) << "accepted twice: " << r.body;
    ++accepted_by_message[e.at("kind").get<std::string>() + "/" + e.at("message_id").get<std::string>()];
  }
  // Every ledger row, and the receipt, exactly once.
  pqxx::connection c(pg_.conninfo);
  pqxx::read_transaction tx(c);
  std::size_t rows = 0;
  for (const auto& r : tx.exec("SELECT message_id FROM deliveries WHERE campaign = 'hooked'")) {
    ++rows;
    EXPECT_EQ(accepted_by_message["outcome/" + r[0].as<std::string>()], 1) << r[0].as<std::string>();
  }
  EXPECT_EQ(rows, static_cast<std::size_t>(n));
  EXPECT_EQ(accepted_by_message["receipt/hooked-m-0"], 1);
  EXPECT_EQ(accepted_by_message.size(), static_cast<std::size_t>(expected));
  // Duplicates only for what was retried: three POSTs per event, no more.
  EXPECT_EQ(posts_by_event.size(), static_cast<std::size_t>(expected));
  for (const auto& [id, posts] : posts_by_event) EXPECT_EQ(posts, 3) << id;
  const CallbackWorkerStats s = worker.stats();
  EXPECT_EQ(s.retried, static_cast<std::uint64_t>(2 * expected));
  EXPECT_EQ(s.failed, 0u);
}

// With outcome events on too, a callback carries the id of its outbox row
// (one id to dedupe on across the topic and the callback).
TEST_F(CallbackWorkerTest, ACallbackCarriesTheEventIdOfItsOutboxRow) {
  HttpReceiver receiver([](const ReceivedRequest&) { return 204; });
  campaign("hooked", receiver.url("/h"));
  pg_.outbox_worker = "worker-a";
  const auto ledger = ledger::makePgLedger(pg_);
  writeRows(*ledger, {"hooked"}, 20);
  std::map<std::string, std::int64_t> outbox_id;
  {
    pqxx::connection c(pg_.conninfo);
    pqxx::read_transaction tx(c);
    for (const auto& r : tx.exec("SELECT message_id, id FROM outbox"))
      outbox_id[r[0].as<std::string>()] = r[1].as<std::int64_t>();
  }
  ASSERT_EQ(outbox_id.size(), 20u);
  CallbackWorker worker(options(), log_);
  worker.start();
  ASSERT_TRUE(waitUntil([&] { return worker.stats().sent == 20; }, milliseconds(30000), milliseconds(20)));
  worker.stop();
  for (const ReceivedRequest& r : receiver.requests()) {
    const nlohmann::json e = nlohmann::json::parse(r.body);
    EXPECT_EQ(e.at("event_id").get<std::int64_t>(), outbox_id.at(e.at("message_id").get<std::string>()));
  }
  EXPECT_EQ(scalar("SELECT count(*) FROM outbox"), 20);  // the topic's rows are the drainer's, untouched
}

// A URL that answers 404 is given up on after one POST per event: counted,
// the rows leave the outbox; a URL that is down keeps failing until the
// attempts are spent; neither loses a row silently.
TEST_F(CallbackWorkerTest, RefusedAndUnreachableUrlsAreGivenUpOnAndCounted) {
  HttpReceiver receiver([](const ReceivedRequest&) { return 404; });
  campaign("gone", receiver.url("/nothing-here"));
  campaign("down", "http://127.0.0.1:1/closed");
  const auto ledger = ledger::makePgLedger(pg_);
  writeRows(*ledger, {"gone", "down"}, 10);
  CallbackWorkerOptions o = options();
  o.max_attempts = 3;
  CallbackWorker worker(o, log_);
  worker.start();
  ASSERT_TRUE(waitUntil([&] { return worker.stats().failed == 20; }, milliseconds(30000), milliseconds(20)))
      << worker.stats().failed;
  ASSERT_TRUE(waitUntil([&] { return scalar("SELECT count(*) FROM callback_outbox") == 0; }, milliseconds(10000),
                        milliseconds(20)));
  worker.stop();
  EXPECT_EQ(receiver.count(), 10u);  // one POST each: a 404 is not retried
  const CallbackWorkerStats s = worker.stats();
  EXPECT_EQ(s.sent, 0u);
  EXPECT_EQ(s.retried, 20u);  // "down": 3 attempts, 2 retries each
}

// A receiver that keeps answering 503: the worker holds at most `queue`
// events in memory, POSTs only those, and the rest wait in the outbox.
TEST_F(CallbackWorkerTest, AFullQueueLeavesTheRestInTheOutbox) {
  HttpReceiver receiver([](const ReceivedRequest&) { return 503; });
  campaign("slow", receiver.url("/busy"));
  const auto ledger = ledger::makePgLedger(pg_);
  writeRows(*ledger, {"slow"}, 50);
  CallbackWorkerOptions o = options();
  o.queue = 5;
  o.max_attempts = 1000;
  CallbackWorker worker(o, log_);
  worker.start();
  ASSERT_TRUE(waitUntil([&] { return receiver.count() >= 40; }, milliseconds(30000), milliseconds(20)));
  const CallbackWorkerStats s = worker.stats();
  worker.stop();
  EXPECT_EQ(s.queued, 5);
  std::set<std::int64_t> posted;
  for (const ReceivedRequest& r : receiver.requests()) posted.insert(eventId(r));
  EXPECT_EQ(posted.size(), 5u);
  EXPECT_EQ(scalar("SELECT count(*) FROM callback_outbox"), 50);  // nothing dropped
  EXPECT_EQ(s.failed, 0u);
}

// Callbacks off in the ledger (no worker id): no rows, whatever the campaigns say.
TEST_F(CallbackWorkerTest, WithCallbacksOffTheLedgerWritesNoCallbackRows) {
  campaign("hooked", "http://127.0.0.1:9/h");
  pg_.callback_worker.clear();
  const auto ledger = ledger::makePgLedger(pg_);
  writeRows(*ledger, {"hooked"}, 10);
  EXPECT_EQ(scalar("SELECT count(*) FROM deliveries"), 10);
  EXPECT_EQ(scalar("SELECT count(*) FROM callback_outbox"), 0);
}

// While the worker knows of no campaign with a URL (callbacks_wanted says
// false), the ledger statement carries no callbacks' CTE: the hooked
// campaign's rows get no callback row, outcome events still get theirs.
// Once it says true, the next writes get their callback rows, with the ids
// of their outbox rows, and only the hooked campaign's.
TEST_F(CallbackWorkerTest, NoCallbackRowsWhileNoCampaignIsKnownToHaveAUrl) {
  campaign("hooked", "http://127.0.0.1:9/h");
  campaign("plain", "");
  pg_.outbox_worker = "worker-a";
  auto wanted = std::make_shared<std::atomic<bool>>(false);
  pg_.callbacks_wanted = [wanted] { return wanted->load(); };
  const auto ledger = ledger::makePgLedger(pg_);
  writeRows(*ledger, {"hooked", "plain"}, 10);
  EXPECT_EQ(scalar("SELECT count(*) FROM outbox"), 20);
  EXPECT_EQ(scalar("SELECT count(*) FROM callback_outbox"), 0);
  wanted->store(true);
  std::vector<DeliveryRecord> later;
  for (std::int64_t i = 10; i < 15; ++i) {
    later.push_back(row("hooked", i, DeliveryStatus::kSent));
    later.push_back(row("plain", i, DeliveryStatus::kSent));
  }
  ledger->record(later);
  EXPECT_EQ(scalar("SELECT count(*) FROM callback_outbox"), 5);
  EXPECT_EQ(scalar("SELECT count(*) FROM callback_outbox c JOIN outbox o USING (id) WHERE c.campaign = 'hooked' "
                   "AND o.message_id = c.message_id AND c.message_id >= 'hooked-m-10'"),
            5);
}

}  // namespace
}  // namespace pacer::events
