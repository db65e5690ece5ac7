// The PostgreSQL ledger against a real PostgreSQL server started for this test.
#include "pacer/ledger/pg_ledger.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <map>
#include <set>
#include <mutex>
#include <thread>

#include <memory>
#include <optional>
#include <pqxx/pqxx>

#include "pacer/ledger/pg_directory.h"
#include "pacer/ledger/ledger_writer.h"
#include "pacer/ledger/park_writer.h"
#include "pacer/ledger/pg_parking.h"
#include "pacer/sink.h"
#include "pacer/time.h"
#include "pacer/worker.h"
#include "support/fakes.h"
#include "support/postgres_server.h"
#include "support/wait_until.h"

namespace pacer::ledger {
namespace {

using pacer::testing::PostgresServer;

class PgLedgerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = std::make_unique<PostgresServer>(); }
  static void TearDownTestSuite() { server_.reset(); }

  void SetUp() override {
    const std::string db = "t_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name());
    options_.conninfo = server_->createDatabase(db);
    options_.connect_timeout_s = 2;
  }

  DeliveryRecord row(const std::string& id, std::int64_t offset, DeliveryStatus status = DeliveryStatus::kSent,
                     const std::string& reason = "") {
    DeliveryRecord r;
    r.message_id = id;
    r.campaign = "camp-1";
    r.topic = "messages";
    r.partition = 3;
    r.offset = offset;
    r.status = status;
    r.reason = reason;
    return r;
  }

  std::int64_t count(const std::string& where = "true") {
    pqxx::connection c(options_.conninfo);
    pqxx::read_transaction tx(c);
    return tx.exec1("SELECT count(*) FROM deliveries WHERE " + where)[0].as<std::int64_t>();
  }

  static std::unique_ptr<PostgresServer> server_;
  PgLedgerOptions options_;
};
std::unique_ptr<PostgresServer> PgLedgerTest::server_;

TEST_F(PgLedgerTest, MigrateAppliesEveryVersionOnceAndIsIdempotent) {
  const int applied = migrate(options_);
  EXPECT_EQ(migrate(options_), 0);
  pqxx::connection c(options_.conninfo);
  pqxx::read_transaction tx(c);
  EXPECT_EQ(tx.exec1("SELECT count(*) FROM pacer_schema_migrations")[0].as<int>(), applied);
  EXPECT_EQ(tx.exec1("SELECT max(version) FROM pacer_schema_migrations")[0].as<int>(), latestSchemaVersion());
  EXPECT_EQ(tx.exec1("SELECT count(*) FROM information_schema.tables WHERE table_name IN "
                     "('campaigns', 'providers', 'deliveries')")[0]
                .as<int>(),
            3);
}

TEST_F(PgLedgerTest, TakesAPostgresqlUrlAsWellAsKeywords) {
  // The connect timeout is added in the URL's own syntax (PACER_POSTGRES may be either).
  const std::string db = "t_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name());
  const PgLedgerOptions url{fmt::format("postgresql://postgres@127.0.0.1:{}/{}", server_->port(), db), 2};
  EXPECT_GT(migrate(url), 0);
  auto ledger = makePgLedger(url);
  EXPECT_EQ(ledger->record(std::vector<DeliveryRecord>{row("m-1", 1)}), 1u);
  EXPECT_EQ(count(), 1);
}

TEST_F(PgLedgerTest, RefusesADatabaseNewerThanThisBuild) {
  migrate(options_);
  {
    pqxx::connection c(options_.conninfo);
    pqxx::work tx(c);
    tx.exec("INSERT INTO pacer_schema_migrations (version, name) VALUES (999, 'from the future')");
    tx.commit();
  }
  EXPECT_THROW(migrate(options_), LedgerRejectedError);
}

TEST_F(PgLedgerTest, RecordsABatchAndTheFirstOutcomeWins) {
  migrate(options_);
  auto ledger = makePgLedger(options_);
  std::vector<DeliveryRecord> batch;
  for (int i = 0; i < 1000; ++i) batch.push_back(row("m-" + std::to_string(i), 100 + i));
  batch[7] = row("m-7", 107, DeliveryStatus::kRejected, "unknown campaign \"x\", with a \\ backslash");
  EXPECT_EQ(ledger->record(batch), 1000u);
  EXPECT_EQ(count(), 1000);
  EXPECT_EQ(count("status = 'rejected' AND reason = 'unknown campaign \"x\", with a \\ backslash'"), 1);

  // A replayed message is not recorded twice, and its first outcome stays.
  std::vector<DeliveryRecord> replay{row("m-7", 107, DeliveryStatus::kSent), row("m-1000", 1100)};
  EXPECT_EQ(ledger->record(replay), 1u);
  EXPECT_EQ(count(), 1001);
  EXPECT_EQ(count("message_id = 'm-7' AND status = 'rejected'"), 1);
}

// Another message under an id the ledger holds (another fingerprint, another
// Kafka record) gets a row of its own saying so; a replay of the same record
// (same fingerprint, or the same position) is still recorded once.
TEST_F(PgLedgerTest, AReusedIdWithOtherContentGetsItsOwnRowNeverASilentSkip) {
  migrate(options_);
  auto ledger = makePgLedger(options_);
  DeliveryRecord first = row("order-42", 10);
  first.fingerprint = 111;
  EXPECT_EQ(ledger->record(std::vector<DeliveryRecord>{first}), 1u);
  DeliveryRecord other = row("order-42", 25, DeliveryStatus::kFailed, "HTTP 400: bad number");
  other.fingerprint = 222;
  DeliveryRecord replay = first;  // the same record read again
  EXPECT_EQ(ledger->record(std::vector<DeliveryRecord>{other, replay}), 1u);
  EXPECT_EQ(count("message_id = 'order-42'"), 1);
  EXPECT_EQ(count("message_id = 'order-42@messages/3/25' AND status = 'rejected' AND kafka_offset = 25 AND "
                  "reason = 'message id ''order-42'' already names another message (at messages/3/10); this one "
                  "was failed under it: HTTP 400: bad number'"),
            1);
  EXPECT_EQ(ledger->finishedOffsets("messages", 3, 0, 100), (std::vector<std::int64_t>{10, 25}));
  // Written again (a retried batch): nothing more.
  EXPECT_EQ(ledger->record(std::vector<DeliveryRecord>{other}), 0u);
  EXPECT_EQ(count(), 2);
}

// A dead push token: an invalid_token delivery row, and one invalid_tokens
// row per (provider, token) counting the new delivery rows that hit it.
DeliveryRecord deadToken(DeliveryRecord r, const std::string& provider, const std::string& token,
                         std::int64_t since_ms = 0, const std::string& reason = "invalid token: Unregistered") {
  r.status = DeliveryStatus::kInvalidToken;
  r.reason = reason;
  r.provider = provider;
  r.token = token;
  r.invalid_since_ms = since_ms;
  return r;
}

