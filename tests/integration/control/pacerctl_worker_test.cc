// pacerctl worker status|drain|reload against pacerd's real admin listener
// (libmicrohttpd on a loopback port, in process): the token it sends, what a
// refused token says, and what reaches the listener's state.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "pacer/admin/admin_server.h"
#include "pacer/control/values.h"
#include "pacer/pacerctl/cli.h"
#include "support/loopback.h"

namespace pacer::control {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct Outcome {
  int code = -1;
  std::string out, err;
};

class PacerctlWorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    admin::AdminServerOptions o;
    o.address = admin::ListenAddress{"127.0.0.1", 0};
    o.token = "the-right-token";
    server_ = std::make_unique<admin::AdminServer>(std::move(o), state_, *clock_);
    address_ = server_->boundAddress();
  }

  Outcome ctl(std::vector<std::string> args, std::optional<std::string> token) {
    CliEnvironment env;
    env.admin = address_;
    env.admin_token = std::move(token);
    std::vector<const char*> argv{"pacerctl"};
    for (const std::string& a : args) argv.push_back(a.c_str());
    std::ostringstream out, err;
    Outcome r;
    r.code = runPacerctl(static_cast<int>(argv.size()), argv.data(), out, err, env);
    r.out = out.str();
    r.err = err.str();
    return r;
  }

  TimeSourcePtr clock_ = makeSteadyTimeSource();
  admin::AdminState state_;
  std::unique_ptr<admin::AdminServer> server_;
  std::string address_;
};

TEST_F(PacerctlWorkerTest, AWrongOrMissingTokenIsUnauthorizedAndChangesNothing) {
  for (const std::optional<std::string>& token : {std::optional<std::string>("wrong"), std::optional<std::string>()}) {
    const Outcome r = ctl({"worker", "drain"}, token);
    EXPECT_EQ(r.code, static_cast<int>(ExitCode::kUnauthorized)) << r.err;
    EXPECT_THAT(r.err, HasSubstr("unauthorized: check PACER_ADMIN_TOKEN"));
    EXPECT_THAT(r.err, Not(HasSubstr("wrong")));  // the token itself is never printed
  }
  EXPECT_EQ(ctl({"worker", "reload"}, "wrong").code, static_cast<int>(ExitCode::kUnauthorized));
  EXPECT_FALSE(state_.drainRequested());
  EXPECT_FALSE(state_.takeReloadRequest());
}

TEST_F(PacerctlWorkerTest, TheRightTokenDrainsAndReloads) {
  Outcome r = ctl({"worker", "reload"}, "the-right-token");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("reload requested"));
  EXPECT_TRUE(state_.takeReloadRequest());
  r = ctl({"--json", "worker", "drain"}, "the-right-token");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["action"], "drain");
  EXPECT_TRUE(state_.drainRequested());
}

TEST_F(PacerctlWorkerTest, StatusSaysNotReadyUntilTheLoopTurnsAndNeedsNoToken) {
  const Outcome r = ctl({"worker", "status"}, std::nullopt);
  EXPECT_EQ(r.code, static_cast<int>(ExitCode::kRefused)) << r.err;
  EXPECT_THAT(r.out, HasSubstr("not ready"));
}

TEST_F(PacerctlWorkerTest, NoListenerIsUnreachableAndABadAddressIsAUsageError) {
  const std::string nobody = fmt::format("127.0.0.1:{}", pacer::testing::freeLoopbackPort());
  Outcome r = ctl({"worker", "status", "--admin", nobody}, std::nullopt);
  EXPECT_EQ(r.code, static_cast<int>(ExitCode::kUnreachable)) << r.err;
  EXPECT_THAT(r.err, HasSubstr("cannot reach pacerd's admin listener at " + nobody));
  r = ctl({"worker", "drain", "--admin", "http://x/"}, "t");
  EXPECT_EQ(r.code, static_cast<int>(ExitCode::kUsage)) << r.err;
}

}  // namespace
}  // namespace pacer::control
