// The admin listener's answers, decided without sockets on a simulated clock.
#include "pacer/admin/admin_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace pacer::admin {
namespace {

using ::testing::HasSubstr;
using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(BearerTokenTest, TheRightTokenPassesAndEverythingElseIsRefused) {
  EXPECT_EQ(checkBearer("Bearer s3cret", "s3cret"), TokenCheck::kOk);
  EXPECT_EQ(checkBearer("bearer   s3cret ", "s3cret"), TokenCheck::kOk);  // scheme case-insensitive, spaces trimmed
  EXPECT_EQ(checkBearer(std::nullopt, "s3cret"), TokenCheck::kMissing);
  EXPECT_EQ(checkBearer("", "s3cret"), TokenCheck::kMissing);
  EXPECT_EQ(checkBearer("Bearer ", "s3cret"), TokenCheck::kMissing);
  EXPECT_EQ(checkBearer("Basic czNjcmV0", "s3cret"), TokenCheck::kMissing);
  EXPECT_EQ(checkBearer("s3cret", "s3cret"), TokenCheck::kMissing);  // no scheme
  EXPECT_EQ(checkBearer("Bearer s3cre", "s3cret"), TokenCheck::kWrong);    // a prefix
  EXPECT_EQ(checkBearer("Bearer s3cret2", "s3cret"), TokenCheck::kWrong);  // longer
  EXPECT_EQ(checkBearer("Bearer S3CRET", "s3cret"), TokenCheck::kWrong);   // the token is case-sensitive
  EXPECT_EQ(checkBearer("Bearer s3cret", ""), TokenCheck::kDisabled);
  EXPECT_EQ(checkBearer(std::nullopt, ""), TokenCheck::kDisabled);
}

TEST(BearerTokenTest, ConstantTimeEqualsComparesContentAndLength) {
  EXPECT_TRUE(constantTimeEquals("abc", "abc"));
  EXPECT_FALSE(constantTimeEquals("abd", "abc"));
  EXPECT_FALSE(constantTimeEquals("xbc", "abc"));
  EXPECT_FALSE(constantTimeEquals("ab", "abc"));
  EXPECT_FALSE(constantTimeEquals("abcabc", "abc"));  // wraps over the expected token: still not equal
  EXPECT_FALSE(constantTimeEquals("", "abc"));
  EXPECT_FALSE(constantTimeEquals("a", ""));
  EXPECT_TRUE(constantTimeEquals("", ""));
}

TEST(HostAllowListTest, IpLiteralsLocalhostAndConfiguredNamesOnly) {
  const std::vector<std::string> none;
  EXPECT_TRUE(hostAllowed(std::nullopt, none)) << "no Host: not a browser";
  EXPECT_TRUE(hostAllowed("127.0.0.1:9464", none));
  EXPECT_TRUE(hostAllowed("10.0.0.5", none)) << "an IP literal cannot be a rebinding";
  EXPECT_TRUE(hostAllowed("[::1]:9464", none));
  EXPECT_TRUE(hostAllowed("LocalHost:9464", none));
  EXPECT_FALSE(hostAllowed("attacker.example:9464", none));
  EXPECT_FALSE(hostAllowed("127.0.0.1.attacker.example", none));
  EXPECT_FALSE(hostAllowed("localhost.attacker.example:9464", none));
  EXPECT_FALSE(hostAllowed("1.2.3", none));
  EXPECT_FALSE(hostAllowed("", none));
  EXPECT_FALSE(hostAllowed(":9464", none));
  const std::vector<std::string> configured{"Pacer.Internal"};
  EXPECT_TRUE(hostAllowed("pacer.internal:9464", configured));
  EXPECT_FALSE(hostAllowed("pacer.internal.attacker.example", configured));
  EXPECT_TRUE(hostAllowed("anything.example", {"*"}));
}

TEST(GuardedReadTest, TheApiTheStreamAndMetricsNotProbesOrPages) {
  EXPECT_TRUE(isGuardedRead("GET", "/metrics"));
  EXPECT_TRUE(isGuardedRead("GET", "/api/v1/state"));
  EXPECT_TRUE(isGuardedRead("HEAD", "/api/v1/events"));
  EXPECT_FALSE(isGuardedRead("GET", "/healthz"));
  EXPECT_FALSE(isGuardedRead("GET", "/readyz"));
  EXPECT_FALSE(isGuardedRead("GET", "/console/console.js"));
  EXPECT_FALSE(isGuardedRead("POST", "/api/v1/campaigns/x/pause")) << "controls check the token themselves";
}

class AdminHandlerTest : public ::testing::Test {
 protected:
  AdminResponse get(std::string_view path) const { return handler_.handle(AdminRequest{"GET", path, std::nullopt}); }
  AdminResponse post(std::string_view path, std::optional<std::string_view> auth) const {
    return handler_.handle(AdminRequest{"POST", path, auth});
  }
  void publish(Readiness r) {
    auto s = std::make_shared<MetricsSnapshot>();
    s->version = "t";
    s->readiness = r;
    state_.publish(std::move(s));
  }

