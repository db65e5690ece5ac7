// pacerd's admin listener end to end: a real pacerd process against a real
// PostgreSQL, pacer-kafka-mock and Redis, scraped over loopback HTTP with
// libcurl. The metrics must agree with the ledger; a drain must stop pacerd
// as SIGTERM does (exit 0, ledger written).
#include <curl/curl.h>
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <librdkafka/rdkafkacpp.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <pqxx/pqxx>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "pacer/ledger/pg_ledger.h"
#include "pacer/ledger/pg_directory.h"
#include "support/kafka_test_producer.h"
#include "support/http_request.h"
#include "support/kafka_mock_process.h"
#include "support/postgres_server.h"
#include "support/redis_server.h"
#include "support/wait_until.h"

extern char** environ;

namespace pacer {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

constexpr const char* kToken = "t0ken-for-the-admin-test";

// Checks `done` every 50 ms (each check is a round trip) for up to `limit`.
bool eventually(const std::function<bool()>& done, seconds limit) {
  return testing::waitUntil(done, limit, milliseconds(50));
}

using testing::HttpAnswer;

HttpAnswer http(const std::string& method, const std::string& url, const std::string& authorization = "") {
  return testing::httpRequest(method, url, {"", authorization, 5000, ""});
}

// The value of "<series> <value>" in Prometheus text, or NaN.
double sample(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  return std::nan("");
}

void produce(const std::string& bootstraps, const std::string& campaign, int count, int partitions) {
  ASSERT_NO_FATAL_FAILURE(
      testing::produceRecords(bootstraps, "messages", testing::campaignRecords(campaign, count, partitions)));
}

// pacerd as a child process, its stderr in a file; killed on destruction if
// it is still running.
class PacerdProcess {
 public:
  PacerdProcess(const std::vector<std::string>& args, const std::vector<std::string>& env_extra) {
    static int n = 0;
    log_ = (std::filesystem::temp_directory_path() /
            ("pacer-admin-test-" + std::to_string(::getpid()) + "-" + std::to_string(n++) + ".log"))
               .string();
    std::vector<std::string> argv_s{PACERD_BIN};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_s;
    for (char** e = environ; *e; ++e)
      if (std::string_view(*e).rfind("PACER_ADMIN_TOKEN=", 0) != 0) env_s.emplace_back(*e);
    env_s.insert(env_s.end(), env_extra.begin(), env_extra.end());
    std::vector<char*> envp;
    for (std::string& e : env_s) envp.push_back(e.data());
    envp.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int rc = posix_spawn(&pid_, PACERD_BIN, &fa, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) pid_ = -1;
  }
  ~PacerdProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    std::filesystem::remove(log_);
  }
  int pid() const { return pid_; }
  std::string log() const {
    std::ifstream f(log_);
    return std::string(std::istreambuf_iterator<char>(f), {});
  }
  // Waits up to `limit` for the exit; its code, or -1 if still running.
  int wait(seconds limit) {
    int status = 0;
    const bool gone = eventually([&] { return ::waitpid(pid_, &status, WNOHANG) == pid_; }, limit);
    if (!gone) return -1;
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

 private:
  std::string log_;
  pid_t pid_ = -1;
};

testing::PostgresServer& server() {
  static testing::PostgresServer s;
  return s;
}

class AdminTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { curl_global_init(CURL_GLOBAL_DEFAULT); }

  void SetUp() override {
    std::string db = std::string("admin_") + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (char& c : db) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    conninfo_ = server().createDatabase(db.substr(0, 60));
    ledger::migrate(ledger::PgLedgerOptions{conninfo_});
    directory_ = std::make_unique<ledger::PgDirectory>(ledger::PgLedgerOptions{conninfo_});
    testing::KafkaMockOptions ko;
    ko.topics = {"messages:2"};
    kafka_ = std::make_unique<testing::KafkaMockProcess>(ko);
  }

  void campaign(const std::string& id, double rate, double burst, const std::string& provider) {
    CampaignInfo c;
    c.id = id;
    c.limit = RateLimit{rate, burst};
    c.provider = provider;
    directory_->putCampaign(c);
  }

