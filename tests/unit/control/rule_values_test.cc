// The recipient rules as pacerctl takes them, and as a campaign row carries
// them into the core (campaignInfoOf's checks).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "pacer/control/values.h"
#include "support/thrown.h"

namespace pacer::control {
namespace {

using ::testing::HasSubstr;

// The message of the InvalidValueError `fn` throws, a usage error.
template <typename Fn>
std::string refusal(Fn&& fn) {
  return test_support::thrownBy<InvalidValueError>(
      std::forward<Fn>(fn), [](const InvalidValueError& e) { EXPECT_EQ(e.code(), ExitCode::kUsage); });
}

CampaignRow row() {
  CampaignRow r;
  r.id = "c1";
  r.state = "active";
  r.limit = Limit{100.0, 2};
  return r;
}

TEST(ParseClassName, TakesShortNamesAndDefaultAsNone) {
  EXPECT_EQ(parseClassName("bulk", "--class"), "bulk");
  EXPECT_EQ(parseClassName("tx-1.high_a", "--class"), "tx-1.high_a");
  EXPECT_EQ(parseClassName("default", "--class"), "");
  EXPECT_EQ(parseClassName(std::string(64, 'a'), "--class"), std::string(64, 'a'));
  for (const std::string& bad : std::vector<std::string>{"", "a b", "bulk/1", "émail", std::string(65, 'a')})
    EXPECT_THAT(refusal([&] { parseClassName(bad, "--class"); }), HasSubstr("--class '" + bad + "'")) << bad;
}

TEST(ParseQuietHoursText, NormalisesAWindowAndTakesNone) {
  EXPECT_EQ(parseQuietHoursText("21:00-08:00", "--quiet-hours"), "21:00-08:00");
  EXPECT_EQ(parseQuietHoursText("22:15:30-07:00", "--quiet-hours"), "22:15:30-07:00");
  EXPECT_EQ(parseQuietHoursText("none", "--quiet-hours"), "");
  EXPECT_EQ(parseQuietHoursText("09:00-09:00", "--quiet-hours"), "") << "no window: stored as none";
  for (const char* bad : {"", "21:00", "25:00-08:00", "9-8", "21:00-08:00x"})
    EXPECT_THAT(refusal([&] { parseQuietHoursText(bad, "--quiet-hours"); }), HasSubstr("--quiet-hours: ")) << bad;
  EXPECT_THAT(refusal([&] { parseQuietHoursText("21:00", "--quiet-hours"); }), HasSubstr("HH:MM-HH:MM"));
}

TEST(ParseTimeZoneText, TakesZoneShapedNamesAndNone) {
  EXPECT_EQ(parseTimeZoneText("Europe/London", "--time-zone"), "Europe/London");
  EXPECT_EQ(parseTimeZoneText("America/Argentina/Buenos_Aires", "--time-zone"), "America/Argentina/Buenos_Aires");
  EXPECT_EQ(parseTimeZoneText("Etc/GMT+5", "--time-zone"), "Etc/GMT+5");
  EXPECT_EQ(parseTimeZoneText("none", "--time-zone"), "");
  for (const std::string& bad : std::vector<std::string>{"", "Europe London", "Europe/Lon;don", std::string(65, 'a')})
    EXPECT_THAT(refusal([&] { parseTimeZoneText(bad, "--time-zone"); }), HasSubstr("IANA time zone")) << bad;
}

TEST(ParseFrequencyCapText, KeepsACapAsTypedAndTakesNone) {
  EXPECT_EQ(parseFrequencyCapText("3/24h", "--cap"), "3/24h");
  EXPECT_EQ(parseFrequencyCapText("1/60m", "--cap"), "1/60m");
  EXPECT_EQ(parseFrequencyCapText("none", "--cap"), "");
  for (const char* bad : {"", "3", "0/24h", "3/24", "3/0h", "1001/1d", "-1/1h"})
    EXPECT_THAT(refusal([&] { parseFrequencyCapText(bad, "--cap"); }), HasSubstr("LIMIT/WINDOW")) << bad;
}

TEST(ParseCapPolicyText, IsSuppressOrDefer) {
  EXPECT_EQ(parseCapPolicyText("suppress", "--cap-policy"), "suppress");
  EXPECT_EQ(parseCapPolicyText("defer", "--cap-policy"), "defer");
  for (const char* bad : {"", "drop", "Defer"})
    EXPECT_THAT(refusal([&] { parseCapPolicyText(bad, "--cap-policy"); }), HasSubstr("--cap-policy")) << bad;
}

// A failover list (docs/routes.md): ids separated by ',', none twice, at
// most four; "none" is no list. The campaign's own provider is checked with the row.
TEST(ParseFailoverText, TakesUpToFourDistinctIdsAndNone) {
  EXPECT_EQ(parseFailoverText("sms-b,sms-c", "--failover"), (std::vector<std::string>{"sms-b", "sms-c"}));
  EXPECT_TRUE(parseFailoverText("none", "--failover").empty());
  EXPECT_EQ(formatFailover({"sms-b", "sms-c"}), "sms-b,sms-c");
  EXPECT_EQ(formatFailover({}), "none");
  EXPECT_THAT(refusal([] { parseFailoverText("a,b,a", "--failover"); }), HasSubstr("'a' is named twice"));
  EXPECT_THAT(refusal([] { parseFailoverText("a,b,c,d,e", "--failover"); }), HasSubstr("5 providers, more than 4"));
  EXPECT_THAT(refusal([] { parseFailoverText("a,,b", "--failover"); }), HasSubstr("--failover"));
}

// A callback URL (docs/callbacks.md): http or https with a host; "none" clears it.
TEST(ParseCallbackUrlText, TakesHttpAndHttpsUrlsAndNone) {
  EXPECT_EQ(parseCallbackUrlText("https://hooks.example.com/pacer?x=1", "--callback"),
            "https://hooks.example.com/pacer?x=1");
  EXPECT_EQ(parseCallbackUrlText("HTTP://127.0.0.1:8080", "--callback"), "HTTP://127.0.0.1:8080");
  EXPECT_EQ(parseCallbackUrlText("none", "--callback"), "");
  EXPECT_THAT(refusal([] { parseCallbackUrlText("ftp://x/y", "--callback"); }),
              HasSubstr("not an http:// or https:// URL"));
  EXPECT_THAT(refusal([] { parseCallbackUrlText("hooks.example.com", "--callback"); }), HasSubstr("--callback"));
  EXPECT_THAT(refusal([] { parseCallbackUrlText("https:///path", "--callback"); }), HasSubstr("names no host"));
  EXPECT_THAT(refusal([] { parseCallbackUrlText("https://a b", "--callback"); }), HasSubstr("a space"));
  EXPECT_THAT(refusal([] { parseCallbackUrlText("https://x/" + std::string(2048, 'a'), "--callback"); }),
              HasSubstr("more than 2048"));
}

TEST(CampaignInfoOf, SkipsARowWhoseCallbackUrlCannotBeUsed) {
  CampaignRow r = row();
  EXPECT_FALSE(campaignInfoOf(r, nullptr)->has_callback);
  r.callback_url = "https://hooks.example.com/pacer";
  ASSERT_TRUE(campaignInfoOf(r, nullptr));
  EXPECT_TRUE(campaignInfoOf(r, nullptr)->has_callback);
  std::string problem;
  r.callback_url = "mailto:ops@example.com";
  EXPECT_FALSE(campaignInfoOf(r, &problem));
  EXPECT_THAT(problem, HasSubstr("callback_url: 'mailto:ops@example.com' is not an http:// or https:// URL"));
}

TEST(CampaignInfoOf, CarriesAFailoverListAndSkipsOneItCannotFollow) {
  CampaignRow r = row();
  r.provider = "sms-a";
  r.failover = {"sms-b"};
  const auto ci = campaignInfoOf(r, nullptr);
  ASSERT_TRUE(ci);
  EXPECT_EQ(ci->failover, (std::vector<std::string>{"sms-b"}));
  std::string problem;
  r.failover = {"sms-a"};
  EXPECT_FALSE(campaignInfoOf(r, &problem));
  EXPECT_THAT(problem, HasSubstr("'sms-a' is the campaign's own provider"));
  r.provider.clear();
  r.failover = {"sms-b"};
  EXPECT_FALSE(campaignInfoOf(r, &problem));
  EXPECT_THAT(problem, HasSubstr("needs a provider to fail over from"));
}

// Prefix routes (docs/routes.md): PREFIX=PROVIDER entries separated by ',',
// a '+' before a prefix dropped; "none" is no routes.
TEST(ParseRoutesText, TakesPrefixProviderEntriesAndNone) {
  EXPECT_EQ(parseRoutesText("+44=sms-uk,1=sms-us", "--routes"),
            (std::vector<PrefixRoute>{{"44", "sms-uk"}, {"1", "sms-us"}}));
  EXPECT_TRUE(parseRoutesText("none", "--routes").empty());
  EXPECT_EQ(formatRoutes({{"44", "sms-uk"}, {"1", "sms-us"}}), "44=sms-uk,1=sms-us");
  EXPECT_EQ(formatRoutes({}), "none");
  EXPECT_THAT(refusal([] { parseRoutesText("44=a,44=b", "--routes"); }), HasSubstr("prefix 44 is routed twice"));
  EXPECT_THAT(refusal([] { parseRoutesText("44=a,,1=b", "--routes"); }), HasSubstr("--routes"));
  EXPECT_THAT(refusal([] { parseRoutesText("uk=sms-uk", "--routes"); }), HasSubstr("prefix 'uk'"));
  EXPECT_THAT(refusal([] { parseRoutesText("44", "--routes"); }), HasSubstr("PREFIX=PROVIDER"));
}

TEST(CampaignInfoOf, CarriesPrefixRoutesAndSkipsOnesItCannotFollow) {
  CampaignRow r = row();
  r.provider = "sms-a";
  r.routes = {{"44", "sms-uk"}};
  const auto ci = campaignInfoOf(r, nullptr);
  ASSERT_TRUE(ci);
  EXPECT_EQ(ci->routes, (std::vector<PrefixRoute>{{"44", "sms-uk"}}));
  std::string problem;
  r.routes = {{"4x", "sms-uk"}};  // written by hand
  EXPECT_FALSE(campaignInfoOf(r, &problem));
  EXPECT_THAT(problem, HasSubstr("prefix '4x'"));
  r.routes = {{"44", "sms-uk"}, {"1", "sms-us"}};
  r.limit.rate = 10;
  r.limit.burst = 2;  // three providers carry it: each needs a message of burst
  EXPECT_FALSE(campaignInfoOf(r, &problem));
  EXPECT_THAT(problem, HasSubstr("burst 2 cannot be split among its 3 providers"));
  r.limit.burst = 3;
  EXPECT_TRUE(campaignInfoOf(r, nullptr));
  r.provider.clear();
  r.limit.rate.reset();
  EXPECT_FALSE(campaignInfoOf(r, &problem));
  EXPECT_THAT(problem, HasSubstr("need a campaign provider"));
}

TEST(CampaignInfoOf, CarriesTheRulesOfAGoodRow) {
  CampaignRow r = row();
  r.priority_class = "bulk";
  r.quiet_hours = "21:00:00-08:00";  // parseQuietWindow's forms; carried normalised
  r.time_zone = "Europe/London";
  r.frequency_cap = "3/24h";
  r.cap_policy = "defer";
  std::string problem;
  const auto ci = campaignInfoOf(r, &problem);
  ASSERT_TRUE(ci) << problem;
  EXPECT_EQ(ci->priority_class, "bulk");
  EXPECT_EQ(ci->time_zone, "Europe/London");
  ASSERT_TRUE(ci->frequency_cap);
  EXPECT_EQ(ci->frequency_cap->limit, 3u);
  EXPECT_EQ(ci->frequency_cap->window, std::chrono::hours(24));
  EXPECT_EQ(ci->cap_policy, CapPolicy::kDefer);
  EXPECT_EQ(ci->quiet_hours, "21:00-08:00");
}

TEST(CampaignInfoOf, ARowWithoutRulesHasNone) {
  std::string problem;
  const auto ci = campaignInfoOf(row(), &problem);
  ASSERT_TRUE(ci) << problem;
  EXPECT_EQ(ci->priority_class, "");
  EXPECT_EQ(ci->quiet_hours, "");
  EXPECT_EQ(ci->time_zone, "");
  EXPECT_FALSE(ci->frequency_cap);
  EXPECT_EQ(ci->cap_policy, CapPolicy::kSuppress);
}

TEST(CampaignInfoOf, SkipsARowWhoseRulesCannotBeUsedSayingWhy) {
  const auto why = [](auto change) {
    CampaignRow r = row();
    change(r);
    std::string problem;
    EXPECT_FALSE(campaignInfoOf(r, &problem));
    return problem;
  };
  EXPECT_THAT(why([](CampaignRow& r) { r.frequency_cap = "3/day"; }), HasSubstr("frequency_cap"));
  EXPECT_THAT(why([](CampaignRow& r) { r.cap_policy = "drop"; }), HasSubstr("unknown cap_policy 'drop'"));
  EXPECT_THAT(why([](CampaignRow& r) { r.quiet_hours = "late"; }), HasSubstr("quiet_hours"));
  EXPECT_THAT(why([](CampaignRow& r) { r.quiet_hours = "21:00-08:00"; }),
              HasSubstr("quiet_hours 21:00-08:00 without a time_zone"));
}

TEST(CampaignInfoOf, AWindowOfNoLengthNeedsNoTimeZone) {
  CampaignRow r = row();
  r.quiet_hours = "none";
  std::string problem;
  const auto ci = campaignInfoOf(r, &problem);
  ASSERT_TRUE(ci) << problem;
  EXPECT_EQ(ci->quiet_hours, "");
}

TEST(CampaignInfoOf, AZoneOrClassIsCarriedUncheckedForPacerdToJudge) {
  CampaignRow r = row();
  r.time_zone = "Mars/Olympus_Mons";
  r.priority_class = "no-such-class";
  std::string problem;
  const auto ci = campaignInfoOf(r, &problem);
  ASSERT_TRUE(ci) << problem;
  EXPECT_EQ(ci->time_zone, "Mars/Olympus_Mons");
  EXPECT_EQ(ci->priority_class, "no-such-class");
}

TEST(ParseTtlText, TakesSecondsOrAUnitWithinTheBoundsAndNone) {
  EXPECT_EQ(parseTtlText("300", "--ttl"), 300'000);
  EXPECT_EQ(parseTtlText("90s", "--ttl"), 90'000);
  EXPECT_EQ(parseTtlText("5m", "--ttl"), 300'000);
  EXPECT_EQ(parseTtlText("2h", "--ttl"), 7'200'000);
  EXPECT_EQ(parseTtlText("30d", "--ttl"), 2'592'000'000);
  EXPECT_EQ(parseTtlText("none", "--ttl"), 0);
  EXPECT_EQ(parseTtlText("0", "--ttl"), 0);
  EXPECT_THAT(refusal([] { parseTtlText("31d", "--ttl"); }), HasSubstr("--ttl 2678400000 ms is above the longest"));
  for (const char* bad : {"", "5x", "m", "-5", "1.5m", "99999999999", "5 m"})
    EXPECT_THAT(refusal([&] { parseTtlText(bad, "--ttl"); }), HasSubstr("give a lifetime")) << bad;
}

TEST(FormatTtl, ReadsBackAsParseTtlTextTakesIt) {
  for (const char* text : {"90s", "5m", "2h", "30d", "none"}) EXPECT_EQ(formatTtl(parseTtlText(text, "--ttl")), text);
  EXPECT_EQ(formatTtl(1500), "1500ms");
}

TEST(CampaignInfoOf, CarriesTheDefaultLifetimeAndSkipsOneOutOfBounds) {
  CampaignRow r = row();
  r.default_ttl_ms = 120'000;
  std::string problem;
  auto ci = campaignInfoOf(r, &problem);
  ASSERT_TRUE(ci) << problem;
  EXPECT_EQ(ci->default_ttl_ms, 120'000);
  r.default_ttl_ms = 10;
  EXPECT_FALSE(campaignInfoOf(r, &problem));
  EXPECT_THAT(problem, HasSubstr("default_ttl_ms 10 ms is below the shortest lifetime"));
}

}  // namespace
}  // namespace pacer::control