struct TokenRow {
  std::string campaign, reason, provider_timestamp;  // provider_timestamp "" when NULL
  int hits = 0;
  bool first_before_last = false;
};

TEST_F(PgLedgerTest, AnInvalidTokenRowIsCountedInInvalidTokensInTheSameBatch) {
  migrate(options_);
  auto ledger = makePgLedger(options_);
  auto token = [&](const std::string& provider, const std::string& t) {
    pqxx::connection c(options_.conninfo);
    pqxx::read_transaction tx(c);
    const pqxx::result r = tx.exec_params(
        "SELECT campaign, reason, coalesce(to_char(provider_timestamp AT TIME ZONE 'UTC', "
        "'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), ''), hits, first_seen < last_seen FROM invalid_tokens "
        "WHERE provider = $1 AND token = $2",
        provider, t);
    if (r.empty()) return std::optional<TokenRow>();
    return std::optional<TokenRow>(TokenRow{r[0][0].as<std::string>(), r[0][1].as<std::string>(),
                                            r[0][2].as<std::string>(), r[0][3].as<int>(), r[0][4].as<bool>()});
  };
  auto tokens = [&] {
    pqxx::connection c(options_.conninfo);
    pqxx::read_transaction tx(c);
    return tx.exec1("SELECT count(*) FROM invalid_tokens")[0].as<std::int64_t>();
  };
  // One batch: two messages to the same dead token (the first campaign
  // stays, the last reason wins, the provider's latest timestamp is kept),
  // one to another provider's token, one sent, one without a token.
  DeliveryRecord second = deadToken(row("m-2", 2), "apns", "aa11", 1795000000000, "invalid token: BadDeviceToken");
  second.campaign = "camp-2";
  std::vector<DeliveryRecord> batch{deadToken(row("m-1", 1), "apns", "aa11", 1795000000500), second,
                                    deadToken(row("m-3", 3), "fcm", "aa11"), row("m-4", 4),
                                    deadToken(row("m-5", 5), "apns", "")};
  EXPECT_EQ(ledger->record(batch), 5u);
  EXPECT_EQ(count("status = 'invalid_token'"), 4);
  EXPECT_EQ(count("message_id = 'm-1' AND status = 'invalid_token' AND reason = 'invalid token: Unregistered' AND "
                  "provider = 'apns'"),
            1);
  EXPECT_EQ(tokens(), 2) << "one row per (provider, token); no row for an empty token";
  auto apns = token("apns", "aa11");
  ASSERT_TRUE(apns);
  EXPECT_EQ(apns->hits, 2);
  EXPECT_EQ(apns->campaign, "camp-1");
  EXPECT_EQ(apns->reason, "invalid token: BadDeviceToken");
  EXPECT_EQ(apns->provider_timestamp, "2026-11-18T11:06:40.500Z");
  auto fcm = token("fcm", "aa11");
  ASSERT_TRUE(fcm);
  EXPECT_EQ(fcm->hits, 1);
  EXPECT_EQ(fcm->provider_timestamp, "") << "FCM names no timestamp";

  // A replay of the same message ids (after a crash) counts nothing twice;
  // a new message to the same token counts once more, keeps the first campaign.
  DeliveryRecord again = deadToken(row("m-6", 6), "apns", "aa11", 0, "invalid token: Unregistered");
  again.campaign = "camp-3";
  std::vector<DeliveryRecord> replay{batch[0], batch[1], batch[2], again};
  EXPECT_EQ(ledger->record(replay), 1u);
  apns = token("apns", "aa11");
  EXPECT_EQ(apns->hits, 3);
  EXPECT_EQ(apns->campaign, "camp-1");
  EXPECT_EQ(apns->reason, "invalid token: Unregistered");
  EXPECT_EQ(apns->provider_timestamp, "2026-11-18T11:06:40.500Z") << "a later answer without one keeps it";
  EXPECT_TRUE(apns->first_before_last);
  EXPECT_EQ(token("fcm", "aa11")->hits, 1);
  EXPECT_EQ(ledger->record(replay), 0u);
  EXPECT_EQ(token("apns", "aa11")->hits, 3);
}

// The tokens are written in the ledger's transaction: a batch the database
// refuses leaves no token counted either, so a Kafka offset is never
// committed without its token, and a retried batch counts it once.
TEST_F(PgLedgerTest, ARefusedBatchCountsNoToken) {
  migrate(options_);
  auto ledger = makePgLedger(options_);
  DeliveryRecord bad = row("m-2", 2);
  bad.attempts = -1;  // violates the attempts check
  std::vector<DeliveryRecord> batch{deadToken(row("m-1", 1), "apns", "bb22"), bad};
  EXPECT_THROW(ledger->record(batch), LedgerRejectedError);
  EXPECT_EQ(count(), 0);
  {
    pqxx::connection c(options_.conninfo);
    pqxx::read_transaction tx(c);
    EXPECT_EQ(tx.exec1("SELECT count(*) FROM invalid_tokens")[0].as<std::int64_t>(), 0);
  }
  batch[1].attempts = 1;
  EXPECT_EQ(ledger->record(batch), 2u);
  pqxx::connection c(options_.conninfo);
  pqxx::read_transaction tx(c);
  EXPECT_EQ(tx.exec1("SELECT hits FROM invalid_tokens WHERE provider = 'apns' AND token = 'bb22'")[0].as<int>(), 1);
}

// A dead token whose message reused another message's id gets its own
// `rejected` row (as any such message does) and is counted all the same:
// the token is dead whatever id it came under; a retried batch counts it once.
TEST_F(PgLedgerTest, ADeadTokenUnderAReusedIdIsCountedOnce) {
  migrate(options_);
  auto ledger = makePgLedger(options_);
  DeliveryRecord first = row("order-7", 10);
  first.fingerprint = 111;
  ASSERT_EQ(ledger->record(std::vector<DeliveryRecord>{first}), 1u);
  DeliveryRecord other = deadToken(row("order-7", 25), "fcm", "cc33");
  other.fingerprint = 222;
  EXPECT_EQ(ledger->record(std::vector<DeliveryRecord>{other}), 1u);
  EXPECT_EQ(count("message_id = 'order-7@messages/3/25' AND status = 'rejected'"), 1);
  EXPECT_EQ(ledger->record(std::vector<DeliveryRecord>{other}), 0u);
  pqxx::connection c(options_.conninfo);
  pqxx::read_transaction tx(c);
  EXPECT_EQ(tx.exec1("SELECT hits FROM invalid_tokens WHERE provider = 'fcm' AND token = 'cc33'")[0].as<int>(), 1);
}

