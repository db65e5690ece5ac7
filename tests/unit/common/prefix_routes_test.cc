#include "pacer/prefix_routes.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace pacer {
namespace {

using ::testing::HasSubstr;

std::vector<PrefixRoute> routes(std::initializer_list<std::pair<const char*, const char*>> entries) {
  std::vector<PrefixRoute> out;
  for (auto [prefix, provider] : entries) out.push_back(PrefixRoute{prefix, provider});
  return out;
}

std::string matched(const std::vector<PrefixRoute>& rs, std::string_view recipient) {
  const PrefixRoute* r = matchPrefixRoute(rs, recipient);
  return r ? r->provider : "default";
}

TEST(PrefixRoutes, TheLongestMatchingPrefixWinsWhateverItsPlaceInTheList) {
  const auto rs = routes({{"4", "eu"}, {"4420", "london"}, {"44", "uk"}, {"1", "us"}});
  EXPECT_EQ(matched(rs, "447700900123"), "uk");
  EXPECT_EQ(matched(rs, "442071838750"), "london");
  EXPECT_EQ(matched(rs, "4915123456789"), "eu");
  EXPECT_EQ(matched(rs, "12025550143"), "us");
  EXPECT_EQ(matched(rs, "+447700900123"), "uk");  // a leading '+' is not a digit of the number
  EXPECT_EQ(matched(rs, "+12025550143"), "us");
}

TEST(PrefixRoutes, ANumberNoPrefixMatchesTakesTheDefaultRoute) {
  const auto rs = routes({{"44", "uk"}, {"1", "us"}});
  EXPECT_EQ(matched(rs, "33612345678"), "default");
  EXPECT_EQ(matched(rs, "4"), "default");  // shorter than the prefix
  EXPECT_EQ(matched(rs, ""), "default");
  EXPECT_EQ(matched(rs, "+"), "default");
  EXPECT_EQ(matched(rs, "0044770090"), "default");  // only '+' is dropped, not an international call prefix
  EXPECT_EQ(matched({}, "447700900123"), "default");
}

TEST(PrefixRoutes, EveryRecipientOfAGeneratedSetGetsTheLongestOfTheRoutesItStartsWith) {
  // Against a slow reference: each number of 1 to 6 digits from {1, 4} and
  // every route whose prefix it starts with, the longest one.
  const auto rs = routes({{"1", "a"}, {"14", "b"}, {"441", "c"}, {"4", "d"}, {"1441", "e"}});
  int checked = 0;
  for (int len = 1; len <= 6; ++len)
    for (int bits = 0; bits < (1 << len); ++bits) {
      std::string n;
      for (int i = 0; i < len; ++i) n += (bits >> i) & 1 ? '4' : '1';
      std::string want = "default";
      std::size_t best = 0;
      for (const PrefixRoute& r : rs)
        if (n.compare(0, r.prefix.size(), r.prefix) == 0 && r.prefix.size() > best) {
          best = r.prefix.size();
          want = r.provider;
        }
      EXPECT_EQ(matched(rs, n), want) << n;
      ++checked;
    }
  EXPECT_EQ(checked, 126);
}

TEST(PrefixRoutes, AnEntryIsPrefixEqualsProviderWithAnOptionalPlus) {
  std::string why;
  EXPECT_EQ(parsePrefixRoute("--routes", "44=sms-uk", &why), (PrefixRoute{"44", "sms-uk"}));
  EXPECT_EQ(parsePrefixRoute("--routes", "+1=sms-us", &why), (PrefixRoute{"1", "sms-us"}));
  EXPECT_EQ(parsePrefixRoute("--routes", "44=a=b", &why), (PrefixRoute{"44", "a=b"}));  // the first '=' splits
  EXPECT_EQ(formatPrefixRoute(PrefixRoute{"44", "sms-uk"}), "44=sms-uk");
  for (const char* bad : {"44", "=sms-uk", "+=sms-uk", "4a=sms-uk", "++44=x", " 44=x", "1234567890123456=x", "44="}) {
    EXPECT_EQ(parsePrefixRoute("--routes", bad, &why), std::nullopt) << bad;
    EXPECT_THAT(why, HasSubstr("--routes")) << bad;
  }
  EXPECT_EQ(parsePrefixRoute("--routes", "123456789012345=x", &why), (PrefixRoute{"123456789012345", "x"}));
}

TEST(PrefixRoutes, TheOneCheckNamesEachProblem) {
  EXPECT_EQ(prefixRoutesProblem("routes", "sms-a", {}), std::nullopt);
  EXPECT_EQ(prefixRoutesProblem("routes", "", {}), std::nullopt);
  EXPECT_EQ(prefixRoutesProblem("routes", "sms-a", routes({{"44", "uk"}, {"4", "uk"}, {"1", "sms-a"}})), std::nullopt);
  EXPECT_THAT(prefixRoutesProblem("routes", "", routes({{"44", "uk"}})).value_or(""),
              HasSubstr("need a campaign provider"));
  EXPECT_THAT(prefixRoutesProblem("routes", "sms-a", routes({{"44", "uk"}, {"44", "uk2"}})).value_or(""),
              HasSubstr("prefix 44 is routed twice"));
  EXPECT_THAT(prefixRoutesProblem("routes", "sms-a", routes({{"4x", "uk"}})).value_or(""), HasSubstr("prefix '4x'"));
  EXPECT_THAT(prefixRoutesProblem("routes", "sms-a", routes({{"44", "a,b"}})).value_or(""), HasSubstr("contains ','"));
  EXPECT_THAT(prefixRoutesProblem("routes", "sms-a", routes({{"44", ""}})).value_or(""), HasSubstr("routes"));
  std::vector<PrefixRoute> many;
  for (std::size_t i = 0; i <= kMaxPrefixRoutes; ++i) many.push_back(PrefixRoute{std::to_string(100 + i), "p"});
  EXPECT_THAT(prefixRoutesProblem("routes", "sms-a", many).value_or(""), HasSubstr("33 routes, more than 32"));
  many.pop_back();
  EXPECT_EQ(prefixRoutesProblem("routes", "sms-a", many), std::nullopt);
}

// The lanes: the campaign's own provider, then each other one once.
TEST(PrefixRoutes, TheProvidersBesidesTheCampaignsOwnAreEachNamedOnce) {
  EXPECT_TRUE(routeProviders("sms-a", {}).empty());
  EXPECT_EQ(routeProviders("sms-a", routes({{"44", "uk"}, {"1", "us"}, {"4420", "sms-a"}, {"441", "uk"}})),
            (std::vector<std::string>{"uk", "us"}));
  EXPECT_EQ(laneBurstProblem("routes", 1, 1), std::nullopt);
  EXPECT_EQ(laneBurstProblem("routes", 3, 3), std::nullopt);
  EXPECT_THAT(laneBurstProblem("routes", 2, 3).value_or(""), HasSubstr("burst 2 cannot be split among its 3"));
}

}  // namespace
}  // namespace pacer
