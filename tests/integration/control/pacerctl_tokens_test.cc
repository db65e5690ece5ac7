// pacerctl tokens export|count against a real PostgreSQL: the invalid_tokens
// rows pacerd's ledger writes, as CSV and JSON, filtered by provider and
// time, and the errors a mistyped value gives.
#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "pacer/ledger.h"
#include "pacerctl_fixture.h"

namespace pacer::control {
namespace {

using namespace pacer::control::test;  // the harness, pacerctl_fixture.h
using Json = nlohmann::json;

constexpr const char* kHeader = "provider,token,reason,first_seen,last_seen,provider_timestamp,campaign,hits\n";

// Lines of `text`, without their newlines.
std::vector<std::string> linesOf(const std::string& text) {
  std::vector<std::string> out;
  for (std::size_t start = 0, end; start < text.size(); start = end + 1) {
    end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out.push_back(text.substr(start, end - start));
  }
  return out;
}

class PacerctlTokensTest : public PacerctlTest {
 protected:
  // Three dead tokens with fixed times: two of APNs (one with the provider's
  // timestamp, one whose reason needs CSV quoting), one of FCM.
  void insertTokens() {
    exec(
        "INSERT INTO invalid_tokens (provider, token, first_seen, last_seen, reason, provider_timestamp, campaign, "
        "hits) VALUES "
        "('apns', 'a1b2', '2026-11-20 08:00:00+00', '2026-11-23 09:30:00+00', 'invalid token: Unregistered', "
        "'2026-11-19 12:00:00.250+00', 'spring', 3), "
        "('apns', '0ff1', '2026-11-21 08:00:00+00', '2026-11-21 08:00:00+00', "
        "'invalid token: BadDeviceToken, \"twice\"', NULL, 'spring', 1), "
        "('fcm', 'dXNlcg', '2026-11-22 10:00:00+00', '2026-11-22 10:00:05+00', 'invalid token: UNREGISTERED', "
        "NULL, 'autumn', 2)");
  }
};

TEST_F(PacerctlTokensTest, AnEmptyTablePrintsOnlyTheHeaderOrAnEmptyArray) {
  Outcome r = ctl({"tokens", "export"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_EQ(r.out, kHeader);
  EXPECT_EQ(r.err, "");
  r = ctl({"tokens", "export", "--format", "json"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_EQ(Json::parse(r.out), Json::array());
  r = ctl({"tokens", "count"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_EQ(r.out, "0\n");
}

TEST_F(PacerctlTokensTest, ExportWritesCsvByProviderAndTokenWithQuotedFields) {
  insertTokens();
  const Outcome r = ctl({"tokens", "export"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_EQ(r.out, std::string(kHeader) +
                       "apns,0ff1,\"invalid token: BadDeviceToken, \"\"twice\"\"\",2026-11-21T08:00:00Z,"
                       "2026-11-21T08:00:00Z,,spring,1\n"
                       "apns,a1b2,invalid token: Unregistered,2026-11-20T08:00:00Z,2026-11-23T09:30:00Z,"
                       "2026-11-19T12:00:00Z,spring,3\n"
                       "fcm,dXNlcg,invalid token: UNREGISTERED,2026-11-22T10:00:00Z,2026-11-22T10:00:05Z,,autumn,2\n");
}

TEST_F(PacerctlTokensTest, ExportWritesJsonAndFiltersByProviderAndTime) {
  insertTokens();
  Outcome r = ctl({"tokens", "export", "--format", "json", "--provider", "apns"});
  ASSERT_EQ(r.code, 0) << r;
  const Json j = Json::parse(r.out);
  ASSERT_EQ(j.size(), 2u) << r;
  EXPECT_EQ(j.at(1), Json::parse(R"({"provider":"apns","token":"a1b2","reason":"invalid token: Unregistered",
      "first_seen":"2026-11-20T08:00:00Z","last_seen":"2026-11-23T09:30:00Z",
      "provider_timestamp":"2026-11-19T12:00:00Z","campaign":"spring","hits":3})"));
  EXPECT_TRUE(j.at(0).at("provider_timestamp").is_null());
  EXPECT_EQ(linesOf(r.out).size(), 4u) << "one token per line between the brackets";

  // --json means json too; --since keeps the tokens last seen at or after it.
  r = ctl({"--json", "tokens", "export", "--since", "2026-11-22T10:00:05Z"});
  ASSERT_EQ(r.code, 0) << r;
  std::set<std::string> tokens;
  for (const Json& t : Json::parse(r.out)) tokens.insert(t.at("token").get<std::string>());
  EXPECT_EQ(tokens, (std::set<std::string>{"a1b2", "dXNlcg"}));
  r = ctl({"tokens", "export", "--provider", "fcm", "--since", "2026-11-22T11:00:06+01:00"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_EQ(linesOf(r.out).size(), 1u) << "10:00:05Z is before 10:00:06Z: " << r.out;
  r = ctl({"tokens", "export", "--provider", "sms"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_EQ(r.out, kHeader);

  r = ctl({"tokens", "count", "--provider", "apns"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_EQ(r.out, "2\n");
  r = ctl({"--json", "tokens", "count", "--since", "2026-11-22"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_EQ(Json::parse(r.out), Json::parse(R"({"count":2,"provider":null,"since":"2026-11-22"})"));
}

// What pacerd's ledger writes is what pacerctl exports, past a page of rows.
TEST_F(PacerctlTokensTest, ExportReadsWhatTheLedgerWroteAcrossPages) {
  auto ledger = ledger::makePgLedger(ledger::PgLedgerOptions{conninfo_});
  std::vector<DeliveryRecord> rows;
  for (int i = 0; i < 12'000; ++i) {
    DeliveryRecord r;
    r.message_id = fmt::format("m-{}", i);
    r.campaign = "spring";
    r.topic = "messages";
    r.offset = i;
    r.status = DeliveryStatus::kInvalidToken;
    r.reason = "invalid token: Unregistered";
    r.provider = i % 3 == 0 ? "fcm" : "apns";
    r.token = fmt::format("tok-{:05}", i % 6000);  // each token twice
    r.invalid_since_ms = r.provider == "apns" ? 1795000000000 : 0;
    rows.push_back(std::move(r));
  }
  ASSERT_EQ(ledger->record(rows), rows.size());

  Outcome r = ctl({"tokens", "count"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_EQ(r.out, "6000\n");
  r = ctl({"tokens", "export"});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::vector<std::string> lines = linesOf(r.out);
  ASSERT_EQ(lines.size(), 6001u);
  EXPECT_EQ(lines.front() + "\n", kHeader);
  EXPECT_TRUE(std::is_sorted(lines.begin() + 1, lines.end()));
  EXPECT_EQ(std::set<std::string>(lines.begin() + 1, lines.end()).size(), 6000u) << "no row twice across pages";
  EXPECT_THAT(lines.at(1), ::testing::MatchesRegex(
                               "apns,tok-00001,invalid token: Unregistered,[-0-9T:]+Z,[-0-9T:]+Z,2026-11-18T11:06:40Z,"
                               "spring,2"));
  EXPECT_THAT(lines.back(), ::testing::MatchesRegex("fcm,tok-05997,invalid token: Unregistered,[-0-9T:]+Z,"
                                                    "[-0-9T:]+Z,,spring,2"));
}

TEST_F(PacerctlTokensTest, BadValuesExitTwoAndAMistypedCommandSaysWhatWasMeant) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"tokens", "export", "--format", "xml"},
        std::vector<std::string>{"tokens", "export", "--since", "yesterday"},
        std::vector<std::string>{"tokens", "export", "--since", "2026-02-30"},
        std::vector<std::string>{"tokens", "export", "--since", "2026-11-23T25:00:00Z"},
        std::vector<std::string>{"tokens", "export", "--provider", ""},
        std::vector<std::string>{"--json", "tokens", "export", "--format", "csv"},
        std::vector<std::string>{"tokens", "count", "--since", "2026-11-23T08:00:00+2"}}) {
    const Outcome r = ctl(args);
    EXPECT_EQ(r.code, 2) << r;
    EXPECT_EQ(r.out, "") << "nothing on stdout, not even the header";
  }
  EXPECT_THAT(ctl({"tokens", "export", "--since", "yesterday"}).err,
              HasSubstr("--since: 'yesterday' is not a time; give an ISO 8601 time"));
  Outcome r = ctl({"tokens", "exprot"});
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_THAT(r.err, HasSubstr("unknown command 'tokens exprot'. Did you mean 'tokens export'?"));
  r = ctl({"tokens"});
  EXPECT_EQ(r.code, 2) << r;
}

}  // namespace
}  // namespace pacer::control