// A sink that answers at once: kInvalidToken for recipients starting with
// "dead", delivered for the others.
class DeadTokenSink final : public SinkInterface {
 public:
  bool submit(const Message& m, std::uint64_t ticket) override {
    SendResult r;
    r.ticket = ticket;
    if (m.recipient.rfind("dead", 0) == 0) {
      r.outcome = SendOutcome::kInvalidToken;
      r.status = 410;
      r.reason = "Unregistered";
      r.invalid_since_ms = 1795000000000;
    }
    done_.push_back(std::move(r));
    return true;
  }
  void poll(std::vector<SendResult>& out) override {
    for (SendResult& r : done_) out.push_back(std::move(r));
    done_.clear();
  }
  std::size_t inFlight() const override { return done_.size(); }
  std::size_t maxInFlight() const override { return 100; }

 private:
  std::vector<SendResult> done_;
};

// From the worker core to the table: the token travels with its row, and
// while PostgreSQL is down nothing is committed, the token is not lost and
// is counted once it is back (invariant 2).
TEST_F(PgLedgerTest, AWorkerCoresDeadTokenReachesInvalidTokensBeforeItsOffsetIsCommitted) {
  migrate(options_);
  auto ledger = makePgLedger(options_);
  DeadTokenSink sink;
  SimulatedTimeSource clock(monoAt(std::chrono::seconds(1000)));
  WorkerOptions o;
  o.ledger_flush_interval = std::chrono::milliseconds(50);
  o.ledger_retry_interval = std::chrono::milliseconds(100);
  WorkerCore core(o, *ledger, sink, nullptr, clock.now());
  CampaignInfo promo;
  promo.id = "promo";
  promo.provider = "apns";
  core.upsertCampaign(promo, clock.now());
  const auto offer = [&](std::int64_t offset, const std::string& recipient) {
    RawMessage raw;
    raw.position = Position{"messages", 3, offset};
    raw.key = "promo";
    raw.headers.emplace_back("message-id", "m-" + std::to_string(offset));
    raw.headers.emplace_back("recipient", recipient);
    raw.value = "hello";
    core.offer(std::move(raw), clock.now());
  };
  const auto run = [&](std::chrono::milliseconds d) {
    for (auto end = clock.now() + d; clock.now() < end;) {
      clock.advance(std::chrono::milliseconds(10));
      core.step(clock.now());
    }
  };
  const TopicPartition tp{"messages", 3};

  server_->stop();
  offer(0, "dead-1");
  offer(1, "alive");
  offer(2, "dead-1");
  run(std::chrono::milliseconds(500));
  EXPECT_EQ(core.committable(tp).value_or(0), 0) << "no offset before its outcome is in the ledger";
  EXPECT_GT(core.stats().ledger_errors, 0u);
  server_->start();
  run(std::chrono::milliseconds(500));
  EXPECT_EQ(core.committable(tp), 3);
  EXPECT_EQ(core.stats().invalid_tokens, 2u);

  EXPECT_EQ(count("status = 'invalid_token' AND provider = 'apns' AND reason = 'invalid token: Unregistered' AND "
                  "attempts = 1"),
            2);
  EXPECT_EQ(count("message_id = 'm-1' AND status = 'sent'"), 1);
  pqxx::connection c(options_.conninfo);
  pqxx::read_transaction tx(c);
  const pqxx::row t = tx.exec1(
      "SELECT provider, token, hits, campaign, extract(epoch FROM provider_timestamp)::bigint FROM invalid_tokens");
  EXPECT_EQ(t[0].as<std::string>(), "apns");
  EXPECT_EQ(t[1].as<std::string>(), "dead-1");
  EXPECT_EQ(t[2].as<int>(), 2);
  EXPECT_EQ(t[3].as<std::string>(), "promo");
  EXPECT_EQ(t[4].as<std::int64_t>(), 1795000000);
}

// Migration 7 widens the status check and nothing more: any other status is
// still refused.
TEST_F(PgLedgerTest, TheStatusCheckTakesInvalidTokenAndStillRefusesOthers) {
  migrate(options_);
  pqxx::connection c(options_.conninfo);
  auto insert = [&](const std::string& status) {
    pqxx::work tx(c);
    tx.exec_params(
        "INSERT INTO deliveries (message_id, campaign, topic, kafka_partition, kafka_offset, status) "
        "VALUES ($1, 'c', 't', 0, 0, $1)",
        status);
    tx.commit();
  };
  EXPECT_NO_THROW(insert("invalid_token"));
  EXPECT_THROW(insert("lost"), pqxx::check_violation);
}

TEST_F(PgLedgerTest, FinishedOffsetsAnswersOneRangeOfOnePartition) {
  migrate(options_);
  auto ledger = makePgLedger(options_);
  std::vector<DeliveryRecord> batch{row("a", 10), row("b", 12), row("c", 15), row("d", 30)};
  batch.push_back(row("other-partition", 11));
  batch.back().partition = 4;
  batch.push_back(row("other-topic", 13));
  batch.back().topic = "other";
  ledger->record(batch);
  EXPECT_EQ(ledger->finishedOffsets("messages", 3, 10, 30), (std::vector<std::int64_t>{10, 12, 15}));
  EXPECT_EQ(ledger->finishedOffsets("messages", 3, 11, 12), (std::vector<std::int64_t>{}));
  EXPECT_EQ(ledger->finishedOffsets("messages", 4, 0, 100), (std::vector<std::int64_t>{11}));
}

// A parked message counts as finished for replay: it is sent from parking, so
// reading it again from Kafka would send it twice.
TEST_F(PgLedgerTest, FinishedOffsetsIncludeParkedMessages) {
  migrate(options_);
  auto ledger = makePgLedger(options_);
  ledger->record(std::vector<DeliveryRecord>{row("a", 10)});
  auto parking = makePgParking(PgParkingOptions{options_, "test-worker"});
  Message m;
  m.id = "p";
  m.campaign = "camp-1";
  m.position = Position{"messages", 3, 20};
  m.payload = "x";
  ASSERT_EQ(parking->park(std::vector<Message>{m}, {}), 1u);
  EXPECT_EQ(ledger->finishedOffsets("messages", 3, 0, 100), (std::vector<std::int64_t>{10, 20}));
  EXPECT_EQ(ledger->finishedOffsets("messages", 4, 0, 100), (std::vector<std::int64_t>{}));
}