  std::int64_t scalar(const std::string& sql) {
    pqxx::connection c(conninfo_);
    pqxx::read_transaction tx(c);
    return tx.exec1(sql)[0].as<std::int64_t>();
  }

  std::vector<std::string> pacerdArgs(const std::vector<std::string>& more) const {
    std::vector<std::string> a{"--brokers", kafka_->bootstraps(), "--topic", "messages", "--postgres", conninfo_,
                               "--no-migrate", "--sink", "null", "--session-timeout-ms", "6000",
                               "--commit-interval-ms", "200", "--admin-listen", "127.0.0.1:0"};
    a.insert(a.end(), more.begin(), more.end());
    return a;
  }

  // The address pacerd logged (event=admin_listening address=HOST:PORT).
  static std::string adminAddress(const PacerdProcess& p) {
    std::string address;
    const std::regex re(R"(event=admin_listening address=(\S+))");
    eventually(
        [&] {
          std::smatch m;
          const std::string log = p.log();
          if (!std::regex_search(log, m, re)) return false;
          address = m[1];
          return true;
        },
        seconds(30));
    return address;
  }

  std::string conninfo_;
  std::unique_ptr<ledger::PgDirectory> directory_;
  std::unique_ptr<testing::KafkaMockProcess> kafka_;
};

TEST_F(AdminTest, MetricsAgreeWithTheLedgerAndADrainStopsPacerdCleanly) {
  testing::RedisServer redis;
  ProviderInfo sms;
  sms.id = "sms";
  sms.limit = RateLimit{1000, 20};
  directory_->putProvider(sms);
  campaign("promo", 400, 10, "sms");
  campaign("news", 150, 5, "sms");
  produce(kafka_->bootstraps(), "promo", 300, 2);
  produce(kafka_->bootstraps(), "news", 200, 2);

  PacerdProcess pacerd(pacerdArgs({"--redis", "127.0.0.1:" + std::to_string(redis.port())}),
                       {std::string("PACER_ADMIN_TOKEN=") + kToken});
  ASSERT_GT(pacerd.pid(), 0);
  const std::string address = adminAddress(pacerd);
  ASSERT_FALSE(address.empty()) << pacerd.log();
  const std::string base = "http://" + address;

  // Ready once the consumer has its assignment; alive while the loop turns.
  ASSERT_TRUE(eventually([&] { return http("GET", base + "/readyz").status == 200; }, seconds(30)))
      << http("GET", base + "/readyz").body << pacerd.log();
  EXPECT_EQ(http("GET", base + "/healthz").status, 200);

  // Everything delivered and in the ledger, then the counters match it.
  ASSERT_TRUE(eventually([&] { return scalar("SELECT count(*) FROM deliveries") == 500; }, seconds(60)))
      << pacerd.log();
  const auto ledgerSent = [&](const std::string& c) {
    return static_cast<double>(
        scalar("SELECT count(*) FROM deliveries WHERE status = 'sent' AND campaign = '" + c + "'"));
  };
  std::string text;
  const std::string promo = R"({campaign="promo",provider="sms"})";
  const std::string news = R"({campaign="news",provider="sms"})";
  const bool agreed = eventually(
      [&] {
        text = http("GET", base + "/metrics").body;
        return sample(text, "pacer_campaign_sent_total" + promo) == ledgerSent("promo") &&
               sample(text, "pacer_campaign_sent_total" + news) == ledgerSent("news");
      },
      seconds(10));
  EXPECT_TRUE(agreed) << text;
  EXPECT_EQ(ledgerSent("promo"), 300);
  EXPECT_EQ(ledgerSent("news"), 200);
  EXPECT_EQ(sample(text, "pacer_campaign_send_rate" + promo), 400);
  EXPECT_EQ(sample(text, "pacer_campaign_send_rate" + news), 150);
  EXPECT_EQ(sample(text, R"(pacer_provider_send_rate{provider="sms"})"), 1000);
  EXPECT_EQ(sample(text, "pacer_campaign_failed_total" + promo), 0);
  EXPECT_EQ(sample(text, R"(pacer_provider_quota_degraded{provider="sms"})"), 0);
  EXPECT_GT(sample(text, "pacer_redis_round_trip_seconds_count"), 0) << text;
  EXPECT_GT(sample(text, "pacer_redis_round_trips_total"), 0);
  EXPECT_EQ(sample(text, R"(pacer_build_info{version=")" PACER_VERSION_FOR_TEST R"(",sink="null",quota="redis"})"),
            1);
  // Offsets committed to the end: no lag on either partition.
  EXPECT_TRUE(eventually(
      [&] {
        text = http("GET", base + "/metrics").body;
        return sample(text, R"(pacer_kafka_offset_lag{topic="messages",partition="0"})") == 0 &&
               sample(text, R"(pacer_kafka_offset_lag{topic="messages",partition="1"})") == 0 &&
               sample(text, R"(pacer_kafka_committed_offset{topic="messages",partition="0"})") == 250;
      },
      seconds(10)))
      << text;

  EXPECT_EQ(http("POST", base + "/metrics").status, 405);
  EXPECT_EQ(http("GET", base + "/nothing-here").status, 404);
  EXPECT_EQ(http("GET", base + "/admin/drain").status, 405);

  // State changes need the token.
  EXPECT_EQ(http("POST", base + "/admin/drain").status, 401);
  EXPECT_EQ(http("POST", base + "/admin/drain", "Bearer wrong-token").status, 401);
  EXPECT_EQ(pacerd.wait(seconds(0)), -1) << "still running after refused drains";
  produce(kafka_->bootstraps(), "news", 50, 2);  // in flight while the drain comes
  const HttpAnswer drained = http("POST", base + "/admin/drain", std::string("Bearer ") + kToken);
  EXPECT_EQ(drained.status, 200) << drained.body;
  EXPECT_EQ(pacerd.wait(seconds(30)), 0) << pacerd.log();

  const std::string log = pacerd.log();
  EXPECT_THAT(log, HasSubstr("event=drain_requested source=admin"));
  EXPECT_THAT(log, HasSubstr("event=stopped"));
  EXPECT_THAT(log, HasSubstr("status=401"));
  EXPECT_THAT(log, Not(HasSubstr(kToken))) << "the token is never logged";
  // Whatever it read has its row (sent, or let go unread and not committed).
  const std::int64_t rows = scalar("SELECT count(*) FROM deliveries");
  EXPECT_GE(rows, 500);
  EXPECT_EQ(scalar("SELECT count(*) FROM deliveries WHERE status <> 'sent'"), 0);
}

