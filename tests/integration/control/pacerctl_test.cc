// Every pacerctl command against a real PostgreSQL started for this test:
// what it writes in the tables, the NOTIFY a second connection receives, what
// it prints, and its exit code for each error case. pacerctl runs in process
// (runPacerctl); tests/cli/pacerctl_test.sh runs the binary.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <librdkafka/rdkafkacpp.h>

#include <chrono>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "pacer/control/pg_control.h"
#include "pacer/control/values.h"
#include "pacer/ledger/pg_ledger.h"
#include "pacer/pacerctl/cli.h"
#include "pacerctl_fixture.h"
#include "support/kafka_mock_process.h"
#include "support/loopback.h"
#include "support/postgres_server.h"

namespace pacer::control {
namespace {

using namespace pacer::control::test;  // the harness, pacerctl_fixture.h
using Json = nlohmann::json;

// --- campaign create -------------------------------------------------------

TEST_F(PacerctlTest, CampaignCreateWritesTheRowAndAnnouncesIt) {
  ASSERT_EQ(ctl({"provider", "create", "sms", "--rate", "150", "--burst", "10"}).code, 0);
  EXPECT_THAT(announced(), ElementsAre(payload("provider", "sms", "create")));

  const Outcome r = ctl(
      {"campaign", "create", "spring", "--rate", "100", "--weight", "2", "--provider", "sms", "--name", "Spring sale"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_THAT(r.out, HasSubstr("campaign 'spring' created: state active, send_rate 100/s, burst 2, weight 2"));
  EXPECT_EQ(campaignRow("spring"), "100 2 2 sms active 'Spring sale'");
  EXPECT_THAT(announced(), ElementsAre(R"({"kind":"campaign","id":"spring","change":"create"})"));
}

TEST_F(PacerctlTest, CampaignCreateDefaultsToUnlimitedWithoutProvider) {
  const Outcome r = ctl({"--json", "campaign", "create", "alerts"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_EQ(campaignRow("alerts"), "null 1 1 null active ''");
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j.at("change"), "create");
  EXPECT_TRUE(j.at("campaign").at("send_rate").is_null());
  EXPECT_TRUE(j.at("campaign").at("provider").is_null());
  EXPECT_THAT(announced(), ElementsAre(payload("campaign", "alerts", "create")));
}

TEST_F(PacerctlTest, CampaignCreateRefusesDuplicatesAndUnknownProvidersWithoutAnnouncing) {
  ASSERT_EQ(ctl({"campaign", "create", "c1", "--rate", "5"}).code, 0);
  EXPECT_THAT(announced(), ElementsAre(payload("campaign", "c1", "create")));

  Outcome r = ctl({"campaign", "create", "c1", "--rate", "50"});
  EXPECT_EQ(r.code, 1) << r;
  EXPECT_THAT(r.err, HasSubstr("campaign 'c1' already exists; `pacerctl campaign show c1` shows it"));
  EXPECT_EQ(campaignRow("c1"), "5 2 1 null active ''");  // untouched

  r = ctl({"campaign", "create", "c2", "--provider", "nope"});
  EXPECT_EQ(r.code, 1) << r;
  EXPECT_THAT(r.err, HasSubstr("provider 'nope' not found; `pacerctl provider list` shows the providers"));
  EXPECT_EQ(count("campaigns"), 1);
  EXPECT_THAT(announced(), IsEmpty());
}

TEST_F(PacerctlTest, CampaignCreateRefusesInvalidValuesWithExitTwoBeforeWritingAnything) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--rate", "-5"}, "--rate '-5': a rate cannot be negative"},
      {{"--rate", "nan"}, "--rate 'nan': not a finite number"},
      {{"--rate", "lots"}, "--rate 'lots': not a number"},
      {{"--rate", "100", "--burst", "0"}, "--burst '0': a burst is a number of messages, at least 1"},
      {{"--burst", "5"}, "an unlimited rate has no burst"},
      {{"--weight", "0"}, "--weight '0': a weight is a number above 0"},
      {{"--weight", "-1"}, "--weight '-1'"},
      {{"--name", "two\nlines"}, "--name: must be at most 256 bytes of UTF-8 text without control characters"},
  };
  for (const auto& [extra, message] : cases) {
    std::vector<std::string> args{"campaign", "create", "bad"};
    args.insert(args.end(), extra.begin(), extra.end());
    const Outcome r = ctl(args);
    EXPECT_EQ(r.code, 2) << r;
    EXPECT_THAT(r.err, HasSubstr(message)) << r;
  }
  // Given but empty (`--rate "$UNSET"`) is refused, never taken as the default.
  for (const auto& [args, message] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"campaign", "create", "bad", "--rate", ""}, "--rate '': not a number"},
           {{"campaign", "create", "bad", "--rate", "5", "--burst", ""}, "--burst ''"},
           {{"campaign", "create", "bad", "--weight", ""}, "--weight ''"},
           {{"campaign", "create", "bad", "--provider", ""}, "provider id: empty"},
           {{"campaign", "set-rate", "bad", ""}, "rate '': not a number"},
           {{"provider", "set-rate", "bad", ""}, "rate '': not a number"}}) {
    const Outcome r = ctl(args);
    EXPECT_EQ(r.code, 2) << r;
    EXPECT_THAT(r.err, HasSubstr(message)) << r;
  }
  const Outcome r = ctl({"campaign", "create", "tab\there"});
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_THAT(r.err, HasSubstr("campaign id: must be 1 to 256 bytes of UTF-8 text without control characters"));
  EXPECT_EQ(count("campaigns"), 0);
  EXPECT_THAT(announced(), IsEmpty());
}

// --- campaign list / show --------------------------------------------------

TEST_F(PacerctlTest, CampaignListPrintsAnAlignedTableAndJson) {
  Outcome r = ctl({"campaign", "list"});
  EXPECT_EQ(r.code, 0) << r;
  EXPECT_THAT(r.out, HasSubstr("no campaigns"));

  ASSERT_EQ(ctl({"provider", "create", "sms", "--rate", "150"}).code, 0);
  ASSERT_EQ(ctl({"campaign", "create", "vip", "--rate", "5", "--provider", "sms", "--name", "VIP"}).code, 0);
  ASSERT_EQ(ctl({"campaign", "create", "alerts", "--name", "Security alerts"}).code, 0);
  ASSERT_EQ(ctl({"campaign", "pause", "vip"}).code, 0);

  r = ctl({"campaign", "list"});
  ASSERT_EQ(r.code, 0) << r;
  std::istringstream lines(r.out);
  std::string header, first, second, extra;
  std::getline(lines, header);
  std::getline(lines, first);
  std::getline(lines, second);
  EXPECT_FALSE(std::getline(lines, extra)) << r;
  EXPECT_EQ(header.rfind("ID      NAME             STATE   SEND_RATE  BURST  WEIGHT  PROVIDER  CLASS    QUIET HOURS  "
                         "TIME ZONE  CAP  UPDATED (UTC)",
                         0),
            0u)
      << r;
  EXPECT_EQ(first.rfind("alerts  Security alerts  active  unlimited      1       1  -", 0), 0u) << r;
  EXPECT_EQ(second.rfind("vip     VIP              paused        5/s      2       1  sms", 0), 0u) << r;
  // Every column starts at the same offset on every line.
  EXPECT_EQ(header.find("UPDATED"), first.find("20"));

  r = ctl({"campaign", "list", "--json"});  // --json after the command works too
  ASSERT_EQ(r.code, 0) << r;
  const Json j = Json::parse(r.out);
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0].at("id"), "alerts");
  EXPECT_EQ(j[1].at("id"), "vip");
  EXPECT_EQ(j[1].at("state"), "paused");
  EXPECT_EQ(j[1].at("send_rate"), 5.0);
  EXPECT_EQ(j[1].at("provider"), "sms");
  EXPECT_EQ(j[1].at("updated_at").get<std::string>().size(), 20u);  // 2026-11-23T09:00:00Z
}