// A parked message keeps its deadline (migration 10), to the millisecond, and
// one without a deadline comes back without one.
TEST_F(PgLedgerTest, ParkedMessagesKeepTheirDeadline) {
  migrate(options_);
  auto parking = makePgParking(PgParkingOptions{options_, "test-worker"});
  std::vector<Message> ms(2);
  for (int i = 0; i < 2; ++i) {
    ms[i].id = "dl" + std::to_string(i);
    ms[i].campaign = "camp-dl";
    ms[i].position = Position{"messages", 6, i};
    ms[i].payload = "x";
  }
  ms[0].expires_at_ms = 1'795'707'000'250;
  ASSERT_EQ(parking->park(ms, {}), 2u);
  const std::vector<Message> got =
      parking->claim("camp-dl", 10, WallTime{std::chrono::milliseconds(1'795'700'000'000)});
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].id, "dl0");
  EXPECT_EQ(got[0].expires_at_ms, 1'795'707'000'250);
  EXPECT_EQ(got[1].expires_at_ms, 0);
}

// Quiet hours and deferred caps park a message until a time: no claim hands
// it out before then (on the caller's wall clock), and its zone comes back.
TEST_F(PgLedgerTest, ParkedMessagesWaitForTheirNotBeforeAndKeepTheirZone) {
  migrate(options_);
  auto parking = makePgParking(PgParkingOptions{options_, "test-worker"});
  const WallTime t0{std::chrono::milliseconds(1'710'000'000'000)};
  std::vector<Message> ms(3);
  for (int i = 0; i < 3; ++i) {
    ms[i].id = "q" + std::to_string(i);
    ms[i].campaign = "camp-q";
    ms[i].position = Position{"messages", 5, i};
    ms[i].recipient = "+1555010" + std::to_string(i);
    ms[i].payload = "x";
    ms[i].time_zone = i == 1 ? "America/New_York" : "";
  }
  const std::vector<WallTime> nb{WallTime{}, t0 + std::chrono::hours(1), t0 + std::chrono::hours(2)};
  ASSERT_EQ(parking->park(ms, nb), 3u);
  auto now = parking->claim("camp-q", 10, t0);
  ASSERT_EQ(now.size(), 1u) << "only the one without a wait is due";
  EXPECT_EQ(now[0].id, "q0");
  auto early = parking->claim("camp-q", 10, t0 + std::chrono::hours(1) - std::chrono::milliseconds(1));
  EXPECT_TRUE(early.empty()) << "one millisecond before not_before";
  auto later = parking->claim("camp-q", 10, t0 + std::chrono::hours(1));
  ASSERT_EQ(later.size(), 1u);
  EXPECT_EQ(later[0].id, "q1");
  EXPECT_EQ(later[0].time_zone, "America/New_York");
  EXPECT_EQ(later[0].recipient, "+15550101");
  auto last = parking->claim("camp-q", 10, t0 + std::chrono::hours(3));
  ASSERT_EQ(last.size(), 1u);
  EXPECT_EQ(last[0].id, "q2");
  // q0, claimed by this worker, must wait after all (quiet hours began): parked
  // again, it is handed back with its new time, not left claimed for ever.
  ASSERT_EQ(parking->park(std::vector<Message>{now[0]}, std::vector<WallTime>{t0 + std::chrono::hours(5)}), 1u);
  EXPECT_TRUE(parking->claim("camp-q", 10, t0 + std::chrono::hours(4)).empty());
  auto again = parking->claim("camp-q", 10, t0 + std::chrono::hours(5));
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].id, "q0");
  // Another worker's claim is left alone.
  auto other = makePgParking(PgParkingOptions{options_, "other-worker"});
  EXPECT_EQ(other->park(std::vector<Message>{again[0]}, std::vector<WallTime>{t0 + std::chrono::hours(9)}), 0u);
  // unclaimed() counts only rows due by the server's clock: rows waiting for a
  // morning would otherwise make a worker park every new message behind them.
  Message late = ms[0];
  late.id = "q-late";
  late.campaign = "camp-r";
  Message due = late;
  due.id = "q-due";
  const WallTime y2100{std::chrono::sys_days{std::chrono::year{2100} / 1 / 1}};
  ASSERT_EQ(parking->park(std::vector<Message>{late, due}, std::vector<WallTime>{y2100, WallTime{}}), 2u);
  std::size_t camp_r = 0;
  for (const auto& [campaign, n] : parking->unclaimed())
    if (campaign == "camp-r") camp_r = n;
  EXPECT_EQ(camp_r, 1u);
}