  SimulatedTimeSource clock_{MonoTime{seconds(100)}};
  AdminState state_;
  AdminHandler handler_{state_, clock_, "tok", seconds(5)};
};

TEST_F(AdminHandlerTest, HealthzFollowsTheLoopsLastTurn) {
  EXPECT_EQ(get("/healthz").status, 503) << "before the first turn";
  state_.heartbeat(clock_.now());
  EXPECT_EQ(get("/healthz").status, 200);
  clock_.advance(seconds(5));
  EXPECT_EQ(get("/healthz").status, 200) << "exactly at the limit";
  clock_.advance(milliseconds(1));
  const AdminResponse stalled = get("/healthz");
  EXPECT_EQ(stalled.status, 503);
  EXPECT_THAT(stalled.body, HasSubstr("loop stalled: last turn 5.0 s ago"));
  state_.heartbeat(clock_.now());
  EXPECT_EQ(get("/healthz").status, 200);
  // Shutting down: the loop no longer turns, within the shutdown deadline.
  state_.stopping();
  clock_.advance(seconds(8));
  EXPECT_EQ(get("/healthz").status, 200);
  EXPECT_EQ(get("/healthz").body, "stopping\n");
}

TEST_F(AdminHandlerTest, ReadyzNeedsTheGroupAWritableLedgerAndSomeQuota) {
  EXPECT_EQ(get("/readyz").status, 503) << "no snapshot yet";
  publish(Readiness{.joined = false});
  EXPECT_THAT(get("/readyz").body, HasSubstr("not in the consumer group"));
  publish(Readiness{.joined = true});
  EXPECT_EQ(get("/readyz").status, 200);
  publish(Readiness{.joined = true, .store_failing = true});
  EXPECT_EQ(get("/readyz").status, 503);
  EXPECT_THAT(get("/readyz").body, HasSubstr("ledger not writable"));
  publish(Readiness{.joined = true, .quota = true, .providers = 2, .degraded_providers = 1});
  EXPECT_EQ(get("/readyz").status, 200) << "one provider still has its quota";
  publish(Readiness{.joined = true, .quota = true, .providers = 2, .degraded_providers = 2});
  EXPECT_EQ(get("/readyz").status, 503);
  EXPECT_THAT(get("/readyz").body, HasSubstr("degraded for every provider"));
  publish(Readiness{.joined = false, .store_failing = true});
  EXPECT_THAT(get("/readyz").body, HasSubstr("; ")) << "every reason is given";
  publish(Readiness{.joined = true});
  state_.stopping();
  EXPECT_EQ(get("/readyz").status, 503);
  EXPECT_THAT(get("/readyz").body, HasSubstr("stopping"));
}

TEST_F(AdminHandlerTest, MetricsRendersTheLastSnapshot) {
  EXPECT_EQ(get("/metrics").status, 503);
  publish(Readiness{});
  const AdminResponse m = get("/metrics");
  EXPECT_EQ(m.status, 200);
  EXPECT_EQ(m.content_type, "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_THAT(m.body, HasSubstr("pacer_build_info{version=\"t\""));
  EXPECT_EQ(handler_.handle(AdminRequest{"HEAD", "/metrics", std::nullopt}).status, 200);
}

TEST_F(AdminHandlerTest, ReloadNeedsTheTokenAndIsTakenOnce) {
  EXPECT_EQ(post("/admin/reload", std::nullopt).status, 401);
  EXPECT_EQ(post("/admin/reload", "Bearer nope").status, 401);
  EXPECT_FALSE(state_.takeReloadRequest());
  EXPECT_EQ(post("/admin/reload", "Bearer tok").status, 200);
  EXPECT_FALSE(state_.drainRequested()) << "a reload is not a drain";
  EXPECT_TRUE(state_.takeReloadRequest());
  EXPECT_FALSE(state_.takeReloadRequest()) << "one request, one reload";
  EXPECT_EQ(handler_.handle(AdminRequest{"GET", "/admin/reload", "Bearer tok"}).status, 405);
}

TEST_F(AdminHandlerTest, DrainNeedsTheTokenAndOnlySetsTheFlag) {
  EXPECT_EQ(post("/admin/drain", std::nullopt).status, 401);
  EXPECT_TRUE(post("/admin/drain", std::nullopt).www_authenticate);
  EXPECT_EQ(post("/admin/drain", "Bearer nope").status, 401);
  EXPECT_FALSE(state_.drainRequested());
  EXPECT_EQ(post("/admin/drain", "Bearer tok").status, 200);
  EXPECT_TRUE(state_.drainRequested());
}

TEST_F(AdminHandlerTest, WithoutATokenStateChangesAreForbidden) {
  AdminHandler open(state_, clock_, "", seconds(5));
  EXPECT_EQ(open.handle(AdminRequest{"POST", "/admin/drain", std::nullopt}).status, 403);
  EXPECT_EQ(open.handle(AdminRequest{"POST", "/admin/drain", "Bearer "}).status, 403);
  EXPECT_EQ(open.handle(AdminRequest{"POST", "/admin/drain", "Bearer anything"}).status, 403);
  EXPECT_FALSE(state_.drainRequested());
}

TEST_F(AdminHandlerTest, WrongMethodsAre405AndUnknownPaths404) {
  const AdminResponse a = handler_.handle(AdminRequest{"GET", "/admin/drain", "Bearer tok"});
  EXPECT_EQ(a.status, 405);
  EXPECT_EQ(a.allow, "POST");
  EXPECT_FALSE(state_.drainRequested());
  EXPECT_EQ(post("/metrics", std::nullopt).status, 405);
  EXPECT_EQ(handler_.handle(AdminRequest{"DELETE", "/healthz", std::nullopt}).allow, "GET, HEAD");
  EXPECT_EQ(get("/").status, 404);
  EXPECT_EQ(get("/metrics/").status, 404);
  EXPECT_EQ(post("/admin/other", "Bearer tok").status, 404);
}

TEST(ListenAddressTest, HostPortAndBracketedIpv6) {
  EXPECT_EQ(parseListenAddress("127.0.0.1:9464").host, "127.0.0.1");
  EXPECT_EQ(parseListenAddress("127.0.0.1:9464").port, 9464);
  EXPECT_EQ(parseListenAddress("localhost:0").port, 0);
  EXPECT_EQ(parseListenAddress("[::1]:80").host, "::1");
  EXPECT_THROW(parseListenAddress("9464"), AdminAddressError);
  EXPECT_THROW(parseListenAddress(":9464"), AdminAddressError);
  EXPECT_THROW(parseListenAddress("::1:80"), AdminAddressError);
  EXPECT_THROW(parseListenAddress("host:"), AdminAddressError);
  EXPECT_THROW(parseListenAddress("host:http"), AdminAddressError);
  EXPECT_THROW(parseListenAddress("host:65536"), AdminAddressError);
  try {
    parseListenAddress("host:x");
  } catch (const AdminAddressError& e) {
    EXPECT_THAT(e.what(), HasSubstr("--admin-listen 'host:x'"));
  }
}

}  // namespace
}  // namespace pacer::admin

namespace pacer::admin {
namespace {

TEST(AcceptsGzipTest, ReadsTheCodingsAndTheirWeights) {
  EXPECT_TRUE(acceptsGzip("gzip"));
  EXPECT_TRUE(acceptsGzip("gzip, deflate, br"));
  EXPECT_TRUE(acceptsGzip("br;q=1.0, GZip;q=0.5"));
  EXPECT_TRUE(acceptsGzip("*"));
  EXPECT_FALSE(acceptsGzip(""));
  EXPECT_FALSE(acceptsGzip("identity"));
  EXPECT_FALSE(acceptsGzip("gzip;q=0"));
  EXPECT_FALSE(acceptsGzip("br, gzip ; q=0.000"));
  EXPECT_FALSE(acceptsGzip("x-gzip-not")) << "a coding is a whole token";
}

}  // namespace
}  // namespace pacer::admin
