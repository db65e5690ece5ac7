// The console's answers that need no database: pages and assets, the meta
// document, and every refusal of a control (token, read-only, bad body),
// decided on the listener's thread without starting the refresher.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "console/console_assets.h"
#include "pacer/console/console_service.h"

namespace pacer::console {
namespace {

using ::testing::HasSubstr;
using Kind = admin::AdminRoutes::Kind;

class ConsoleRoutesTest : public ::testing::Test {
 protected:
  std::unique_ptr<Console> make(std::string token, bool controls) {
    ConsoleOptions o;
    o.postgres = "host=127.0.0.1 port=1 dbname=none";  // never reached by these requests
    o.token = std::move(token);
    o.controls = controls;
    o.version = "t";
    return std::make_unique<Console>(std::move(o), state_, std::make_shared<admin::EventHub>());
  }
  admin::AdminRoutes::Answer ask(Console& c, std::string_view method, std::string_view path,
                                 std::optional<std::string_view> auth = std::nullopt, std::string_view body = "") {
    admin::AdminRequest r{method, path, auth, body, "127.0.0.1:1"};
    return c.route(r, [&]() -> admin::PendingReplyPtr {
      ADD_FAILURE() << "no request here should wait for the refresher: " << path;
      return nullptr;
    });
  }
  admin::AdminState state_;
};

TEST_F(ConsoleRoutesTest, PagesAndAssetsAreBuiltIn) {
  auto c = make("tok", false);
  auto a = ask(*c, "GET", "/console/");
  ASSERT_EQ(a.kind, Kind::kNow);
  EXPECT_EQ(a.response.status, 200);
  EXPECT_EQ(a.response.content_type, "text/html; charset=utf-8");
  EXPECT_THAT(a.response.body, HasSubstr("<script src=\"console.js\" defer></script>"));
  EXPECT_EQ(ask(*c, "GET", "/console/console.js").response.content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(ask(*c, "GET", "/console/console.css").response.content_type, "text/css; charset=utf-8");
  EXPECT_EQ(ask(*c, "GET", "/console/missing.js").response.status, 404);
  a = ask(*c, "GET", "/");
  EXPECT_EQ(a.response.status, 302);
  EXPECT_EQ(a.response.location, "/console/");
  EXPECT_EQ(ask(*c, "GET", "/metrics").kind, Kind::kNotMine) << "the built-in endpoints stay the listener's";
}

TEST_F(ConsoleRoutesTest, AssetsHaveNoInlineScriptNoOtherOriginAndNoHtmlFromData) {
  const std::regex inline_script("<script(?![^>]*\\ssrc=)", std::regex::icase);
  const std::regex handler_attribute("\\son[a-z]+\\s*=", std::regex::icase);
  const std::regex other_origin("(https?:)?//[a-z0-9.-]+\\.[a-z]{2,}", std::regex::icase);
  for (const Asset& a : kAssets) {
    const std::string body(a.body);
    EXPECT_FALSE(std::regex_search(body, inline_script)) << a.name;
    if (a.name.ends_with(".html")) {
      EXPECT_FALSE(std::regex_search(body, handler_attribute)) << a.name;
    }
    std::string rest = body;
    for (std::smatch m; std::regex_search(rest, m, other_origin); rest = m.suffix())
      EXPECT_EQ(m.str(), "http://www.w3.org") << a.name << " names another origin (only the SVG namespace may)";
    for (const char* sink : {"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("})
      EXPECT_EQ(body.find(sink), std::string::npos) << a.name << " uses " << sink;
  }
}

TEST_F(ConsoleRoutesTest, ControlsNeedTheTokenAndTheSwitch) {
  auto c = make("tok", true);
  auto a = ask(*c, "POST", "/api/v1/campaigns/c1/pause");
  EXPECT_EQ(a.response.status, 401);
  EXPECT_TRUE(a.response.www_authenticate);
  EXPECT_THAT(a.response.body, HasSubstr("unauthorized"));
  EXPECT_EQ(ask(*c, "POST", "/api/v1/campaigns/c1/pause", "Bearer nope").response.status, 401);
  EXPECT_EQ(ask(*c, "POST", "/api/v1/providers/sms/rate", "tok").response.status, 401) << "no Bearer scheme";
  a = ask(*c, "POST", "/api/v1/campaigns/c1/rate", "Bearer tok", R"({"rate": -5})");
  EXPECT_EQ(a.response.status, 400);
  EXPECT_THAT(a.response.body, HasSubstr("a rate cannot be negative"));
  EXPECT_EQ(ask(*c, "POST", "/api/v1/campaigns/c1/rate", "Bearer tok", "{").response.status, 400);

  auto read_only = make("tok", false);
  a = ask(*read_only, "POST", "/api/v1/campaigns/c1/pause", "Bearer tok");
  EXPECT_EQ(a.response.status, 403);
  EXPECT_THAT(a.response.body, HasSubstr("read-only"));
  EXPECT_EQ(ask(*read_only, "POST", "/api/v1/campaigns/c1/pause").response.status, 401) << "the token is checked first";

  auto no_token = make("", true);
  a = ask(*no_token, "POST", "/api/v1/providers/sms/rate", "Bearer anything", R"({"rate": 5})");
  EXPECT_EQ(a.response.status, 403);
  EXPECT_THAT(a.response.body, HasSubstr("no admin token is configured"));
}

// The API refuses what pacerctl refuses (pacer/validation.h), with a 400
// whose message names the field and the bound, before any row is looked up.
TEST_F(ConsoleRoutesTest, ControlsRefuseValuesOutsideTheBoundsNamingFieldAndBound) {
  auto c = make("tok", true);
  struct Case {
    const char* path;
    std::string body;
    const char* says;
  };
  const std::string huge_id(10240, 'c');
  for (const Case& k : {
           Case{"/api/v1/campaigns/c1/rate", R"({"rate": 1e-300})",
                "rate 1e-300 is below the smallest rate, 0.001 per second"},
           Case{"/api/v1/providers/sms/rate", R"({"rate": "1e-300"})", "rate 1e-300 is below the smallest rate, 0.001"},
           Case{"/api/v1/campaigns/c1/rate", R"({"rate": "NaN"})",
                "rate 'NaN': not a finite number; give messages per second from 0.001 to 10000000"},
           Case{"/api/v1/providers/sms/rate", R"({"rate": "Infinity"})",
                "rate 'Infinity': not a finite number; give messages per second from 0.001 to 10000000"},
           Case{"/api/v1/campaigns/c1/rate", R"({"rate": 1e308})",
                "rate 1e+308 is above the largest rate, 10000000 per second"},
           Case{"/api/v1/providers/sms/rate", R"({"rate": 5, "burst": 1e308})",
                "burst '1e+308': a burst is a number of messages, at least 1 and at most 10000000"},
           Case{"/api/v1/campaigns/a%0Ab/pause", "{}",
                "campaign id: must be 1 to 256 bytes of UTF-8 text without control characters"},
           Case{"/api/v1/providers/p%0Aq/rate", R"({"rate": 5})",
                "provider id: must be 1 to 256 bytes of UTF-8 text without control characters"},
       }) {
    const auto a = ask(*c, "POST", k.path, "Bearer tok", k.body);
    EXPECT_EQ(a.response.status, 400) << k.path << " " << k.body;
    EXPECT_THAT(a.response.body, HasSubstr(k.says)) << k.body;
  }
  const std::string path = "/api/v1/campaigns/" + huge_id + "/rate";
  const auto a = ask(*c, "POST", path, "Bearer tok", R"({"rate": 5})");
  EXPECT_EQ(a.response.status, 400);
  EXPECT_THAT(a.response.body, HasSubstr("campaign id: 10240 bytes; at most 256 are allowed"));
}

TEST_F(ConsoleRoutesTest, MetaWrongMethodsAndUnknownEndpoints) {
  auto c = make("tok", false);
  auto a = ask(*c, "GET", "/api/v1/meta");
  EXPECT_EQ(a.response.status, 200);
  const auto meta = nlohmann::json::parse(a.response.body);
  EXPECT_EQ(meta["controls"], false);
  EXPECT_EQ(meta["token_configured"], true);
  EXPECT_EQ(meta["history_span_s"], 900.0);
  a = ask(*c, "GET", "/api/v1/campaigns/c1/pause");
  EXPECT_EQ(a.response.status, 405);
  EXPECT_EQ(a.response.allow, "POST");
  EXPECT_EQ(ask(*c, "DELETE", "/api/v1/state").response.status, 405);
  a = ask(*c, "GET", "/api/v1/nothing");
  EXPECT_EQ(a.response.status, 404);
  EXPECT_EQ(a.response.content_type, "application/json; charset=utf-8");
}

}  // namespace
}  // namespace pacer::console
