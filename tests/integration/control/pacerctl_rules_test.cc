// Priority classes and recipient rules through pacerctl against a real
// PostgreSQL: campaign create and set-rules write the columns of migration 8
// and announce the change; show, list and top print them; the ledger's
// suppressed rows are counted wherever failed ones are; and a row whose rules
// cannot be read is skipped by pacerd's directory, naming why, while the
// others load.
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "pacer/ledger/pg_directory.h"
#include "pacerctl_fixture.h"
#include "support/redis_server.h"

namespace pacer::control {
namespace {

using namespace pacer::control::test;  // the harness, pacerctl_fixture.h
using Json = nlohmann::json;

class PacerctlRulesTest : public PacerctlTest {
 protected:
  // class:quiet_hours:time_zone:frequency_cap:cap_policy of a campaign, NULL as "NULL".
  std::string rulesRow(const std::string& id) {
    const pqxx::row r = row(fmt::format(
        "SELECT coalesce(priority_class, 'NULL') || ':' || coalesce(quiet_hours, 'NULL') || ':' || "
        "coalesce(time_zone, 'NULL') || ':' || coalesce(frequency_cap, 'NULL') || ':' || cap_policy "
        "FROM campaigns WHERE id = '{}'",
        id));
    return r[0].as<std::string>();
  }
};

TEST_F(PacerctlRulesTest, CreateWritesTheRulesAndShowAndListPrintThem) {
  Outcome r = ctl({"campaign", "create", "night", "--rate", "10", "--class", "bulk", "--quiet-hours",
                   "21:00:00-08:00", "--time-zone", "Europe/London", "--cap", "3/24h", "--cap-policy", "defer"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_THAT(r.out, HasSubstr("class bulk, quiet hours 21:00-08:00 (Europe/London), cap 3/24h (defer)"));
  EXPECT_EQ(rulesRow("night"), "bulk:21:00-08:00:Europe/London:3/24h:defer");
  EXPECT_THAT(announced(), ElementsAre(payload("campaign", "night", "create")));
  ASSERT_EQ(ctl({"campaign", "create", "plain"}).code, 0);
  EXPECT_EQ(rulesRow("plain"), "NULL:NULL:NULL:NULL:suppress");

  r = ctl({"campaign", "show", "night"});
  ASSERT_EQ(r.code, 0) << r;
  for (const char* line : {"priority_class    bulk", "quiet_hours       21:00-08:00", "time_zone         Europe/London",
                           "frequency_cap     3/24h", "cap_policy        defer", "suppressed        0"})
    EXPECT_THAT(r.out, HasSubstr(line)) << r.out;
  r = ctl({"campaign", "list"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_THAT(r.out, HasSubstr("CLASS    QUIET HOURS  TIME ZONE      CAP"));
  EXPECT_THAT(r.out, HasSubstr("bulk     21:00-08:00  Europe/London  3/24h defer"));
  EXPECT_THAT(r.out, HasSubstr("default  -            -              -"));

  r = ctl({"--json", "campaign", "list"});
  ASSERT_EQ(r.code, 0) << r;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j.at(0).at("id"), "night");
  EXPECT_EQ(j.at(0).at("priority_class"), "bulk");
  EXPECT_EQ(j.at(0).at("quiet_hours"), "21:00-08:00");
  EXPECT_EQ(j.at(0).at("time_zone"), "Europe/London");
  EXPECT_EQ(j.at(0).at("frequency_cap"), "3/24h");
  EXPECT_EQ(j.at(0).at("cap_policy"), "defer");
  for (const char* k : {"priority_class", "quiet_hours", "time_zone", "frequency_cap"})
    EXPECT_TRUE(j.at(1).at(k).is_null()) << k;
  EXPECT_EQ(j.at(1).at("cap_policy"), "suppress");
}

TEST_F(PacerctlRulesTest, CreateRefusesBadRulesWithExitTwoWritingNothing) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--cap", "3"}, "--cap: frequency cap '3'"},
      {{"--cap", "0/1h"}, "--cap: frequency cap '0/1h'"},
      {{"--quiet-hours", "21-8"}, "--quiet-hours: quiet window '21-8'"},
      {{"--cap-policy", "drop"}, "--cap-policy 'drop'"},
      {{"--class", "a/b"}, "--class 'a/b'"},
      {{"--time-zone", "Europe London"}, "--time-zone 'Europe London'"},
      {{"--quiet-hours", "21:00-08:00"}, "quiet_hours 21:00-08:00 without a time_zone"},
  };
  for (const auto& [flags, says] : cases) {
    std::vector<std::string> args{"campaign", "create", "c1"};
    args.insert(args.end(), flags.begin(), flags.end());
    const Outcome r = ctl(args);
    EXPECT_EQ(r.code, 2) << r;
    EXPECT_THAT(r.err, HasSubstr(says)) << r;
  }
  EXPECT_EQ(count("campaigns"), 0);
  EXPECT_THAT(announced(), IsEmpty());
}

TEST_F(PacerctlRulesTest, SetRulesChangesOnlyWhatIsGivenAndAnnouncesIt) {
  ASSERT_EQ(ctl({"campaign", "create", "c1", "--rate", "10", "--cap", "3/24h"}).code, 0);
  announced();
  Outcome r = ctl({"campaign", "set-rules", "c1", "--class", "bulk", "--quiet-hours", "22:00-07:00", "--time-zone",
                   "Asia/Tokyo"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_THAT(r.out, HasSubstr("campaign 'c1': class default, quiet hours none, cap 3/24h (suppress) -> class bulk, "
                               "quiet hours 22:00-07:00 (Asia/Tokyo), cap 3/24h (suppress)"));
  EXPECT_EQ(rulesRow("c1"), "bulk:22:00-07:00:Asia/Tokyo:3/24h:suppress");
  EXPECT_THAT(announced(), ElementsAre(payload("campaign", "c1", "set-rules")));
  EXPECT_EQ(campaignRow("c1"), "10 2 1 null active ''") << "the rate and the rest stay";

  // The same again: nothing written, nothing announced.
  r = ctl({"campaign", "set-rules", "c1", "--class", "bulk"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_THAT(r.out, HasSubstr("nothing changed"));
  EXPECT_THAT(announced(), IsEmpty());

  // Clearing the zone under quiet hours would leave the row unusable: refused.
  r = ctl({"campaign", "set-rules", "c1", "--time-zone", "none"});
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_THAT(r.err, HasSubstr("would not be usable: quiet_hours 22:00-07:00 without a time_zone"));
  r = ctl({"--json", "campaign", "set-rules", "c1", "--quiet-hours", "none", "--time-zone", "none", "--cap", "none",
           "--class", "default", "--cap-policy", "defer"});
  ASSERT_EQ(r.code, 0) << r;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j.at("change"), "set-rules");
  EXPECT_EQ(j.at("previous").at("priority_class"), "bulk");
  EXPECT_TRUE(j.at("campaign").at("priority_class").is_null());
  EXPECT_EQ(j.at("campaign").at("cap_policy"), "defer");
  EXPECT_EQ(rulesRow("c1"), "NULL:NULL:NULL:NULL:defer");

  EXPECT_EQ(ctl({"campaign", "set-rules", "nope", "--class", "bulk"}).code, 1);
  ASSERT_EQ(ctl({"campaign", "cancel", "c1"}).code, 0);
  r = ctl({"campaign", "set-rules", "c1", "--class", "bulk"});
  EXPECT_EQ(r.code, 1) << r;
  EXPECT_THAT(r.err, HasSubstr("campaign 'c1' is cancelled: a rule no longer applies to it"));
}

TEST_F(PacerctlRulesTest, SuppressedRowsAreCountedLikeFailedOnesInShowStatusAndTop) {
  ASSERT_EQ(ctl({"campaign", "create", "c1", "--total", "10", "--class", "bulk"}).code, 0);
  ASSERT_EQ(ctl({"campaign", "create", "c2", "--total", "5"}).code, 0);
  exec(
      "INSERT INTO deliveries (message_id, campaign, topic, kafka_partition, kafka_offset, status, reason, "
      "recorded_at) SELECT 's-' || i, 'c1', 't', 0, i, 'suppressed', 'suppressed: frequency cap', "
      "CASE WHEN i <= 2 THEN now() - interval '2 hours' ELSE now() END FROM generate_series(1, 4) i "
      "UNION ALL SELECT 'ok-' || i, 'c1', 't', 0, 10 + i, 'sent', '', now() FROM generate_series(1, 3) i");
  Outcome r = ctl({"--json", "campaign", "show", "c1"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_EQ(Json::parse(r.out).at("ledger").at("suppressed"), 4);
  r = ctl({"--json", "status"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_EQ(Json::parse(r.out).at("ledger").at("suppressed"), 4);
  EXPECT_EQ(Json::parse(r.out).at("ledger").at("total"), 7);

  r = ctl({"--json", "top", "--once"});
  ASSERT_EQ(r.code, 0) << r;
  Json j = Json::parse(r.out);
  const Json& c1 = j.at("campaigns").at(0);
  EXPECT_EQ(c1.at("suppressed"), 4);
  EXPECT_EQ(c1.at("priority_class"), "bulk");
  EXPECT_EQ(c1.at("backlog"), 10 - 7) << "a suppressed message is finished";
  EXPECT_EQ(j.at("totals").at("suppressed"), 4);
  ASSERT_EQ(j.at("classes").size(), 2u) << j.dump(2);
  EXPECT_TRUE(j.at("classes").at(0).at("class").is_null());
  EXPECT_EQ(j.at("classes").at(0).at("backlog"), 5);
  EXPECT_EQ(j.at("classes").at(1).at("class"), "bulk");
  EXPECT_EQ(j.at("classes").at(1).at("backlog"), 3);

  // A second snapshot of the same object counts the settled rows once.
  PgControl db(ConnectOptions{conninfo_});
  EXPECT_EQ(db.topSnapshot(5, 10).campaigns.at(0).suppressed, 4);
  exec(
      "INSERT INTO deliveries (message_id, campaign, topic, kafka_partition, kafka_offset, status) "
      "VALUES ('s-5', 'c1', 't', 0, 5, 'suppressed')");
  EXPECT_EQ(db.topSnapshot(5, 10).campaigns.at(0).suppressed, 5);

  r = ctl({"top", "--once", "--width", "200"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_THAT(r.out, HasSubstr("class default: 1 campaign, backlog 5, 0.0/s\nclass bulk: 1 campaign, backlog 2"));
  EXPECT_THAT(r.out, HasSubstr("CLASS"));
  EXPECT_THAT(r.out, HasSubstr("SUPPR"));
}

// Without --admin, top reads PostgreSQL only; a long wait is parked there
// with its time (not_before), so top names quiet hours and caps from the
// parked rows: a whole-minute time of a campaign with quiet hours is the end
// of a quiet window, a time to the millisecond is a deferred cap's.
TEST_F(PacerctlRulesTest, TopWithoutAWorkerNamesQuietHoursAndCapsFromTheParkedRows) {
  ASSERT_EQ(ctl({"campaign", "create", "night", "--rate", "10", "--total", "100", "--quiet-hours", "21:00-08:00",
                 "--time-zone", "UTC", "--cap", "3/24h", "--cap-policy", "defer"})
                .code,
            0);
  ASSERT_EQ(
      ctl({"campaign", "create", "capped", "--rate", "10", "--total", "100", "--cap", "3/24h", "--cap-policy", "defer"})
          .code,
      0);
  ASSERT_EQ(ctl({"campaign", "create", "due", "--rate", "10", "--total", "100", "--quiet-hours", "21:00-08:00",
                 "--time-zone", "UTC"})
                .code,
            0);
  int next = 0;  // message ids and offsets, unique across the calls
  const auto park = [&](const std::string& campaign, int n, const std::string& not_before) {
    exec(fmt::format(
        "INSERT INTO parked (message_id, campaign, topic, kafka_partition, kafka_offset, payload, not_before) "
        "SELECT '{0}-' || i, '{0}', 't', 0, i, 'x', {1} FROM generate_series({2}, {3}) i",
        campaign, not_before, next + 1, next + n));
    next += n;
  };
  park("night", 30, "date_trunc('minute', now()) + interval '3 hours'");
  park("night", 2, "now() + interval '2 hours 0.123 seconds'");  // its cap's: fewer, named after quiet hours
  park("capped", 20, "date_trunc('minute', now()) + interval '5 hours 1.456 seconds'");
  park("due", 20, "date_trunc('minute', now()) - interval '1 minute'");  // may go now: claimable, not waiting
  Outcome r = ctl({"--json", "top", "--once"});
  ASSERT_EQ(r.code, 0) << r;
  std::map<std::string, Json> by_id;
  const Json doc = Json::parse(r.out);
  for (const Json& c : doc.at("campaigns")) by_id[c.at("id").get<std::string>()] = c;
  ASSERT_EQ(by_id.size(), 3u) << r.out;
  EXPECT_EQ(by_id["night"].at("limited_by").at("code"), "quiet_hours") << r.out;
  EXPECT_THAT(by_id["night"].at("limited_by").at("text").get<std::string>(),
              HasSubstr("30 waiting for their recipients' quiet hours to end (30 of them parked)"));
  EXPECT_EQ(by_id["capped"].at("limited_by").at("code"), "frequency_cap") << r.out;
  EXPECT_THAT(by_id["capped"].at("limited_by").at("text").get<std::string>(),
              HasSubstr("20 waiting for a frequency cap"));
  EXPECT_NE(by_id["due"].at("limited_by").at("code"), "quiet_hours") << r.out;
  r = ctl({"top", "--once", "--width", "200"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_THAT(r.out, HasSubstr("quiet hours"));
  EXPECT_THAT(r.out, HasSubstr("freq cap"));
}

// Without --admin but with --redis, top reads the counts every worker adds
// to Redis each second: the campaign's retries and its provider's 5xx answers
// growing now name "5xx retries", as a worker's state document does, and
// once they stop growing they no longer do.
TEST_F(PacerctlRulesTest, TopWithRedisNames5xxRetriesWithoutAWorker) {
  pacer::testing::RedisServer redis;
  const std::string node = "127.0.0.1:" + std::to_string(redis.port());
  ASSERT_EQ(ctl({"provider", "create", "push", "--rate", "400"}).code, 0);
  ASSERT_EQ(ctl({"campaign", "create", "promo", "--rate", "100", "--total", "1000", "--provider", "push"}).code, 0);
  std::atomic<bool> stop{false};
  std::thread workers([&] {  // as pacerd's count writers do, once a second each (here faster)
    while (!stop) {
      redis.command({"HINCRBY", "pacer:{counts}", "provider_server_errors:push", "6"});
      redis.command({"HINCRBY", "pacer:{counts}", "campaign_retries:promo", "6"});
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  Outcome r = ctl({"--json", "top", "--once", "--redis", node});
  stop = true;
  workers.join();
  ASSERT_EQ(r.code, 0) << r;
  Json doc = Json::parse(r.out);
  const Json& why = doc.at("campaigns").at(0).at("limited_by");
  EXPECT_EQ(why.at("code"), "server_errors") << r.out;
  EXPECT_THAT(why.at("text").get<std::string>(), HasSubstr("retrying after 5xx answers from provider push"));
  EXPECT_THAT(why.at("text").get<std::string>(), HasSubstr("retries/s"));
  EXPECT_EQ(doc.at("providers").at(0).at("health").at("code"), "failing");
  r = ctl({"top", "--once", "--width", "200", "--redis", node});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_THAT(r.out, Not(HasSubstr("5xx retries"))) << "the counts no longer grow";
  EXPECT_THAT(r.out, HasSubstr("nothing"));
}

// pacerd's directory reads the same rows: a row whose rules cannot be used is
// skipped with the reason (row_skipped), the others load with their rules.
TEST_F(PacerctlRulesTest, TheDirectorySkipsARowWhoseRulesCannotBeReadAndLoadsTheRest) {
  ASSERT_EQ(ctl({"campaign", "create", "good", "--class", "bulk", "--quiet-hours", "21:00-08:00", "--time-zone",
                 "Europe/London", "--cap", "2/1h", "--cap-policy", "defer"})
                .code,
            0);
  for (const char* id : {"bad-cap", "no-zone", "bad-hours"}) ASSERT_EQ(ctl({"campaign", "create", id}).code, 0);
  exec("UPDATE campaigns SET frequency_cap = '3/day' WHERE id = 'bad-cap'");
  exec("UPDATE campaigns SET quiet_hours = '21:00-08:00' WHERE id = 'no-zone'");
  exec("UPDATE campaigns SET quiet_hours = 'late', time_zone = 'UTC' WHERE id = 'bad-hours'");

  ledger::PgDirectory dir(ledger::PgLedgerOptions{conninfo_});
  std::vector<RowProblem> problems;
  const std::vector<CampaignInfo> loaded = dir.campaigns(&problems);
  ASSERT_EQ(loaded.size(), 1u);
  const CampaignInfo& good = loaded.at(0);
  EXPECT_EQ(good.id, "good");
  EXPECT_EQ(good.priority_class, "bulk");
  EXPECT_EQ(good.quiet_hours, "21:00-08:00");
  EXPECT_EQ(good.time_zone, "Europe/London");
  ASSERT_TRUE(good.frequency_cap);
  EXPECT_EQ(good.frequency_cap->limit, 2u);
  EXPECT_EQ(good.cap_policy, CapPolicy::kDefer);
  ASSERT_EQ(problems.size(), 3u);
  std::map<std::string, std::string> why;
  for (const RowProblem& p : problems) why[p.id] = p.reason;
  EXPECT_THAT(why["bad-cap"], HasSubstr("frequency_cap: frequency cap '3/day'"));
  EXPECT_THAT(why["no-zone"], HasSubstr("quiet_hours 21:00-08:00 without a time_zone"));
  EXPECT_THAT(why["bad-hours"], HasSubstr("quiet_hours: quiet window 'late'"));
}

// A callback URL (docs/callbacks.md): create and set-rules write it, show and
// --json print it, "none" clears it, a bad one is refused with exit 2
// naming --callback, and pacerd's directory skips a row whose URL was
// written by hand past the check, naming it.
TEST_F(PacerctlRulesTest, CallbackUrlIsWrittenShownClearedAndCheckedEverywhere) {
  Outcome r = ctl({"campaign", "create", "otp", "--callback", "https://hooks.example.com/otp"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_THAT(r.out, HasSubstr("callback https://hooks.example.com/otp"));
  EXPECT_EQ(row("SELECT callback_url FROM campaigns WHERE id = 'otp'")[0].as<std::string>(),
            "https://hooks.example.com/otp");
  r = ctl({"campaign", "show", "otp"});
  EXPECT_THAT(r.out, HasSubstr("https://hooks.example.com/otp")) << r;
  for (const char* bad : {"ftp://x/y", "hooks.example.com", "https://", "http://a b"}) {
    r = ctl({"campaign", "set-rules", "otp", "--callback", bad});
    EXPECT_EQ(r.code, 2) << r;
    EXPECT_THAT(r.err, HasSubstr("--callback")) << r;
  }
  r = ctl({"--json", "campaign", "set-rules", "otp", "--callback", "http://127.0.0.1:8080/h"});
  ASSERT_EQ(r.code, 0) << r;
  Json j = Json::parse(r.out);
  EXPECT_EQ(j.at("previous").at("callback_url"), "https://hooks.example.com/otp");
  EXPECT_EQ(j.at("campaign").at("callback_url"), "http://127.0.0.1:8080/h");
  r = ctl({"--json", "campaign", "set-rules", "otp", "--callback", "none"});
  ASSERT_EQ(r.code, 0) << r;
  j = Json::parse(r.out);
  EXPECT_TRUE(j.at("campaign").at("callback_url").is_null());
  EXPECT_TRUE(row("SELECT callback_url FROM campaigns WHERE id = 'otp'")[0].is_null());

  // Past pacerctl: the CHECK keeps out a URL without a scheme; one it lets
  // through (a space) is pacerd's to skip.
  ASSERT_EQ(ctl({"campaign", "create", "bad-url"}).code, 0);
  EXPECT_ANY_THROW(exec("UPDATE campaigns SET callback_url = 'hooks.example.com' WHERE id = 'bad-url'"));
  exec("UPDATE campaigns SET callback_url = 'http://a b/' WHERE id = 'bad-url'");
  ledger::PgDirectory dir(ledger::PgLedgerOptions{conninfo_});
  std::vector<RowProblem> problems;
  const std::vector<CampaignInfo> loaded = dir.campaigns(&problems);
  ASSERT_EQ(loaded.size(), 1u);
  EXPECT_EQ(loaded.at(0).id, "otp");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems.at(0).id, "bad-url");
  EXPECT_THAT(problems.at(0).reason, HasSubstr("callback_url: 'http://a b/' has a space"));
}

}  // namespace
}  // namespace pacer::control
