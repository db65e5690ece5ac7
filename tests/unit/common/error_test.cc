// Every exception Pacer throws has one root, pacer::Error, whose kind says
// whether waiting can help: callers decide on the kind, not the class.
#include "pacer/error.h"

#include <gtest/gtest.h>

#include "pacer/admin/admin_server.h"
#include "pacer/control/values.h"
#include "pacer/daemon/daemon.h"
#include "pacer/ledger.h"
#include "pacer/quiet_hours.h"
#include "pacer/quota_redis.h"
#include "pacer/rate_limiter.h"
#include "pacer/scheduler.h"

namespace pacer {
namespace {

template <typename E>
ErrorKind kindOf(const E& e) {
  try {
    throw e;
  } catch (const Error& caught) {
    EXPECT_STREQ(caught.what(), e.what());
    return caught.kind();
  }
}

TEST(Error, EveryClassHasTheRootAndAKind) {
  EXPECT_EQ(kindOf(LedgerUnavailableError("down")), ErrorKind::kUnavailable);
  EXPECT_EQ(kindOf(LedgerRejectedError("constraint")), ErrorKind::kRejected);
  EXPECT_EQ(kindOf(IoError("refused")), ErrorKind::kUnavailable);
  EXPECT_EQ(kindOf(TimeoutError("slow")), ErrorKind::kUnavailable);
  EXPECT_EQ(kindOf(ReplyError("ERR")), ErrorKind::kRejected);
  EXPECT_EQ(kindOf(SchedulerError("bad id")), ErrorKind::kInvalid);
  EXPECT_EQ(kindOf(InvalidLimitError("rate")), ErrorKind::kInvalid);
  EXPECT_EQ(kindOf(TimeZoneError("Mars/Olympus")), ErrorKind::kInvalid);
  EXPECT_EQ(kindOf(worker::DaemonConfigError("tick")), ErrorKind::kInvalid);
  EXPECT_EQ(kindOf(admin::AdminAddressError("port")), ErrorKind::kInvalid);
  EXPECT_EQ(kindOf(control::UnreachableError("no db")), ErrorKind::kUnavailable);
  EXPECT_EQ(kindOf(control::RefusedError("exists")), ErrorKind::kRejected);
  EXPECT_EQ(kindOf(control::InvalidValueError("--rate")), ErrorKind::kInvalid);
  EXPECT_TRUE(Error(ErrorKind::kUnavailable, "x").retryable());
  EXPECT_FALSE(Error(ErrorKind::kRejected, "x").retryable());
  EXPECT_STREQ(errorKindName(ErrorKind::kRejected), "rejected");
}

}  // namespace
}  // namespace pacer