// unclaimed() names every campaign with due rows nobody holds, each counted
// up to the store's cap (10,000): the scan runs on the worker's loop, and a
// full count of a large backlog held every campaign's sending up.
TEST_F(PgLedgerTest, UnclaimedNamesEveryCampaignWithDueRowsAndCapsTheCount) {
  migrate(options_);
  auto parking = makePgParking(PgParkingOptions{options_, "test-worker"});
  auto batch = [](const std::string& campaign, int n, int from) {
    std::vector<Message> ms(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
      Message& m = ms[static_cast<std::size_t>(i)];
      m.id = campaign + "-" + std::to_string(from + i);
      m.campaign = campaign;
      m.position = Position{"messages", 6, from + i};
      m.payload = "x";
    }
    return ms;
  };
  // "big": 10,500 rows, more than the cap; "held": all claimed by this worker;
  // "later": not due; "small": 3 due.
  for (int from = 0; from < 10'500; from += 3'500) ASSERT_EQ(parking->park(batch("big", 3'500, from), {}), 3'500u);
  ASSERT_EQ(parking->park(batch("held", 4, 20'000), {}), 4u);
  ASSERT_EQ(parking->claim("held", 10, WallTime{std::chrono::hours(24 * 365 * 60)}).size(), 4u);
  const WallTime y2100{std::chrono::sys_days{std::chrono::year{2100} / 1 / 1}};
  ASSERT_EQ(parking->park(batch("later", 2, 30'000), std::vector<WallTime>{y2100, y2100}), 2u);
  ASSERT_EQ(parking->park(batch("small", 3, 40'000), {}), 3u);
  std::map<std::string, std::size_t> got;
  for (const auto& [campaign, n] : parking->unclaimed()) got[campaign] = n;
  EXPECT_EQ(got, (std::map<std::string, std::size_t>{{"big", 10'000}, {"small", 3}}));
}

// Two copies of one message (a producer retried) in one batch park once,
// and a copy from another Kafka position never undoes this worker's claim on
// the row (only the claimed row itself, parked again, is handed back).
TEST_F(PgLedgerTest, DuplicateCopiesParkOnceAndNeverFreeAClaimedRow) {
  migrate(options_);
  auto parking = makePgParking(PgParkingOptions{options_, "test-worker"});
  const WallTime t0{std::chrono::milliseconds(1'710'000'000'000)};
  Message a;
  a.id = "dup";
  a.campaign = "camp-d";
  a.position = Position{"messages", 6, 1};
  a.payload = "x";
  Message copy = a;
  copy.position.offset = 2;
  EXPECT_EQ(parking->park(std::vector<Message>{a, copy}, std::vector<WallTime>{WallTime{}, WallTime{}}), 1u);
  auto claimed = parking->claim("camp-d", 10, t0);
  ASSERT_EQ(claimed.size(), 1u);
  Message third = a;
  third.position.offset = 3;
  EXPECT_EQ(parking->park(std::vector<Message>{third}, std::vector<WallTime>{t0 + std::chrono::hours(1)}), 0u);
  EXPECT_TRUE(parking->claim("camp-d", 10, t0 + std::chrono::hours(2)).empty())
      << "still this worker's claim: nobody gets it a second time";
}

// An SMPP receipt is answered only once it is recorded, so the SMSC sends
// one that was recorded but not answered (the bind or pacerd went in
// between) again: the second recording, alone or twice in one batch, must
// leave the one row as it was. A receipt that says something else replaces it.
TEST_F(PgLedgerTest, TheSameReceiptRecordedAgainLeavesItsRowAsItWas) {
  migrate(options_);
  auto ledger = makePgLedger(options_);
  DeliveryRecord sent = row("m-1", 1);
  sent.provider = "sms";
  sent.provider_message_id = "smsc-1";
  std::vector<DeliveryRecord> rows{sent};
  ASSERT_EQ(ledger->record(rows), 1u);

  DeliveryReceipt r;
  r.provider = "sms";
  r.provider_message_id = "smsc-1";
  r.status = ReceiptStatus::kDelivered;
  r.error_code = "000";
  r.done_at_ms = 1795534260000;
  r.received_at_ms = 1700000000000;
  r.text = "id:smsc-1 sub:001 dlvrd:001 submit date:2611241530 done date:2611241531 stat:DELIVRD err:000";
  r.ack = 7;
  std::vector<DeliveryReceipt> once{r};
  ledger->recordReceipts(once);
  DeliveryReceipt again = r;
  again.received_at_ms = 1700000005000;  // sent again by the SMSC after a reconnect
  again.ack = 8;
  std::vector<DeliveryReceipt> twice{again, again};
  ledger->recordReceipts(twice);
  ledger->recordReceipts(once);

  auto read = [&] {
    pqxx::connection c(options_.conninfo);
    pqxx::read_transaction tx(c);
    return tx.exec(
        "SELECT status, error_code, text, (extract(epoch FROM done_at) * 1000)::bigint, "
        "(extract(epoch FROM received_at) * 1000)::bigint FROM receipts");
  };
  pqxx::result rs = read();
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0][0].as<std::string>(), "delivered");
  EXPECT_EQ(rs[0][1].as<std::string>(), "000");
  EXPECT_EQ(rs[0][2].as<std::string>(), r.text);
  EXPECT_EQ(rs[0][3].as<std::int64_t>(), 1795534260000);
  EXPECT_EQ(rs[0][4].as<std::int64_t>(), 1700000000000) << "the first arrival stands";
  {
    pqxx::connection c(options_.conninfo);
    pqxx::read_transaction tx(c);
    const pqxx::result v = tx.exec("SELECT message_id, receipt_status FROM delivery_receipts");
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0][0].as<std::string>(), "m-1");
    EXPECT_EQ(v[0][1].as<std::string>(), "delivered");
  }

  DeliveryReceipt other = r;
  other.status = ReceiptStatus::kUndelivered;
  other.error_code = "034";
  other.text = "id:smsc-1 sub:001 dlvrd:000 submit date:2611241530 done date:2611241532 stat:UNDELIV err:034";
  other.received_at_ms = 1700000009000;
  std::vector<DeliveryReceipt> changed{other};
  ledger->recordReceipts(changed);
  rs = read();
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0][0].as<std::string>(), "undelivered");
  EXPECT_EQ(rs[0][1].as<std::string>(), "034");
  EXPECT_EQ(rs[0][4].as<std::int64_t>(), 1700000009000);
}

TEST_F(PgLedgerTest, EmptyBatchIsANoOp) {
  migrate(options_);
  auto ledger = makePgLedger(options_);
  EXPECT_EQ(ledger->record({}), 0u);
}

TEST_F(PgLedgerTest, WithoutTheSchemaTheStatementIsRejected) {
  auto ledger = makePgLedger(options_);  // no migrate()
  std::vector<DeliveryRecord> batch{row("x", 1)};
  EXPECT_THROW(ledger->record(batch), LedgerRejectedError);
}

TEST_F(PgLedgerTest, UnreachableServerIsReportedAndTheLedgerRecoversWhenItReturns) {
  migrate(options_);
  auto ledger = makePgLedger(options_);
  std::vector<DeliveryRecord> first{row("before", 1)};
  ASSERT_EQ(ledger->record(first), 1u);

  server_->stop();
  std::vector<DeliveryRecord> during{row("during", 2)};
  EXPECT_THROW(ledger->record(during), LedgerUnavailableError);
  EXPECT_THROW(ledger->finishedOffsets("messages", 3, 0, 10), LedgerUnavailableError);

  server_->start();
  // The same rows, retried by the caller, land once the server is back.
  EXPECT_EQ(ledger->record(during), 1u);
  EXPECT_EQ(ledger->finishedOffsets("messages", 3, 0, 10), (std::vector<std::int64_t>{1, 2}));
}

// The lease renewal (every 20 s, on the worker's loop) and the release find a
// worker's claimed rows by the partial index on owner, not by a scan of a
// backlog of a million parked rows (about 300-500 ms, nothing sent meanwhile).
TEST_F(PgLedgerTest, RenewalsAndReleasesFindClaimedRowsByAnIndexNotAScan) {
  migrate(options_);
  pqxx::connection c(options_.conninfo);
  pqxx::work tx(c);
  tx.exec0("SET LOCAL enable_seqscan = off");  // a table of no rows: the plan shows what can be used
  for (const char* statement :
       {"UPDATE parked SET lease_until = now() + make_interval(secs => 60) WHERE owner = 'w1'",
        "UPDATE parked SET owner = NULL, lease_until = NULL WHERE owner = 'w1'"}) {
    std::string plan;
    for (const auto& row : tx.exec(std::string("EXPLAIN ") + statement)) plan += row[0].as<std::string>() + "\n";
    EXPECT_NE(plan.find("parked_owner"), std::string::npos) << statement << "\n" << plan;
  }
}

// The park writer (pacerd's thread with its own connection): batches are
// durable, in order, when it says so, and a scan asked for is answered; a
// batch it cannot write is reported failed, never durable.
TEST_F(PgLedgerTest, TheParkWriterReportsEachBatchDurableInOrderAndAnswersTheScan) {
  migrate(options_);
  auto writer = makeThreadedParkWriter(makePgParking(PgParkingOptions{options_, "test-worker"}));
  for (int b = 0; b < 3; ++b) {
    std::vector<Message> batch;
    for (int i = 0; i < 1000; ++i) {
      Message m;
      m.id = fmt::format("w{}-{}", b, i);
      m.campaign = b == 2 ? "camp-2" : "camp-1";
      m.position = Position{"messages", 3, b * 1000 + i};
      m.payload = "x";
      batch.push_back(std::move(m));
    }
    writer->submit(std::move(batch), {});
  }
  writer->wait();
  writer->requestUnclaimed();
  writer->submit({}, {});  // a scan asked for goes before the next batch: answered once this one is
  writer->wait();
  ParkWriterReport report;
  writer->poll(report);
  EXPECT_EQ(report.batches, (std::vector<bool>{true, true, true, true}));
  EXPECT_FALSE(report.unclaimed_failed);
  ASSERT_TRUE(report.unclaimed.has_value());
  std::map<std::string, std::size_t> counts(report.unclaimed->begin(), report.unclaimed->end());
  EXPECT_EQ(counts, (std::map<std::string, std::size_t>{{"camp-1", 2000}, {"camp-2", 1000}}));
  pqxx::connection c(options_.conninfo);
  pqxx::read_transaction tx(c);
  EXPECT_EQ(tx.exec1("SELECT count(*) FROM parked")[0].as<std::int64_t>(), 3000);
  writer->poll(report);
  EXPECT_TRUE(report.batches.empty()) << "each batch reported once";
}

// Claims and renewals go through the park writer too, off the loop: a claim
// answers with the campaign's oldest rows, now owned by this worker, and a
// renewal extends their leases.
TEST_F(PgLedgerTest, TheParkWriterClaimsAndRenewsOnItsThread) {
  migrate(options_);
  auto writer = makeThreadedParkWriter(makePgParking(PgParkingOptions{options_, "test-worker"}));
  std::vector<Message> batch;
  for (int i = 0; i < 50; ++i) {
    Message m;
    m.id = fmt::format("c{}", i);
    m.campaign = "camp-1";
    m.position = Position{"messages", 0, i};
    m.payload = "x";
    batch.push_back(std::move(m));
  }
  writer->submit(std::move(batch), {});
  writer->wait();
  writer->requestClaim("camp-1", 20, std::chrono::time_point_cast<std::chrono::milliseconds>(
                                         std::chrono::system_clock::now()));
  writer->requestClaim("camp-1", 20, std::chrono::time_point_cast<std::chrono::milliseconds>(
                                         std::chrono::system_clock::now()));
  writer->requestRenew();
  writer->wait();
  ParkWriterReport report;
  writer->poll(report);
  EXPECT_EQ(report.batches, (std::vector<bool>{true}));
  ASSERT_EQ(report.claims.size(), 2u);
  ASSERT_EQ(report.claims[0].messages.size(), 20u);
  EXPECT_FALSE(report.claims[0].failed);
  ASSERT_EQ(report.claims[1].messages.size(), 20u);
  std::set<std::string> ids;
  for (const ParkClaimAnswer& a : report.claims)
    for (const Message& m : a.messages) ids.insert(m.id);
  EXPECT_EQ(ids.size(), 40u) << "no row claimed twice";
  EXPECT_EQ(report.renewals, 1u);
  EXPECT_EQ(report.renewals_failed, 0u);
  pqxx::connection c(options_.conninfo);
  pqxx::read_transaction tx(c);
  EXPECT_EQ(tx.exec1("SELECT count(*) FROM parked WHERE owner = 'test-worker'")[0].as<std::int64_t>(), 40);
}

TEST(PgLedgerNoServer, TheParkWriterReportsABatchItCannotWriteAsFailed) {
  PgLedgerOptions o;
  o.conninfo = "host=127.0.0.1 port=" + std::to_string(pacer::testing::freeLoopbackPort()) + " user=postgres dbname=x";
  o.connect_timeout_s = 2;
  std::mutex mu;
  std::vector<std::string> told;
  auto writer = makeThreadedParkWriter(makePgParking(PgParkingOptions{o, "test-worker"}),
                                       [&](const std::string& reason, std::uint64_t failures) {
                                         std::lock_guard lock(mu);
                                         told.push_back(fmt::format("{} {}", failures, reason));
                                       });
  Message m;
  m.id = "m";
  m.campaign = "c";
  m.position = Position{"messages", 0, 1};
  writer->submit(std::vector<Message>{m}, {});
  writer->requestUnclaimed();
  writer->submit(std::vector<Message>{m}, {});
  writer->requestClaim("c", 5, WallTime{});
  writer->requestRenew();
  writer->wait();
  ParkWriterReport report;
  writer->poll(report);
  EXPECT_EQ(report.batches, (std::vector<bool>{false, false}));
  EXPECT_TRUE(report.unclaimed_failed);
  EXPECT_FALSE(report.unclaimed.has_value());
  ASSERT_EQ(report.claims.size(), 1u);
  EXPECT_TRUE(report.claims[0].failed);
  EXPECT_TRUE(report.claims[0].messages.empty());
  EXPECT_EQ(report.renewals, 1u);
  EXPECT_EQ(report.renewals_failed, 1u);
  // Said once (five failures within 10 s; the first may be the scan, a claim or a batch), with
  // the reason: PostgreSQL is not there.
  std::lock_guard lock(mu);
  ASSERT_EQ(told.size(), 1u);
  EXPECT_EQ(told[0].rfind("1 ", 0), 0u) << told[0];
  EXPECT_NE(told[0].find("PostgreSQL unreachable"), std::string::npos) << told[0];
}

// The ledger writer (pacerd's thread with its own connection): batches are
// durable, in order, when it says so, with the rows each made new (a row
// already in the ledger is not new), and a receipt is written after its
// batch's rows.
TEST_F(PgLedgerTest, TheLedgerWriterReportsEachBatchDurableInOrderWithItsNewRows) {
  migrate(options_);
  auto writer = makeThreadedLedgerWriter(makePgLedger(options_));
  for (int b = 0; b < 3; ++b) {
    std::vector<DeliveryRecord> rows;
    for (int i = 0; i < 1000; ++i)
      rows.push_back(row(fmt::format("w{}-{}", b == 1 && i < 400 ? 0 : b, i), b * 1000 + i));
    std::vector<DeliveryReceipt> receipts;
    if (b == 2) {
      rows[0].provider = "sms";
      rows[0].provider_message_id = "smsc-1";
      DeliveryReceipt r;
      r.provider = "sms";
      r.provider_message_id = "smsc-1";
      r.status = ReceiptStatus::kDelivered;
      receipts.push_back(r);
    }
    writer->submit(std::move(rows), std::move(receipts));
  }
  ASSERT_TRUE(writer->wait(std::chrono::seconds(30)));
  std::vector<LedgerWriteReport> reports;
  writer->poll(reports);
  ASSERT_EQ(reports.size(), 3u);
  for (const LedgerWriteReport& r : reports) EXPECT_TRUE(r.durable()) << r.reason;
  EXPECT_EQ(reports[0].new_rows, 1000u);
  EXPECT_EQ(reports[1].new_rows, 600u) << "400 ids of the first batch again: already there";
  EXPECT_EQ(reports[2].new_rows, 1000u);
  EXPECT_EQ(count(), 2600);
  pqxx::connection c(options_.conninfo);
  pqxx::read_transaction tx(c);
  EXPECT_EQ(tx.exec1("SELECT count(*) FROM delivery_receipts WHERE message_id = 'w2-0'")[0].as<std::int64_t>(), 1);
  writer->poll(reports);
  EXPECT_TRUE(reports.empty()) << "each batch reported once";
}

TEST(PgLedgerNoServer, TheLedgerWriterReportsABatchItCannotWriteAsFailed) {
  PgLedgerOptions o;
  o.conninfo = "host=127.0.0.1 port=" + std::to_string(pacer::testing::freeLoopbackPort()) + " user=postgres dbname=x";
  o.connect_timeout_s = 2;
  std::mutex mu;
  std::vector<std::string> told;
  auto writer = makeThreadedLedgerWriter(makePgLedger(o), [&](const std::string& reason, std::uint64_t failures) {
    std::lock_guard lock(mu);
    told.push_back(fmt::format("{} {}", failures, reason));
  });
  std::vector<DeliveryRecord> rows(1);
  rows[0].message_id = "m";
  writer->submit(rows, {});
  writer->submit(rows, {});
  ASSERT_TRUE(writer->wait(std::chrono::seconds(30)));
  std::vector<LedgerWriteReport> reports;
  writer->poll(reports);
  ASSERT_EQ(reports.size(), 2u);
  for (const LedgerWriteReport& r : reports) {
    EXPECT_FALSE(r.rows_durable);
    EXPECT_FALSE(r.durable());
    EXPECT_EQ(r.error, ErrorKind::kUnavailable);
  }
  // Said once (two failures within 10 s), with the reason: PostgreSQL is not there.
  std::lock_guard lock(mu);
  ASSERT_EQ(told.size(), 1u);
  EXPECT_EQ(told[0].rfind("1 ", 0), 0u) << told[0];
  EXPECT_NE(told[0].find("PostgreSQL unreachable"), std::string::npos) << told[0];
}

TEST(PgLedgerNoServer, ConnectionRefusedIsUnavailable) {
  PgLedgerOptions o;
  o.conninfo = "host=127.0.0.1 port=" + std::to_string(pacer::testing::freeLoopbackPort()) + " user=postgres dbname=x";
  o.connect_timeout_s = 2;
  EXPECT_THROW(migrate(o), LedgerUnavailableError);
  auto ledger = makePgLedger(o);
  std::vector<DeliveryRecord> batch(1);
  batch[0].message_id = "m";
  EXPECT_THROW(ledger->record(batch), LedgerUnavailableError);
}

}  // namespace
}  // namespace pacer::ledger

namespace pacer::ledger {
namespace {

class CompletionListener : public pqxx::notification_receiver {
 public:
  explicit CompletionListener(pqxx::connection_base& c) : pqxx::notification_receiver(c, "pacer_control") {}
  void operator()(const std::string& payload, int) override { payloads.push_back(payload); }
  std::vector<std::string> payloads;
};

TEST_F(PgLedgerTest, ACampaignIsCompletedOnceItsTotalIsInTheLedgerAndNothingIsParked) {
  migrate(options_);
  auto ledger = makePgLedger(options_);
  PgDirectory dir(options_);
  CampaignInfo c;
  c.id = "camp-1";
  dir.putCampaign(c);
  CampaignInfo open_ended;  // no total: never completed by the count
  open_ended.id = "camp-2";
  dir.putCampaign(open_ended);
  pqxx::connection sql(options_.conninfo);
  pqxx::nontransaction(sql).exec("UPDATE campaigns SET total = 3 WHERE id = 'camp-1'");
  pqxx::connection listen(options_.conninfo);
  CompletionListener heard(listen);

  ledger->record(std::vector<DeliveryRecord>{row("m-1", 1), row("m-2", 2, DeliveryStatus::kFailed, "HTTP 500")});
  EXPECT_TRUE(dir.completeFinished().empty());  // 2 of 3
  pqxx::nontransaction(sql).exec(
      "INSERT INTO parked (message_id, campaign, topic, kafka_partition, kafka_offset, payload) "
      "VALUES ('m-3', 'camp-1', 'messages', 3, 3, 'x'), ('m-4', 'camp-2', 'messages', 3, 4, 'y')");
  ledger->record(std::vector<DeliveryRecord>{row("m-3", 3)});
  EXPECT_TRUE(dir.completeFinished().empty());  // 3 of 3, but one still parked
  pqxx::nontransaction(sql).exec("DELETE FROM parked WHERE message_id = 'm-3'");
  EXPECT_EQ(dir.completeFinished(), std::vector<std::string>{"camp-1"});
  EXPECT_TRUE(dir.completeFinished().empty());  // once
  EXPECT_EQ(dir.campaign("camp-1")->state, CampaignState::kCompleted);
  EXPECT_EQ(dir.campaign("camp-2")->state, CampaignState::kActive);
  for (int i = 0; i < 50 && heard.payloads.empty(); ++i) listen.await_notification(0, 100000);
  ASSERT_EQ(heard.payloads.size(), 1u);
  EXPECT_EQ(heard.payloads[0], R"({"kind":"campaign","id":"camp-1","change":"completed"})");
}

}  // namespace
}  // namespace pacer::ledger

namespace pacer::ledger {
namespace {

// A parking store whose second park() commits and then loses its answer (as a
// connection dropped after COMMIT: PostgreSQL's "commit in doubt"), and whose
// third waits until the test opens it. The rest goes to PostgreSQL as is.
class AnswerLostParking final : public ParkingInterface {
 public:
  explicit AnswerLostParking(ParkingInterfacePtr inner) : inner_(std::move(inner)) {}
  std::size_t park(std::span<const Message> messages, std::span<const WallTime> not_before) override {
    int call = 0;
    {
      std::unique_lock lock(mu_);
      call = ++calls_;
      opened_.wait(lock, [&] { return call != 3 || open_; });
    }
    const std::size_t n = inner_->park(messages, not_before);
    if (call == 2) throw LedgerUnavailableError("server closed the connection unexpectedly (after COMMIT)");
    return n;
  }
  std::vector<Message> claim(const std::string& c, std::size_t max, WallTime now) override {
    return inner_->claim(c, max, now);
  }
  std::vector<std::pair<std::string, std::size_t>> unclaimed() override { return inner_->unclaimed(); }
  void renew() override { inner_->renew(); }
  std::size_t release() override { return inner_->release(); }
  void open() {
    {
      std::lock_guard lock(mu_);
      open_ = true;
    }
    opened_.notify_all();
  }
  int calls() {
    std::lock_guard lock(mu_);
    return calls_;
  }

 private:
  ParkingInterfacePtr inner_;
  std::mutex mu_;
  std::condition_variable opened_;
  int calls_ = 0;
  bool open_ = false;
};

// The commit in doubt, end to end on PostgreSQL: the park writer's batch is
// committed but reported failed, and handed over again; the second write would
// hand back (owner NULL) any of its rows the loop claimed meanwhile, which
// would then be claimed, and sent, a second time. No claim of the campaign
// while its batch is in the writer: each message is sent once.
TEST_F(PgLedgerTest, ABatchWhoseCommitAnswerWasLostSendsNothingTwice) {
  migrate(options_);
  auto ledger = makePgLedger(options_);
  auto loop_parking = makePgParking(PgParkingOptions{options_, "w1"});
  auto store = std::make_unique<AnswerLostParking>(makePgParking(PgParkingOptions{options_, "w1"}));
  AnswerLostParking& doubt = *store;
  auto writer = makeThreadedParkWriter(std::move(store));
  test_support::FakeSink sink(100);
  SimulatedTimeSource clock(monoAt(std::chrono::seconds(1000)));
  WorkerOptions o;
  o.park_min_keep = 10;
  o.park_keep_for = std::chrono::seconds(1);
  o.ledger_flush_interval = std::chrono::milliseconds(50);
  o.ledger_retry_interval = std::chrono::milliseconds(500);
  o.park_writer = writer.get();
  WorkerCore core(o, *ledger, sink, loop_parking.get(), clock.now());
  CampaignInfo a;
  a.id = "a";
  a.limit = RateLimit{10, 1};
  core.upsertCampaign(a, clock.now());
  const auto offer = [&](int from, int to) {
    for (int i = from; i < to; ++i) {
      RawMessage raw;
      raw.position = Position{"messages", 0, i};
      raw.key = "a";
      raw.headers.emplace_back("message-id", "m-" + std::to_string(i));
      raw.value = "x";
      core.offer(std::move(raw), clock.now());
    }
  };
  const auto run = [&](std::chrono::milliseconds d) {
    for (auto end = clock.now() + d; clock.now() < end;) {
      clock.advance(std::chrono::milliseconds(10));
      core.step(clock.now());
    }
  };
  offer(0, 20);  // 10 kept, 10 parked: the campaign has rows to claim
  run(std::chrono::milliseconds(100));
  writer->wait();
  run(std::chrono::milliseconds(100));
  offer(20, 200);
  run(std::chrono::milliseconds(100));
  writer->wait();  // the 180: committed, the answer lost
  run(std::chrono::milliseconds(1000));
  pacer::testing::waitUntil([&] { return doubt.calls() >= 3; }, std::chrono::seconds(5), std::chrono::milliseconds(10));
  ASSERT_EQ(doubt.calls(), 3) << "handed over again after the retry interval";
  run(std::chrono::seconds(3));  // the second write waits in the writer
  doubt.open();
  writer->wait();
  for (int i = 0; i < 3000; ++i) {
    run(std::chrono::milliseconds(10));
    writer->wait();
  }
  ASSERT_TRUE(core.flush(clock.now()));
  std::map<std::string, int> times;
  for (const Message& m : sink.submitted) ++times[m.id];
  for (const auto& [id, n] : times) EXPECT_EQ(n, 1) << id << " sent " << n << " times";
  EXPECT_EQ(times.size(), 200u);
  EXPECT_EQ(count("status = 'sent'"), 200);
  pqxx::connection c(options_.conninfo);
  pqxx::read_transaction tx(c);
  EXPECT_EQ(tx.exec1("SELECT count(*) FROM parked")[0].as<std::int64_t>(), 0);
}

// End to end on PostgreSQL with the threaded ledger writer: the offsets
// advance as its reports come in, and a flush hands over the last rows and
// waits for them.
TEST_F(PgLedgerTest, AWorkerCoresRowsReachPostgresqlThroughTheLedgerWriterAndFlushWaitsForTheLast) {
  migrate(options_);
  auto loop_ledger = makePgLedger(options_);
  auto writer = makeThreadedLedgerWriter(makePgLedger(options_));
  test_support::FakeSink sink(1000);
  SimulatedTimeSource clock(monoAt(std::chrono::seconds(1000)));
  WorkerOptions o;
  o.ledger_flush_interval = std::chrono::milliseconds(50);
  o.ledger_writer = writer.get();
  WorkerCore core(o, *loop_ledger, sink, nullptr, clock.now());
  CampaignInfo a;
  a.id = "a";
  core.upsertCampaign(a, clock.now());
  const auto offer = [&](int from, int to) {
    for (int i = from; i < to; ++i) {
      RawMessage raw;
      raw.position = Position{"messages", 0, i};
      raw.key = "a";
      raw.headers.emplace_back("message-id", "m-" + std::to_string(i));
      raw.value = "x";
      core.offer(std::move(raw), clock.now());
    }
  };
  const TopicPartition tp{"messages", 0};
  const auto step = [&] {
    clock.advance(std::chrono::milliseconds(10));
    core.step(clock.now());
    return core.committable(tp).value_or(0);
  };
  offer(0, 500);
  EXPECT_TRUE(pacer::testing::waitUntil([&] { return step() == 500; }, std::chrono::seconds(30)));
  EXPECT_EQ(count("status = 'sent'"), 500);
  EXPECT_EQ(core.stats().ledger_rows, 500u);
  offer(500, 600);
  core.step(clock.now());
  ASSERT_TRUE(core.flush(clock.now()));
  EXPECT_EQ(core.committable(tp), 600);
  EXPECT_EQ(count("status = 'sent'"), 600);
  EXPECT_EQ(core.stats().unrecorded, 0u);
}

}  // namespace
}  // namespace pacer::ledger