TEST_F(AdminTest, WithoutATokenDrainIsForbiddenAndABusyPortIsAStartUpFailure) {
  campaign("promo", 100, 5, "");
  PacerdProcess first(pacerdArgs({}), {});
  const std::string address = adminAddress(first);
  ASSERT_FALSE(address.empty()) << first.log();
  EXPECT_EQ(http("POST", "http://" + address + "/admin/drain", "Bearer anything").status, 403);

  // A second pacerd on the same address: exit 1 with the reason.
  std::vector<std::string> args = pacerdArgs({"--group", "other"});
  args[args.size() - 3] = address;  // --admin-listen's value (before --group other)
  PacerdProcess second(args, {});
  EXPECT_EQ(second.wait(seconds(30)), 1) << second.log();
  EXPECT_THAT(second.log(), HasSubstr("Address already in use"));

  ::kill(first.pid(), SIGTERM);
  EXPECT_EQ(first.wait(seconds(30)), 0) << first.log();
}

}  // namespace
}  // namespace pacer

namespace pacer {
namespace {

// A listen address pacerd cannot use is refused before it connects to
// anything: exit 2 with the flag named.
TEST(AdminCommandLineTest, AMalformedListenAddressExitsTwoNamingTheFlag) {
  for (const std::string bad : {"9464", "127.0.0.1:http", "::1:9464", "127.0.0.1:70000"}) {
    PacerdProcess p({"--brokers", "127.0.0.1:1", "--topic", "t", "--postgres", "host=127.0.0.1 port=1",
                     "--admin-listen", bad},
                    {});
    EXPECT_EQ(p.wait(seconds(30)), 2) << p.log();
    EXPECT_THAT(p.log(), HasSubstr("--admin-listen"));
    EXPECT_THAT(p.log(), HasSubstr(bad));
  }
}

}  // namespace
}  // namespace pacer
