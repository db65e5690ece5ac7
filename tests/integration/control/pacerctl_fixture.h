// The harness of pacerctl's integration tests (pacerctl_test.cc,
// pacerctl_tokens_test.cc): one PostgreSQL server per test suite, a fresh
// migrated database per test, pacerctl run in process (runPacerctl) and a
// listener on the pacer_control channel.
#pragma once

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <pqxx/pqxx>
#include <sstream>
#include <string>
#include <vector>

#include "pacer/control/pg_control.h"
#include "pacer/control/values.h"
#include "pacer/ledger/pg_ledger.h"
#include "pacer/pacerctl/cli.h"
#include "support/kafka_mock_process.h"
#include "support/postgres_server.h"

// Not in an unnamed namespace: every file's tests are of the one suite.
namespace pacer::control::test {

using pacer::testing::PostgresServer;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

struct Outcome {
  int code = -1;
  std::string out;
  std::string err;
};

inline std::ostream& operator<<(std::ostream& os, const Outcome& r) {
  return os << "exit " << r.code << "\nstdout:\n" << r.out << "stderr:\n" << r.err;
}

// Collects what arrives on the pacer_control channel.
class Listener : public pqxx::notification_receiver {
 public:
  Listener(pqxx::connection_base& c) : pqxx::notification_receiver(c, std::string(kControlChannel)) {}
  void operator()(const std::string& payload, int) override { payloads.push_back(payload); }
  std::vector<std::string> payloads;
};

inline constexpr const char* kSentinel = "sentinel";

class PacerctlTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = std::make_unique<PostgresServer>(); }
  static void TearDownTestSuite() {
    kafka_.reset();
    server_.reset();
  }

  // One pacer-kafka-mock for the produce tests, started by the first of them.
  static const std::string& kafka() {
    if (!kafka_) {
      pacer::testing::KafkaMockOptions o;
      o.topics = {"messages:2"};
      kafka_ = std::make_unique<pacer::testing::KafkaMockProcess>(o);
    }
    return kafka_->bootstraps();
  }

  void SetUp() override {
    const std::string db = "t_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name());
    conninfo_ = server_->createDatabase(db);
    ledger::migrate(ledger::PgLedgerOptions{conninfo_});
    listen_conn_ = std::make_unique<pqxx::connection>(conninfo_);
    listener_ = std::make_unique<Listener>(*listen_conn_);
  }

  // pacerctl ARGS... with --postgres pointing at this test's database.
  Outcome ctl(std::vector<std::string> args) {
    args.insert(args.begin(), {"--postgres", conninfo_});
    return ctlWith(args, CliEnvironment{});
  }

  static Outcome ctlWith(const std::vector<std::string>& args, const CliEnvironment& env) {
    std::vector<const char*> argv{"pacerctl"};
    for (const std::string& a : args) argv.push_back(a.c_str());
    std::ostringstream out, err;
    Outcome r;
    r.code = runPacerctl(static_cast<int>(argv.size()), argv.data(), out, err, env);
    r.out = out.str();
    r.err = err.str();
    return r;
  }

  // Every payload announced since the last call, in commit order. A sentinel
  // sent after the command marks the end, so "nothing was announced" is
  // checked without waiting for a timeout.
  std::vector<std::string> announced() {
    {
      pqxx::connection c(conninfo_);
      pqxx::nontransaction tx(c);
      tx.exec(fmt::format("NOTIFY {}, '{}'", kControlChannel, kSentinel));
    }
    for (int i = 0; i < 100; ++i) {
      if (!listener_->payloads.empty() && listener_->payloads.back() == kSentinel) break;
      listen_conn_->await_notification(10, 0);
    }
    std::vector<std::string> got = std::move(listener_->payloads);
    listener_->payloads.clear();
    EXPECT_FALSE(got.empty());
    if (!got.empty() && got.back() == kSentinel) got.pop_back();
    return got;
  }

  pqxx::row row(const std::string& sql) {
    pqxx::connection c(conninfo_);
    pqxx::read_transaction tx(c);
    return tx.exec1(sql);
  }

  void exec(const std::string& sql) {
    pqxx::connection c(conninfo_);
    pqxx::work tx(c);
    tx.exec(sql);
    tx.commit();
  }

  // send_rate ('null' when unlimited), burst, weight, provider, state, name of a campaign.
  std::string campaignRow(const std::string& id) {
    const pqxx::row r = row(
        fmt::format("SELECT coalesce(send_rate::text, 'null'), burst, weight, coalesce(provider, 'null'), state, name "
                    "FROM campaigns WHERE id = '{}'",
                    id));
    return fmt::format("{} {} {} {} {} '{}'", r[0].c_str(), r[1].as<double>(), r[2].as<double>(), r[3].c_str(),
                       r[4].c_str(), r[5].c_str());
  }

  std::int64_t count(const std::string& table) { return row("SELECT count(*) FROM " + table)[0].as<std::int64_t>(); }

  static std::string payload(const char* kind, const char* id, const char* change) {
    return notifyPayload(kind, id, change);
  }

  inline static std::unique_ptr<PostgresServer> server_;
  inline static std::unique_ptr<pacer::testing::KafkaMockProcess> kafka_;
  std::string conninfo_;
  std::unique_ptr<pqxx::connection> listen_conn_;
  std::unique_ptr<Listener> listener_;
};

}  // namespace pacer::control::test