TEST_F(PacerctlTest, CampaignShowCountsTheLedgerAndParkedForThatCampaignOnly) {
  ASSERT_EQ(ctl({"campaign", "create", "c1", "--rate", "10"}).code, 0);
  ASSERT_EQ(ctl({"campaign", "create", "c2"}).code, 0);
  exec(
      "INSERT INTO deliveries (message_id, campaign, topic, kafka_partition, kafka_offset, status, reason, "
      "recorded_at) "
      "VALUES ('m1', 'c1', 't', 0, 1, 'sent', '', '2026-11-23 08:00:00+00'), "
      "('m2', 'c1', 't', 0, 2, 'sent', '', '2026-11-23 08:00:05+00'), "
      "('m3', 'c1', 't', 0, 3, 'failed', 'HTTP 400', '2026-11-23 08:00:07+00'), "
      "('m4', 'c1', 't', 0, 4, 'rejected', 'too big', '2026-11-23 08:00:06+00'), "
      "('m6', 'c1', 't', 0, 9, 'invalid_token', 'invalid token: Unregistered', '2026-11-23 08:00:01+00'), "
      "('m5', 'c2', 't', 0, 5, 'sent', '', '2026-11-23 09:00:00+00')");
  exec(
      "INSERT INTO parked (message_id, campaign, topic, kafka_partition, kafka_offset, payload) VALUES "
      "('p1', 'c1', 't', 0, 6, 'x'), ('p2', 'c1', 't', 0, 7, 'y'), ('p3', 'c2', 't', 0, 8, 'z')");

  Outcome r = ctl({"--json", "campaign", "show", "c1"});
  ASSERT_EQ(r.code, 0) << r;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j.at("id"), "c1");
  EXPECT_EQ(j.at("send_rate"), 10.0);
  EXPECT_EQ(j.at("ledger"),
            Json::parse(R"({"sent":2,"failed":1,"rejected":1,"invalid_token":1,"suppressed":0,"expired":0,)"
                        R"("last_recorded_at":"2026-11-23T08:00:07Z"})"));
  EXPECT_EQ(j.at("parked"), 2);

  r = ctl({"campaign", "show", "c1"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_THAT(r.out, HasSubstr("\nsend_rate         10/s\n"));
  EXPECT_THAT(r.out, HasSubstr("\nsent              2\n"));
  EXPECT_THAT(r.out, HasSubstr("\ninvalid_token     1\n"));
  EXPECT_THAT(r.out, HasSubstr("\nlast_recorded_at  2026-11-23T08:00:07Z\n"));
  EXPECT_THAT(r.out, HasSubstr("\nparked            2\n"));

  // A campaign with no ledger rows yet.
  exec("DELETE FROM deliveries WHERE campaign = 'c2'");
  r = ctl({"--json", "campaign", "show", "c2"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(Json::parse(r.out).at("ledger").at("last_recorded_at").is_null());
}

TEST_F(PacerctlTest, AnUnknownCampaignIsNotFoundWithExitOneForEveryCommand) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{{"campaign", "show", "x"},
                                                                                    {"campaign", "set-rate", "x", "10"},
                                                                                    {"campaign", "pause", "x"},
                                                                                    {"campaign", "resume", "x"},
                                                                                    {"campaign", "cancel", "x"}}) {
    const Outcome r = ctl(args);
    EXPECT_EQ(r.code, 1) << r;
    EXPECT_EQ(r.err, "pacerctl: campaign 'x' not found; `pacerctl campaign list` shows the campaigns\n") << r;
    EXPECT_EQ(r.out, "");
  }
  EXPECT_THAT(announced(), IsEmpty());
}

// --- campaign set-rate -----------------------------------------------------

TEST_F(PacerctlTest, CampaignSetRateChangesRateBurstAndUpdatedAtInOneAnnouncedTransaction) {
  ASSERT_EQ(ctl({"campaign", "create", "c1", "--rate", "100", "--burst", "5"}).code, 0);
  announced();
  exec("UPDATE campaigns SET updated_at = now() - interval '1 hour'");

  Outcome r = ctl({"campaign", "set-rate", "c1", "250"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_EQ(r.out, "campaign 'c1': send_rate 100/s -> 250/s, burst 5 -> 4\n");
  EXPECT_EQ(campaignRow("c1"), "250 4 1 null active ''");  // burst: the default for 250/s
  EXPECT_TRUE(row("SELECT updated_at > now() - interval '1 minute' FROM campaigns")[0].as<bool>());
  // The listener is told after the commit: a worker that reads on the
  // notification sees the new rate.
  ASSERT_THAT(announced(), ElementsAre(payload("campaign", "c1", "set-rate")));
  {
    pqxx::read_transaction tx(*listen_conn_);
    EXPECT_EQ(tx.exec1("SELECT send_rate FROM campaigns WHERE id = 'c1'")[0].as<double>(), 250.0);
  }

  r = ctl({"--json", "campaign", "set-rate", "c1", "40", "--burst", "9"});
  ASSERT_EQ(r.code, 0) << r;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j.at("changed"), true);
  EXPECT_EQ(j.at("campaign").at("send_rate"), 40.0);
  EXPECT_EQ(j.at("campaign").at("burst"), 9.0);
  EXPECT_EQ(j.at("previous").at("send_rate"), 250.0);
  EXPECT_EQ(campaignRow("c1"), "40 9 1 null active ''");

  ASSERT_EQ(ctl({"campaign", "set-rate", "c1", "unlimited"}).code, 0);
  EXPECT_EQ(campaignRow("c1"), "null 1 1 null active ''");
  EXPECT_THAT(announced(), ElementsAre(payload("campaign", "c1", "set-rate"), payload("campaign", "c1", "set-rate")));
}

TEST_F(PacerctlTest, CampaignSetRateRefusesBadRatesAndFinishedCampaigns) {
  ASSERT_EQ(ctl({"campaign", "create", "c1", "--rate", "100"}).code, 0);
  ASSERT_EQ(ctl({"campaign", "create", "done", "--rate", "100"}).code, 0);
  exec("UPDATE campaigns SET state = 'completed' WHERE id = 'done'");
  announced();

  for (const char* bad : {"-5", "nan", "inf", "20000000", "fast"}) {
    const Outcome r = ctl({"campaign", "set-rate", "c1", bad});
    EXPECT_EQ(r.code, 2) << bad << "\n" << r;
    EXPECT_THAT(r.err, HasSubstr(fmt::format("rate '{}'", bad))) << r;
  }
  Outcome r = ctl({"campaign", "set-rate", "c1", "100", "--burst", "0.5"});
  EXPECT_EQ(r.code, 2) << r;

  ASSERT_EQ(ctl({"campaign", "cancel", "c1"}).code, 0);
  r = ctl({"campaign", "set-rate", "c1", "10"});
  EXPECT_EQ(r.code, 1) << r;
  EXPECT_THAT(r.err, HasSubstr("campaign 'c1' is cancelled: a rate no longer applies to it"));
  r = ctl({"campaign", "set-rate", "done", "10"});
  EXPECT_EQ(r.code, 1) << r;
  EXPECT_THAT(r.err, HasSubstr("campaign 'done' is completed"));
  EXPECT_EQ(campaignRow("c1"), "100 2 1 null cancelled ''");
  EXPECT_THAT(announced(), ElementsAre(payload("campaign", "c1", "cancel")));
}

// --- pause / resume / cancel -----------------------------------------------

TEST_F(PacerctlTest, PauseResumeAndCancelFollowTheStateMachine) {
  ASSERT_EQ(ctl({"campaign", "create", "c1", "--rate", "10"}).code, 0);
  announced();

  Outcome r = ctl({"campaign", "pause", "c1"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_EQ(r.out, "campaign 'c1' paused (was active)\n");
  EXPECT_EQ(campaignRow("c1"), "10 2 1 null paused ''");
  EXPECT_THAT(announced(), ElementsAre(payload("campaign", "c1", "pause")));

  // Already so: exit 0, nothing written, nothing announced.
  exec("UPDATE campaigns SET updated_at = '2026-01-01 00:00:00+00'");
  r = ctl({"--json", "campaign", "pause", "c1"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_EQ(Json::parse(r.out).at("changed"), false);
  EXPECT_EQ(Json::parse(r.out).at("campaign").at("updated_at"), "2026-01-01T00:00:00Z");
  EXPECT_THAT(announced(), IsEmpty());

  r = ctl({"campaign", "resume", "c1"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_EQ(r.out, "campaign 'c1' resumed (was paused)\n");
  EXPECT_EQ(campaignRow("c1"), "10 2 1 null active ''");
  EXPECT_THAT(announced(), ElementsAre(payload("campaign", "c1", "resume")));

  r = ctl({"campaign", "resume", "c1"});
  EXPECT_EQ(r.code, 0) << r;
  EXPECT_THAT(r.out, HasSubstr("already active"));

  r = ctl({"campaign", "cancel", "c1"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_THAT(r.out, HasSubstr("campaign 'c1' cancelled (was active); pacerd fails its remaining messages"));
  EXPECT_EQ(campaignRow("c1"), "10 2 1 null cancelled ''");
  EXPECT_THAT(announced(), ElementsAre(payload("campaign", "c1", "cancel")));

  r = ctl({"campaign", "resume", "c1"});
  EXPECT_EQ(r.code, 1) << r;
  EXPECT_THAT(r.err, HasSubstr("campaign 'c1' is cancelled and cannot be resumed; create a new campaign"));
  r = ctl({"campaign", "pause", "c1"});
  EXPECT_EQ(r.code, 1) << r;
  EXPECT_THAT(r.err, HasSubstr("is cancelled: there is nothing to pause"));
  r = ctl({"campaign", "cancel", "c1"});
  EXPECT_EQ(r.code, 0) << r;
  EXPECT_THAT(r.out, HasSubstr("already cancelled"));
  EXPECT_EQ(campaignRow("c1"), "10 2 1 null cancelled ''");
  EXPECT_THAT(announced(), IsEmpty());
}

TEST_F(PacerctlTest, CancelWorksFromPausedAndIsRefusedForACompletedCampaign) {
  ASSERT_EQ(ctl({"campaign", "create", "p"}).code, 0);
  ASSERT_EQ(ctl({"campaign", "create", "done"}).code, 0);
  ASSERT_EQ(ctl({"campaign", "pause", "p"}).code, 0);
  exec("UPDATE campaigns SET state = 'completed' WHERE id = 'done'");
  announced();

  Outcome r = ctl({"campaign", "cancel", "p"});
  EXPECT_EQ(r.code, 0) << r;
  EXPECT_THAT(r.out, HasSubstr("(was paused)"));
  r = ctl({"campaign", "cancel", "done"});
  EXPECT_EQ(r.code, 1) << r;
  EXPECT_THAT(r.err, HasSubstr("campaign 'done' is completed: there is nothing to cancel"));
  r = ctl({"campaign", "resume", "done"});
  EXPECT_EQ(r.code, 1) << r;
  EXPECT_EQ(row("SELECT string_agg(id || '=' || state, ',' ORDER BY id) FROM campaigns")[0].as<std::string>(),
            "done=completed,p=cancelled");
  EXPECT_THAT(announced(), ElementsAre(payload("campaign", "p", "cancel")));
}

// --- providers -------------------------------------------------------------

TEST_F(PacerctlTest, ProviderCreateListAndSetRate) {
  Outcome r = ctl({"provider", "list"});
  EXPECT_EQ(r.code, 0) << r;
  EXPECT_THAT(r.out, HasSubstr("no providers"));

  r = ctl({"provider", "create", "sms", "--rate", "400"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_EQ(r.out, "provider 'sms' created: rate 400/s, burst 5\n");
  ASSERT_EQ(ctl({"provider", "create", "push"}).code, 0);
  ASSERT_EQ(ctl({"campaign", "create", "a", "--provider", "sms"}).code, 0);
  ASSERT_EQ(ctl({"campaign", "create", "b", "--provider", "sms"}).code, 0);
  EXPECT_THAT(announced(), ElementsAre(payload("provider", "sms", "create"), payload("provider", "push", "create"),
                                       payload("campaign", "a", "create"), payload("campaign", "b", "create")));

  r = ctl({"provider", "create", "sms"});
  EXPECT_EQ(r.code, 1) << r;
  EXPECT_THAT(r.err, HasSubstr("provider 'sms' already exists"));
  r = ctl({"provider", "create", "x", "--rate", "-1"});
  EXPECT_EQ(r.code, 2) << r;

  r = ctl({"provider", "list"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_THAT(r.out, HasSubstr("ID         RATE  BURST  CAMPAIGNS  UPDATED (UTC)\n"));
  EXPECT_THAT(r.out, HasSubstr("\npush  unlimited      1          0  20"));
  EXPECT_THAT(r.out, HasSubstr("\nsms       400/s      5          2  20"));

  exec("UPDATE providers SET updated_at = now() - interval '1 hour'");
  r = ctl({"provider", "set-rate", "sms", "150", "--burst", "10"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_EQ(r.out, "provider 'sms': rate 400/s -> 150/s, burst 5 -> 10\n");
  const pqxx::row p =
      row("SELECT rate, burst, updated_at > now() - interval '1 minute' FROM providers WHERE id = 'sms'");
  EXPECT_EQ(p[0].as<double>(), 150.0);
  EXPECT_EQ(p[1].as<double>(), 10.0);
  EXPECT_TRUE(p[2].as<bool>());

  r = ctl({"--json", "provider", "list"});
  ASSERT_EQ(r.code, 0) << r;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j[1].at("id"), "sms");
  EXPECT_EQ(j[1].at("rate"), 150.0);
  EXPECT_EQ(j[1].at("campaigns"), 2);
  EXPECT_TRUE(j[0].at("rate").is_null());

  r = ctl({"provider", "set-rate", "nope", "10"});
  EXPECT_EQ(r.code, 1) << r;
  EXPECT_EQ(r.err, "pacerctl: provider 'nope' not found; `pacerctl provider list` shows the providers\n");
  r = ctl({"provider", "set-rate", "sms", "unlimited", "--burst", "3"});
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_THAT(announced(), ElementsAre(payload("provider", "sms", "set-rate")));
}

// --- status ----------------------------------------------------------------

TEST_F(PacerctlTest, StatusCountsCampaignsByStateLedgerAndParked) {
  ASSERT_EQ(ctl({"provider", "create", "sms"}).code, 0);
  for (const char* id : {"a", "b", "c", "d"}) ASSERT_EQ(ctl({"campaign", "create", id}).code, 0);
  ASSERT_EQ(ctl({"campaign", "pause", "b"}).code, 0);
  ASSERT_EQ(ctl({"campaign", "cancel", "c"}).code, 0);
  exec(
      "INSERT INTO deliveries (message_id, campaign, topic, kafka_partition, kafka_offset, status, recorded_at) "
      "VALUES ('m1', 'a', 't', 0, 1, 'sent', '2026-11-23 08:00:00+00'), ('m2', 'b', 't', 0, 2, 'sent', "
      "'2026-11-23 08:30:00+00'), ('m3', 'c', 't', 0, 3, 'failed', '2026-11-23 08:10:00+00'), "
      "('m4', '', 't', 0, 4, 'rejected', '2026-11-23 08:20:00+00'), "
      "('m5', 'a', 't', 0, 8, 'invalid_token', '2026-11-23 08:25:00+00')");
  exec(
      "INSERT INTO parked (message_id, campaign, topic, kafka_partition, kafka_offset, payload, owner, lease_until) "
      "VALUES ('p1', 'a', 't', 0, 5, 'x', NULL, NULL), ('p2', 'a', 't', 0, 6, 'x', 'w1', now() + interval '1 "
      "minute'), ('p3', 'b', 't', 0, 7, 'x', 'dead', now() - interval '1 minute')");

  Outcome r = ctl({"--json", "status"});
  ASSERT_EQ(r.code, 0) << r;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j.at("schema").at("database"), ledger::latestSchemaVersion());
  EXPECT_EQ(j.at("schema").at("pacerctl"), ledger::latestSchemaVersion());
  EXPECT_EQ(j.at("campaigns"), Json::parse(R"({"active":2,"paused":1,"cancelled":1,"completed":0,"total":4})"));
  EXPECT_EQ(j.at("providers"), 1);
  EXPECT_EQ(j.at("ledger"),
            Json::parse(R"({"sent":2,"failed":1,"rejected":1,"invalid_token":1,"suppressed":0,"expired":0,)"
                        R"("last_recorded_at":"2026-11-23T08:30:00Z","total":5})"));
  EXPECT_EQ(j.at("parked"), Json::parse(R"({"total":3,"claimed":1})"));

  r = ctl({"status"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_THAT(r.out, HasSubstr(fmt::format("schema version: {} (this pacerctl: {})", ledger::latestSchemaVersion(),
                                           ledger::latestSchemaVersion())));
  EXPECT_THAT(r.out, HasSubstr("\ncampaigns active                 2\n"));
  EXPECT_THAT(r.out, HasSubstr("\nledger rejected                  1\n"));
  EXPECT_THAT(r.out, HasSubstr("\nledger invalid_token             1\n"));
  EXPECT_THAT(r.out, HasSubstr("\nparked, claimed by a worker      1\n"));
  EXPECT_THAT(announced(), Not(IsEmpty()));  // the creates above
}

// --- connection, environment, usage ----------------------------------------

TEST_F(PacerctlTest, ThePasswordOfTheConnectionStringIsNeverPrinted) {
  // Trust authentication ignores the password, so it can be given here.
  const std::string with_password = conninfo_ + " password=s3cret-pw";
  const Outcome r = ctlWith({"--postgres", with_password, "status"}, CliEnvironment{});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_THAT(r.out, HasSubstr("password=***"));
  EXPECT_THAT(r.out + r.err, Not(HasSubstr("s3cret-pw")));
  const Outcome j = ctlWith({"--postgres", with_password, "--json", "status"}, CliEnvironment{});
  ASSERT_EQ(j.code, 0) << j;
  EXPECT_THAT(j.out + j.err, Not(HasSubstr("s3cret-pw")));
}

TEST_F(PacerctlTest, UnreachablePostgresExitsThreeWithoutThePassword) {
  const int port = pacer::testing::freeLoopbackPort();
  for (const std::string& conninfo :
       {fmt::format("host=127.0.0.1 port={} user=postgres password=s3cret-pw dbname=pacer", port),
        fmt::format("postgresql://postgres:s3cret-pw@127.0.0.1:{}/pacer", port)}) {
    const Outcome r = ctlWith({"--postgres", conninfo, "campaign", "list"}, CliEnvironment{});
    EXPECT_EQ(r.code, 3) << r;
    EXPECT_THAT(r.err, HasSubstr("pacerctl: cannot reach PostgreSQL at"));
    EXPECT_THAT(r.err, HasSubstr("check --postgres (or PACER_POSTGRES)"));
    EXPECT_THAT(r.out + r.err, Not(HasSubstr("s3cret-pw"))) << r;
  }
  // libpq quotes a badly percent-encoded token; when that is the password it is hidden.
  {
    const Outcome r = ctlWith({"--postgres", "postgresql://postgres:s3cret%zz@127.0.0.1/pacer", "status"}, {});
    EXPECT_EQ(r.code, 3) << r;
    EXPECT_THAT(r.err, HasSubstr("percent"));
    EXPECT_THAT(r.out + r.err, Not(HasSubstr("s3cret"))) << r;
  }
  // One libpq cannot parse is a usage error; libpq's own words would quote
  // the password's pieces.
  const Outcome r = ctlWith({"--postgres", "host=127.0.0.1 password=s3cret pw", "status"}, CliEnvironment{});
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_THAT(r.err, HasSubstr("--postgres (or PACER_POSTGRES): not a libpq connection string"));
  EXPECT_THAT(r.err, Not(HasSubstr("s3cret")));
  EXPECT_THAT(r.err, Not(HasSubstr(" pw")));
}

TEST_F(PacerctlTest, RefusedCredentialsAreUnauthorizedNotUnreachable) {
  // The server answers (SQLSTATE class 28) for a role it does not know.
  const std::string as_nobody = conninfo_ + " user=no_such_role password=s3cret-pw";
  const Outcome r = ctlWith({"--postgres", as_nobody, "campaign", "list"}, CliEnvironment{});
  EXPECT_EQ(r.code, static_cast<int>(ExitCode::kUnauthorized)) << r;
  EXPECT_THAT(r.err, HasSubstr("pacerctl: unauthorized: PostgreSQL at"));
  EXPECT_THAT(r.err, HasSubstr("check the user and password in --postgres (or PACER_POSTGRES)"));
  EXPECT_THAT(r.out + r.err, Not(HasSubstr("s3cret-pw"))) << r;
}

TEST_F(PacerctlTest, VersionAndAMistypedCommandGetsASuggestion) {
  Outcome r = ctl({"--version"});
  EXPECT_EQ(r.code, 0) << r;
  EXPECT_THAT(r.out, HasSubstr("pacerctl " PACER_VERSION));
  r = ctl({"campain", "list"});
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_THAT(r.err, HasSubstr("unknown command 'campain'. Did you mean 'campaign'?"));
  r = ctl({"--json", "campaign", "lst"});
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_THAT(r.err, HasSubstr("unknown command 'campaign lst'. Did you mean 'campaign list'?"));
  r = ctl({"frobnicate"});
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_THAT(r.err, HasSubstr("unknown command 'frobnicate'. The commands are: campaign, provider"));
}

TEST_F(PacerctlTest, ADatabaseWithoutTheSchemaExitsFourAndSaysToMigrate) {
  const std::string empty = server_->createDatabase("t_unmigrated");
  const Outcome r = ctlWith({"--postgres", empty, "campaign", "create", "c1"}, CliEnvironment{});
  EXPECT_EQ(r.code, 4) << r;
  EXPECT_THAT(r.err, HasSubstr("has no Pacer schema (this pacerctl needs version"));
  EXPECT_THAT(r.err, HasSubstr("run `pacerd migrate --postgres ...` first"));
}

TEST_F(PacerctlTest, PostgresComesFromPacerPostgresWhenNotGiven) {
  ASSERT_EQ(ctl({"campaign", "create", "c1"}).code, 0);
  Outcome r = ctlWith({"--json", "campaign", "list"}, CliEnvironment{conninfo_});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_EQ(Json::parse(r.out).size(), 1u);
  // --postgres wins over the environment.
  r = ctlWith({"--postgres", conninfo_, "campaign", "show", "c1"}, CliEnvironment{"host=127.0.0.1 port=1"});
  EXPECT_EQ(r.code, 0) << r;

  r = ctlWith({"campaign", "list"}, CliEnvironment{});
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_THAT(r.err, HasSubstr("no PostgreSQL given: pass --postgres CONNINFO or set PACER_POSTGRES"));
  // An empty --postgres is a mistake, not a request for the environment's.
  r = ctlWith({"--postgres", "", "campaign", "list"}, CliEnvironment{conninfo_});
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_THAT(r.err, HasSubstr("--postgres: empty"));
}

TEST_F(PacerctlTest, UsageErrorsExitTwoAndHelpExitsZero) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{},
                                             {"campaign"},
                                             {"campaign", "launch", "c1"},
                                             {"campaign", "show"},
                                             {"campaign", "set-rate", "c1"},
                                             {"campaign", "create", "c1", "--colour", "red"},
                                             {"provider", "create"},
                                             {"status", "extra"},
                                             {"--connect-timeout", "soon", "status"}}) {
    const Outcome r = ctl(args);
    EXPECT_EQ(r.code, 2) << fmt::format("{}", fmt::join(args, " ")) << "\n" << r;
    EXPECT_FALSE(r.err.empty()) << r;
  }
  const Outcome help = ctl({"--help"});
  EXPECT_EQ(help.code, 0) << help;
  EXPECT_THAT(help.out, HasSubstr("Exit codes: 0 done"));
  EXPECT_THAT(announced(), IsEmpty());
}

// --- campaign totals -------------------------------------------------------

TEST_F(PacerctlTest, CampaignCreateTakesATotalAndSetTotalChangesItAndAnnounces) {
  Outcome r = ctl({"campaign", "create", "c1", "--rate", "40", "--total", "600"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_THAT(r.out, HasSubstr("total 600"));
  EXPECT_EQ(row("SELECT total FROM campaigns WHERE id = 'c1'")[0].as<std::int64_t>(), 600);
  ASSERT_EQ(ctl({"campaign", "create", "c2"}).code, 0);
  EXPECT_TRUE(row("SELECT total FROM campaigns WHERE id = 'c2'")[0].is_null());
  announced();

  r = ctl({"--json", "campaign", "set-total", "c1", "700"});
  ASSERT_EQ(r.code, 0) << r;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j.at("change"), "set-total");
  EXPECT_EQ(j.at("previous").at("total"), 600);
  EXPECT_EQ(j.at("campaign").at("total"), 700);
  EXPECT_THAT(announced(), ElementsAre(payload("campaign", "c1", "set-total")));

  r = ctl({"campaign", "set-total", "c1", "700"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_THAT(r.out, HasSubstr("total is already 700; nothing changed"));
  EXPECT_THAT(announced(), IsEmpty());

  r = ctl({"campaign", "set-total", "c1", "unknown"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_THAT(r.out, HasSubstr("campaign 'c1': total 700 -> unknown"));
  EXPECT_TRUE(row("SELECT total FROM campaigns WHERE id = 'c1'")[0].is_null());

  r = ctl({"campaign", "show", "c2"});
  EXPECT_THAT(r.out, HasSubstr("\ntotal             unknown\n"));

  for (const char* bad : {"-1", "1.5", "", "lots"}) {
    r = ctl({"campaign", "set-total", "c1", bad});
    EXPECT_EQ(r.code, 2) << r;
    EXPECT_THAT(r.err, HasSubstr("a total is a whole number of messages")) << r;
  }
  r = ctl({"campaign", "create", "c3", "--total", "-5"});
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_EQ(count("campaigns"), 2);
  EXPECT_EQ(ctl({"campaign", "set-total", "nope", "5"}).code, 1);
}

// --- top -------------------------------------------------------------------

TEST_F(PacerctlTest, TopOnceJsonCountsEachLiveCampaignsLedgerBacklogAndProgress) {
  ASSERT_EQ(ctl({"provider", "create", "sms", "--rate", "150"}).code, 0);
  ASSERT_EQ(ctl({"campaign", "create", "a", "--rate", "40", "--provider", "sms", "--total", "100"}).code, 0);
  ASSERT_EQ(ctl({"campaign", "create", "b", "--rate", "5"}).code, 0);  // no total
  ASSERT_EQ(ctl({"campaign", "create", "gone", "--total", "10"}).code, 0);
  ASSERT_EQ(ctl({"campaign", "create", "p", "--total", "20"}).code, 0);
  ASSERT_EQ(ctl({"campaign", "cancel", "gone"}).code, 0);
  ASSERT_EQ(ctl({"campaign", "pause", "p"}).code, 0);
  // a: 30 sent two hours ago, 10 sent now, 5 failed, 2 rejected, 3 dead
  // tokens (one two hours ago, settled; two now, live) and 7 parked; b: 3 sent
  // and 4 parked; p: 20 sent two hours ago (done); gone: not shown.
  exec(
      "INSERT INTO deliveries (message_id, campaign, topic, kafka_partition, kafka_offset, status, recorded_at) "
      "SELECT 'a-old-' || i, 'a', 't', 0, i, 'sent', now() - interval '2 hours' FROM generate_series(1, 30) i "
      "UNION ALL SELECT 'a-new-' || i, 'a', 't', 0, 100 + i, 'sent', now() FROM generate_series(1, 10) i "
      "UNION ALL SELECT 'a-failed-' || i, 'a', 't', 0, 200 + i, 'failed', now() FROM generate_series(1, 5) i "
      "UNION ALL SELECT 'a-rejected-' || i, 'a', 't', 0, 300 + i, 'rejected', now() FROM generate_series(1, 2) i "
      "UNION ALL SELECT 'a-dead-' || i, 'a', 't', 0, 700 + i, 'invalid_token', "
      "CASE WHEN i = 1 THEN now() - interval '2 hours' ELSE now() END FROM generate_series(1, 3) i "
      "UNION ALL SELECT 'b-' || i, 'b', 't', 0, 400 + i, 'sent', now() - interval '2 hours' "
      "FROM generate_series(1, 3) i "
      "UNION ALL SELECT 'p-' || i, 'p', 't', 0, 500 + i, 'sent', now() - interval '2 hours' "
      "FROM generate_series(1, 20) i "
      "UNION ALL SELECT 'gone-' || i, 'gone', 't', 0, 600 + i, 'failed', now() FROM generate_series(1, 3) i");
  exec(
      "INSERT INTO parked (message_id, campaign, topic, kafka_partition, kafka_offset, payload) "
      "SELECT 'bp-' || i, 'b', 't', 1, i, 'x'::bytea FROM generate_series(1, 4) i "
      "UNION ALL SELECT 'ap-' || i, 'a', 't', 2, i, 'x'::bytea FROM generate_series(1, 7) i");

  // A ten-minute window: the rows of two hours ago are outside it, those of now inside.
  const Outcome r = ctl({"--json", "top", "--once", "--window-s", "600"});
  ASSERT_EQ(r.code, 0) << r;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j.at("window_s"), 600.0);
  const Json& rows = j.at("campaigns");
  ASSERT_EQ(rows.size(), 3u) << j.dump(2);  // a, b, p: not the cancelled one

  const Json& a = rows.at(0);
  EXPECT_EQ(a.at("id"), "a");
  EXPECT_EQ(a.at("state"), "active");
  EXPECT_EQ(a.at("provider"), "sms");
  EXPECT_EQ(a.at("send_rate"), 40.0);
  EXPECT_EQ(a.at("total"), 100);
  EXPECT_EQ(a.at("sent"), 40);
  EXPECT_EQ(a.at("failed"), 5);
  EXPECT_EQ(a.at("rejected"), 2);
  EXPECT_EQ(a.at("invalid_token"), 3);
  EXPECT_EQ(a.at("parked"), 7) << "parked rows count whether or not the total is known";
  EXPECT_EQ(a.at("backlog"), 100 - 50) << "a dead token is finished, like a failed message; parked ones are not";
  EXPECT_EQ(a.at("backlog_lower_bound"), false);
  EXPECT_DOUBLE_EQ(a.at("progress").get<double>(), 0.50);
  // 10 sent rows in the 600 s window; 50 left at that rate.
  EXPECT_DOUBLE_EQ(a.at("achieved_rate").get<double>(), 10.0 / 600);
  EXPECT_NEAR(a.at("eta_s").get<double>(), 50 / (10.0 / 600), 1e-6);

  const Json& b = rows.at(1);
  EXPECT_EQ(b.at("id"), "b");
  EXPECT_TRUE(b.at("total").is_null());
  EXPECT_EQ(b.at("sent"), 3);
  EXPECT_EQ(b.at("parked"), 4);
  EXPECT_EQ(b.at("backlog"), 4);
  EXPECT_EQ(b.at("backlog_lower_bound"), true);
  EXPECT_TRUE(b.at("progress").is_null());
  EXPECT_EQ(b.at("achieved_rate"), 0.0);
  EXPECT_TRUE(b.at("eta_s").is_null());

  const Json& p = rows.at(2);
  EXPECT_EQ(p.at("id"), "p");
  EXPECT_EQ(p.at("state"), "paused");
  EXPECT_EQ(p.at("backlog"), 0);
  EXPECT_DOUBLE_EQ(p.at("progress").get<double>(), 1.0);
  EXPECT_EQ(p.at("eta_s"), 0.0);

  EXPECT_EQ(j.at("totals").at("sent"), 63);
  EXPECT_EQ(j.at("totals").at("backlog"), 54);
  EXPECT_EQ(j.at("totals").at("backlog_lower_bound"), true);
  EXPECT_EQ(j.at("totals").at("active"), 2);
  EXPECT_EQ(j.at("totals").at("paused"), 1);
}

TEST_F(PacerctlTest, TopOncePrintsAHeaderAndOneLinePerCampaign) {
  ASSERT_EQ(ctl({"campaign", "create", "spring", "--rate", "40", "--total", "4"}).code, 0);
  exec(
      "INSERT INTO deliveries (message_id, campaign, topic, kafka_partition, kafka_offset, status) "
      "VALUES ('m1', 'spring', 't', 0, 1, 'sent')");
  Outcome r = ctl({"top", "--once", "--width", "200"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_THAT(r.out, HasSubstr("pacer top  20"));
  EXPECT_THAT(r.out, HasSubstr("campaigns 1: 1 active, 0 paused  sent 1  failed 0  backlog 3\n"));
  EXPECT_THAT(r.out, HasSubstr("ID      STATE   PROVIDER  RATE  ACHIEVED  SENT  FAILED  BACKLOG  PROGRESS"));
  EXPECT_THAT(r.out, HasSubstr("spring  active  -         40/s"));
  EXPECT_THAT(r.out, HasSubstr("[##........]  25%"));
  EXPECT_THAT(r.out, Not(HasSubstr("\x1b[")));  // not a terminal: no escape codes
  // Not a terminal, no --width: 80 columns.
  r = ctl({"top", "--once"});
  ASSERT_EQ(r.code, 0) << r;
  for (std::size_t start = 0, end; start < r.out.size(); start = end + 1) {
    end = r.out.find('\n', start);
    EXPECT_LE(r.out.substr(start, end - start).size(), 80u) << r.out;
  }
  EXPECT_THAT(r.out, HasSubstr("LIMITED BY"));
  EXPECT_EQ(ctl({"top", "--once", "--width", "20"}).code, 2);

  r = ctl({"--json", "top"});
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_THAT(r.err, HasSubstr("--json with top needs --once"));
  EXPECT_EQ(ctl({"top", "--once", "--interval-ms", "5"}).code, 2);
  EXPECT_EQ(ctl({"top", "--once", "--window-s", "0"}).code, 2);
}

// Each refresh after the first reads only the rows recorded since the last
// cutoff: counts must grow by exactly the rows added, never count a row twice
// as it moves from "recent" to "settled", and a campaign seen for the first
// time is counted in full.
TEST_F(PacerctlTest, TopSnapshotsAddOnlyNewRowsAndCountACampaignSeenLateInFull) {
  ASSERT_EQ(ctl({"campaign", "create", "a", "--total", "1000"}).code, 0);
  const auto insert = [&](const std::string& campaign, const std::string& prefix, int n, const std::string& status,
                          const std::string& age) {
    exec(fmt::format(
        "INSERT INTO deliveries (message_id, campaign, topic, kafka_partition, kafka_offset, status, recorded_at) "
        "SELECT '{0}-' || i, '{1}', 't', 0, i, '{2}', now() - interval '{3}' FROM generate_series(1, {4}) i",
        prefix, campaign, status, age, n));
  };
  insert("a", "old", 30, "sent", "2 hours");
  insert("a", "mid", 20, "sent", "30 seconds");  // recent at a 60 s cutoff, settled at a 10 s one
  insert("a", "midf", 4, "failed", "30 seconds");
  insert("a", "midt", 2, "invalid_token", "30 seconds");
  insert("a", "new", 10, "sent", "0 seconds");

  PgControl db(ConnectOptions{conninfo_});
  const auto a_of = [](const TopSnapshot& s, const std::string& id) {
    for (const auto& c : s.campaigns)
      if (c.id == id) return c;
    ADD_FAILURE() << "no campaign " << id;
    return TopSnapshot::Campaign{};
  };
  TopSnapshot s = db.topSnapshot(5, 60);
  EXPECT_EQ(a_of(s, "a").sent, 60);
  EXPECT_EQ(a_of(s, "a").failed, 4);
  EXPECT_EQ(a_of(s, "a").invalid_token, 2);

  // The 30-second-old rows become settled at a 10 s cutoff: still counted once.
  s = db.topSnapshot(5, 10);
  EXPECT_EQ(a_of(s, "a").sent, 60);
  EXPECT_EQ(a_of(s, "a").failed, 4);
  EXPECT_EQ(a_of(s, "a").invalid_token, 2);
  s = db.topSnapshot(5, 10);
  EXPECT_EQ(a_of(s, "a").sent, 60);

  // New rows are added; a campaign that appears now is counted in full,
  // its two-hour-old rows included; a longer settle time does not move the
  // cutoff back (which would count rows twice).
  insert("a", "later", 5, "sent", "0 seconds");
  insert("a", "laterr", 3, "rejected", "0 seconds");
  ASSERT_EQ(ctl({"campaign", "create", "z"}).code, 0);
  insert("z", "zold", 7, "sent", "2 hours");
  s = db.topSnapshot(5, 60);
  EXPECT_EQ(a_of(s, "a").sent, 65);
  EXPECT_EQ(a_of(s, "a").rejected, 3);
  EXPECT_EQ(a_of(s, "z").sent, 7);
  s = db.topSnapshot(5, 10);
  EXPECT_EQ(a_of(s, "a").sent, 65);
  EXPECT_EQ(a_of(s, "a").failed, 4);
  EXPECT_EQ(a_of(s, "a").invalid_token, 2);
  EXPECT_EQ(a_of(s, "z").sent, 7);

  // A campaign completed in the last hour stays in view, as done; one
  // completed longer ago leaves it, and if it comes back it is counted in
  // full again.
  ASSERT_EQ(ctl({"campaign", "pause", "z"}).code, 0);
  exec("UPDATE campaigns SET state = 'completed' WHERE id = 'z'");
  s = db.topSnapshot(5, 10);
  EXPECT_EQ(s.campaigns.size(), 2u);
  EXPECT_EQ(a_of(s, "z").state, "completed");
  exec("UPDATE campaigns SET updated_at = now() - interval '2 hours' WHERE id = 'z'");
  s = db.topSnapshot(5, 10);
  EXPECT_EQ(s.campaigns.size(), 1u);
  exec("UPDATE campaigns SET state = 'active' WHERE id = 'z'");
  s = db.topSnapshot(5, 10);
  EXPECT_EQ(a_of(s, "z").sent, 7);
}

// --- produce ---------------------------------------------------------------

// The records on `topic`, read from the start of every partition (no group).
struct Record {
  std::string key, id, recipient, value, tz;
};
std::vector<Record> readTopic(const std::string& bootstraps, const std::string& topic, int partitions) {
  std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
  std::string err;
  for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{
           {"bootstrap.servers", bootstraps}, {"group.id", "pacerctl-test-reader"}, {"enable.partition.eof", "true"},
           {"enable.auto.commit", "false"}})
    EXPECT_EQ(conf->set(k, v, err), RdKafka::Conf::CONF_OK) << err;
  std::unique_ptr<RdKafka::KafkaConsumer> c(RdKafka::KafkaConsumer::create(conf.get(), err));
  EXPECT_NE(c, nullptr) << err;
  if (!c) return {};
  std::vector<RdKafka::TopicPartition*> parts;
  for (int p = 0; p < partitions; ++p)
    parts.push_back(RdKafka::TopicPartition::create(topic, p, RdKafka::Topic::OFFSET_BEGINNING));
  EXPECT_EQ(c->assign(parts), RdKafka::ERR_NO_ERROR);
  RdKafka::TopicPartition::destroy(parts);
  std::vector<Record> out;
  std::set<int> at_end;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (static_cast<int>(at_end.size()) < partitions && std::chrono::steady_clock::now() < deadline) {
    std::unique_ptr<RdKafka::Message> m(c->consume(100));
    if (m->err() == RdKafka::ERR__PARTITION_EOF) {
      at_end.insert(m->partition());
    } else if (m->err() == RdKafka::ERR_NO_ERROR) {
      Record r{m->key() ? *m->key() : "", "", "", std::string(static_cast<const char*>(m->payload()), m->len()), ""};
      if (RdKafka::Headers* h = m->headers()) {
        for (auto [name, to] :
             {std::pair{"message-id", &r.id}, std::pair{"recipient", &r.recipient}, std::pair{"tz", &r.tz}}) {
          const RdKafka::Headers::Header v = h->get_last(name);
          if (v.err() == RdKafka::ERR_NO_ERROR) to->assign(static_cast<const char*>(v.value()), v.value_size());
        }
      }
      out.push_back(std::move(r));
    }
  }
  EXPECT_EQ(static_cast<int>(at_end.size()), partitions) << "the topic was not read to its end in time";
  c->close();
  return out;
}

TEST_F(PacerctlTest, ProduceDeliversCountMessagesInTheContractsShapeAndAddsThemToTheTotal) {
  const std::string brokers = kafka();
  ASSERT_EQ(ctl({"campaign", "create", "spring", "--rate", "40", "--total", "100"}).code, 0);
  ASSERT_EQ(ctl({"campaign", "create", "loose"}).code, 0);  // no total
  const std::size_t before = readTopic(brokers, "messages", 2).size();

  Outcome r = ctl({"produce", "--brokers", brokers, "--topic", "messages", "--campaign", "spring", "--count", "25",
                   "--recipient-prefix", "+1555", "--payload", "hello", "--id-prefix", "run1-", "--rate", "500"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_THAT(r.out, HasSubstr("campaign 'spring': 25 of 25 messages delivered to topic 'messages'"));
  EXPECT_THAT(r.out, HasSubstr("total 100 -> 125"));
  EXPECT_EQ(row("SELECT total FROM campaigns WHERE id = 'spring'")[0].as<std::int64_t>(), 125);
  EXPECT_THAT(announced(), Contains(payload("campaign", "spring", "set-total")));

  // Through an environment variable, for a campaign without a total: JSON, total untouched.
  CliEnvironment env;
  env.brokers = brokers;
  r = ctlWith({"--postgres", conninfo_, "--json", "produce", "--topic", "messages", "--campaign", "loose", "--count",
               "7"},
              env);
  ASSERT_EQ(r.code, 0) << r;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j.at("delivered"), 7);
  EXPECT_EQ(j.at("failed"), 0);
  EXPECT_TRUE(j.at("total").is_null());
  EXPECT_TRUE(row("SELECT total FROM campaigns WHERE id = 'loose'")[0].is_null());

  const std::vector<Record> all = readTopic(brokers, "messages", 2);
  std::vector<Record> mine(all.begin() + static_cast<std::ptrdiff_t>(before), all.end());
  ASSERT_EQ(mine.size(), 32u);
  std::set<std::string> spring_ids, loose_ids;
  for (const Record& rec : mine) {
    if (rec.key == "spring") {
      EXPECT_EQ(rec.value, "hello");
      EXPECT_EQ(rec.recipient.rfind("+1555", 0), 0u) << rec.recipient;
      spring_ids.insert(rec.id);
    } else {
      EXPECT_EQ(rec.key, "loose");
      EXPECT_TRUE(rec.recipient.empty());
      EXPECT_EQ(rec.id.rfind("loose:", 0), 0u) << rec.id;  // the default prefix names the campaign
      loose_ids.insert(rec.id);
    }
  }
  EXPECT_EQ(spring_ids.size(), 25u);  // every message-id distinct
  EXPECT_TRUE(spring_ids.count("run1-0") && spring_ids.count("run1-24"));
  EXPECT_EQ(loose_ids.size(), 7u);
}

// --tz on every message, --time-zones round-robin, --recipients N cycling
// the recipient header so one recipient gets several messages.
TEST_F(PacerctlTest, ProduceSetsTheTzHeaderAndSpreadsRecipientsOverN) {
  const std::string brokers = kafka();
  ASSERT_EQ(ctl({"campaign", "create", "tz-one"}).code, 0);
  ASSERT_EQ(ctl({"campaign", "create", "tz-many"}).code, 0);
  Outcome r = ctl({"produce", "--brokers", brokers, "--topic", "messages", "--campaign", "tz-one", "--count", "4",
                   "--tz", "Europe/London", "--id-prefix", "one-"});
  ASSERT_EQ(r.code, 0) << r;
  r = ctl({"produce", "--brokers", brokers, "--topic", "messages", "--campaign", "tz-many", "--count", "7",
           "--time-zones", "America/New_York,Asia/Tokyo,UTC", "--recipients", "3", "--id-prefix", "many-"});
  ASSERT_EQ(r.code, 0) << r;

  std::map<std::string, std::string> tz_of, recipient_of;
  for (const Record& rec : readTopic(brokers, "messages", 2)) {
    if (rec.key == "tz-one") {
      EXPECT_EQ(rec.tz, "Europe/London") << rec.id;
      EXPECT_TRUE(rec.recipient.empty()) << rec.id;
    }
    if (rec.key != "tz-many") continue;
    tz_of[rec.id] = rec.tz;
    recipient_of[rec.id] = rec.recipient;
  }
  ASSERT_EQ(tz_of.size(), 7u);
  const char* zones[] = {"America/New_York", "Asia/Tokyo", "UTC"};
  for (int i = 0; i < 7; ++i) {
    const std::string id = "many-" + std::to_string(i);
    EXPECT_EQ(tz_of[id], zones[i % 3]) << id;
    EXPECT_EQ(recipient_of[id], "recipient-" + std::to_string(i % 3)) << id;
  }
}

TEST_F(PacerctlTest, ProduceToAnUnreachableBrokerExitsThreeAndLeavesTheTotal) {
  ASSERT_EQ(ctl({"campaign", "create", "spring", "--total", "100"}).code, 0);
  const std::string nowhere = fmt::format("127.0.0.1:{}", pacer::testing::freeLoopbackPort());
  const Outcome r = ctl({"produce", "--brokers", nowhere, "--topic", "messages", "--campaign", "spring", "--count",
                         "5", "--timeout-ms", "60000"});
  EXPECT_EQ(r.code, 3) << r;
  EXPECT_THAT(r.err, HasSubstr(fmt::format("pacerctl: cannot reach Kafka at '{}'", nowhere))) << r;
  EXPECT_THAT(r.err, HasSubstr("check --brokers (or PACER_BROKERS)")) << r;
  EXPECT_THAT(r.out, HasSubstr("0 of 5 messages delivered")) << r;
  EXPECT_EQ(row("SELECT total FROM campaigns WHERE id = 'spring'")[0].as<std::int64_t>(), 100);
}

TEST_F(PacerctlTest, ProduceChecksItsValuesAndTheCampaignBeforeSending) {
  ASSERT_EQ(ctl({"campaign", "create", "spring"}).code, 0);
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--topic", "messages", "--campaign", "spring"}, "no Kafka brokers given"},
      {{"--brokers", "127.0.0.1:1", "--topic", "bad topic", "--campaign", "spring"}, "--topic 'bad topic'"},
      {{"--brokers", "127.0.0.1:1", "--topic", "messages", "--campaign", "spring", "--count", "0"}, "--count '0'"},
      {{"--brokers", "127.0.0.1:1", "--topic", "messages", "--campaign", "spring", "--rate", "0"}, "--rate '0'"},
      {{"--brokers", "127.0.0.1:1", "--topic", "messages", "--campaign", "spring", "--rate", "-3"}, "--rate '-3'"},
  };
  for (const auto& [args, message] : cases) {
    std::vector<std::string> full{"produce"};
    full.insert(full.end(), args.begin(), args.end());
    const Outcome r = ctl(full);
    EXPECT_EQ(r.code, 2) << r;
    EXPECT_THAT(r.err, HasSubstr(message)) << r;
  }
  // An unknown campaign is refused before anything is produced.
  const Outcome r =
      ctl({"produce", "--brokers", "127.0.0.1:1", "--topic", "messages", "--campaign", "nope", "--count", "3"});
  EXPECT_EQ(r.code, 1) << r;
  EXPECT_THAT(r.err, HasSubstr("campaign 'nope' not found"));
}

}  // namespace
}  // namespace pacer::control
