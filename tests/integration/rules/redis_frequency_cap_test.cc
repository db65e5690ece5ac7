// The Redis frequency-cap store against real redis-server processes on
// loopback ports of their own (tests/support/redis_server.h).
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <random>

#include "pacer/frequency_cap_redis.h"
#include "support/cap_simulation.h"
#include "support/redis_server.h"

namespace pacer {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

const WallTime kT0 = WallTime(std::chrono::sys_days{std::chrono::year{2024} / 6 / 1});
const CapQuery kBulk{"+4915112345678", "class:bulk", 3, hours(24)};
using Args = std::vector<std::string>;

RedisFrequencyCapStorePtr storeFor(const testing::RedisServer& server, milliseconds timeout = milliseconds(500)) {
  RedisFrequencyCapOptions o;
  o.port = server.port();
  o.link.command_timeout = timeout;
  o.key_prefix = "fc";
  return makeRedisFrequencyCapStore(o);
}

CapDecision one(FrequencyCapStore& s, const CapQuery& q, WallTime now, CapBatchResult* result = nullptr) {
  CapDecision d;
  const CapBatchResult r = s.decide(std::span<const CapQuery>(&q, 1), now, std::span<CapDecision>(&d, 1));
  if (result) *result = r;
  return d;
}

TEST(RedisFrequencyCap, ThreePerDayThenCappedUntilTheFirstLeaves) {
  testing::RedisServer server;
  auto s = storeFor(server);
  for (int i = 0; i < 3; ++i) {
    const CapDecision d = one(*s, kBulk, kT0 + hours(i));
    ASSERT_EQ(d.verdict, CapVerdict::kAllowed) << s->lastError();
    EXPECT_EQ(d.at, kT0 + hours(i));
    EXPECT_EQ(d.in_window, static_cast<std::uint32_t>(i + 1));
  }
  const CapDecision capped = one(*s, kBulk, kT0 + hours(5));
  EXPECT_EQ(capped.verdict, CapVerdict::kCapped);
  EXPECT_EQ(capped.at, kT0 + hours(24));
  EXPECT_EQ(one(*s, kBulk, kT0 + hours(24)).verdict, CapVerdict::kAllowed);
}

TEST(RedisFrequencyCap, OneHashTaggedKeyOfPackedStampsThatExpiresWithTheWindow) {
  testing::RedisServer server;
  auto s = storeFor(server);
  for (int i = 0; i < 2; ++i) ASSERT_EQ(one(*s, kBulk, kT0 + minutes(i)).verdict, CapVerdict::kAllowed);
  const std::string key = "fc:{+4915112345678}:class:bulk";
  EXPECT_EQ(server.command("DBSIZE"), "1");
  EXPECT_EQ(server.command(Args{"STRLEN", key}), "12");  // two 6-byte stamps
  // Expires when the newest send (at +1 min, "now") leaves: one window.
  const long long pttl = std::stoll(server.command(Args{"PTTL", key}));
  EXPECT_GT(pttl, hours(24).count() * 3600 * 1000 - 60'000);
  EXPECT_LE(pttl, std::chrono::milliseconds(hours(24)).count());
  // A window of 1 s sets a 1 s expiry.
  const CapQuery short_window{"r2", "s", 5, seconds(1)};
  ASSERT_EQ(one(*s, short_window, kT0).verdict, CapVerdict::kAllowed);
  EXPECT_LE(std::stoll(server.command(Args{"PTTL", "fc:{r2}:s"})), 1000);
  // The packed stamp is the caller's time, big-endian milliseconds.
  const std::string raw = server.command(Args{"GET", "fc:{r2}:s"});
  ASSERT_EQ(raw.size(), 6u);
  std::int64_t stamp = 0;
  for (const char c : raw) stamp = stamp * 256 + static_cast<unsigned char>(c);
  EXPECT_EQ(stamp, kT0.time_since_epoch().count());
}

TEST(RedisFrequencyCap, AWholeBatchIsOnePipelinedRoundTrip) {
  testing::RedisServer server;
  auto s = storeFor(server);
  std::string why;
  ASSERT_EQ(s->connect(why), CapFault::kNone) << why;
  const std::uint64_t before = s->stats().round_trips;
  std::vector<std::string> ids;
  for (int i = 0; i < 500; ++i) ids.push_back("user" + std::to_string(i));
  std::vector<CapQuery> q;
  for (const std::string& id : ids) q.push_back(CapQuery{id, "class:bulk", 3, hours(24)});
  std::vector<CapDecision> out(q.size());
  const CapBatchResult r = s->decide(q, kT0, out);
  EXPECT_EQ(r.fault, CapFault::kNone);
  EXPECT_EQ(r.decided, 500u);
  EXPECT_EQ(s->stats().round_trips - before, 1u);
  EXPECT_EQ(s->stats().commands, 500u);
  EXPECT_EQ(server.command("DBSIZE"), "500");
}

TEST(RedisFrequencyCap, ScriptFlushIsRecoveredWithoutDoubleCounting) {
  testing::RedisServer server;
  auto s = storeFor(server);
  ASSERT_EQ(one(*s, kBulk, kT0).verdict, CapVerdict::kAllowed);
  EXPECT_EQ(server.command("SCRIPT FLUSH"), "OK");
  std::vector<CapQuery> q(2, kBulk);
  std::vector<CapDecision> out(2);
  const CapBatchResult r = s->decide(q, kT0 + minutes(1), out);
  EXPECT_EQ(r.fault, CapFault::kNone) << s->lastError();
  EXPECT_EQ(out[0].verdict, CapVerdict::kAllowed);
  EXPECT_EQ(out[1].verdict, CapVerdict::kAllowed);
  EXPECT_EQ(out[1].in_window, 3u);  // the NOSCRIPT round did not count anything
  EXPECT_EQ(s->stats().noscript_retries, 2u);
  EXPECT_EQ(s->stats().script_loads, 2u);
  EXPECT_EQ(one(*s, kBulk, kT0 + minutes(2)).verdict, CapVerdict::kCapped);
}

TEST(RedisFrequencyCap, AStoppedRedisIsATypedFaultAndARestartedOneIsUsedAgain) {
  testing::RedisServer server;
  auto s = storeFor(server);
  ASSERT_EQ(one(*s, kBulk, kT0).verdict, CapVerdict::kAllowed);
  server.kill();
  CapBatchResult r;
  std::vector<CapQuery> q(3, kBulk);
  std::vector<CapDecision> out(3);
  r = s->decide(q, kT0 + seconds(1), out);
  EXPECT_EQ(r.fault, CapFault::kIo);
  EXPECT_EQ(r.decided, 0u);
  for (const CapDecision& d : out) EXPECT_EQ(d.verdict, CapVerdict::kUnavailable);
  EXPECT_NE(s->lastError(), "");
  // While backing off (on the caller's clock) it does not even try.
  const std::uint64_t io = s->stats().io_errors;
  one(*s, kBulk, kT0 + seconds(1) + milliseconds(1), &r);
  EXPECT_EQ(r.fault, CapFault::kIo);
  EXPECT_EQ(s->stats().io_errors, io);
  server.start();  // same port, empty
  const CapDecision back = one(*s, kBulk, kT0 + seconds(10), &r);
  EXPECT_EQ(r.fault, CapFault::kNone) << s->lastError();
  EXPECT_EQ(back.verdict, CapVerdict::kAllowed);
  EXPECT_EQ(back.in_window, 1u);  // the restarted server lost the state (no persistence)
  EXPECT_GE(s->stats().connects, 2u);
}

TEST(RedisFrequencyCap, APausedRedisIsATimeout) {
  testing::RedisServer server;
  auto s = storeFor(server, milliseconds(50));
  std::string why;
  ASSERT_EQ(s->connect(why), CapFault::kNone) << why;
  int pid = 0;
  std::ifstream(server.dir() + "/redis.pid") >> pid;
  ASSERT_GT(pid, 0);
  ::kill(pid, SIGSTOP);
  CapBatchResult r;
  const CapDecision d = one(*s, kBulk, kT0, &r);
  ::kill(pid, SIGCONT);
  EXPECT_EQ(r.fault, CapFault::kTimeout) << s->lastError();
  EXPECT_EQ(d.verdict, CapVerdict::kUnavailable);
  EXPECT_EQ(s->stats().timeouts, 1u);
}

TEST(RedisFrequencyCap, AnErrorReplyFailsOnlyItsQuery) {
  testing::RedisServer server;
  auto s = storeFor(server);
  server.command(Args{"RPUSH", "fc:{broken}:class:bulk", "x"});  // wrong type for the script's GET
  const std::vector<CapQuery> q = {kBulk, CapQuery{"broken", "class:bulk", 3, hours(24)}, kBulk};
  std::vector<CapDecision> out(3);
  const CapBatchResult r = s->decide(q, kT0, out);
  EXPECT_EQ(r.fault, CapFault::kReply);
  EXPECT_EQ(r.decided, 2u);
  EXPECT_EQ(out[0].verdict, CapVerdict::kAllowed);
  EXPECT_EQ(out[1].verdict, CapVerdict::kUnavailable);
  EXPECT_EQ(out[2].verdict, CapVerdict::kAllowed);
  EXPECT_NE(s->lastError().find("WRONGTYPE"), std::string::npos) << s->lastError();
}

TEST(RedisFrequencyCap, InvalidQueriesNeverReachRedis) {
  testing::RedisServer server;
  auto s = storeFor(server);
  const std::vector<CapQuery> q = {CapQuery{"a}b", "s", 1, hours(1)}, CapQuery{"a", "s", 0, hours(1)}};
  std::vector<CapDecision> out(2);
  s->decide(q, kT0, out);
  EXPECT_EQ(out[0].verdict, CapVerdict::kInvalid);
  EXPECT_EQ(out[1].verdict, CapVerdict::kInvalid);
  EXPECT_EQ(s->stats().commands, 0u);
}

TEST(RedisFrequencyCap, ReleaseGivesTheSlotBack) {
  testing::RedisServer server;
  auto s = storeFor(server);
  std::vector<CapDecision> d;
  for (int i = 0; i < 3; ++i) d.push_back(one(*s, kBulk, kT0 + minutes(i)));
  ASSERT_EQ(one(*s, kBulk, kT0 + minutes(3)).verdict, CapVerdict::kCapped);
  const CapRelease back[] = {CapRelease{kBulk.recipient, kBulk.scope, d[0].at},
                             CapRelease{kBulk.recipient, kBulk.scope, kT0 + hours(9)}};
  EXPECT_EQ(s->release(back, kT0 + minutes(4)).decided, 1u);
  EXPECT_EQ(one(*s, kBulk, kT0 + minutes(5)).verdict, CapVerdict::kAllowed);
  // Releasing every send deletes the key.
  const CapRelease all[] = {CapRelease{kBulk.recipient, kBulk.scope, d[1].at},
                            CapRelease{kBulk.recipient, kBulk.scope, d[2].at},
                            CapRelease{kBulk.recipient, kBulk.scope, kT0 + minutes(5)}};
  EXPECT_EQ(s->release(all, kT0 + minutes(6)).decided, 3u);
  EXPECT_EQ(server.command("DBSIZE"), "0");
}

// Every decision of a random sequence, Redis against the in-memory store.
TEST(RedisFrequencyCap, AgreesWithTheInMemoryStoreDecisionByDecision) {
  testing::RedisServer server;
  auto redis = storeFor(server);
  auto memory = makeMemoryFrequencyCapStore();
  std::mt19937_64 rng(7);
  std::vector<std::string> ids;
  for (int i = 0; i < 40; ++i) ids.push_back("r" + std::to_string(i));
  const CapQuery shapes[] = {
      {"", "class:bulk", 3, hours(24)}, {"", "campaign:7", 2, minutes(90)}, {"", "class:tx", 1, seconds(30)}};
  WallTime now = kT0;
  int mismatches = 0;
  for (int batch = 0; batch < 400; ++batch) {
    now += milliseconds(std::uniform_int_distribution<int>(0, 600'000)(rng));
    std::vector<CapQuery> q;
    for (int i = std::uniform_int_distribution<int>(1, 50)(rng); i > 0; --i) {
      CapQuery c = shapes[std::uniform_int_distribution<int>(0, 2)(rng)];
      c.recipient = ids[std::uniform_int_distribution<std::size_t>(0, ids.size() - 1)(rng)];
      q.push_back(c);
    }
    std::vector<CapDecision> a(q.size()), b(q.size());
    ASSERT_EQ(redis->decide(q, now, a).fault, CapFault::kNone) << redis->lastError();
    memory->decide(q, now, b);
    std::vector<CapRelease> rel;
    for (std::size_t i = 0; i < q.size(); ++i) {
      mismatches += a[i].verdict != b[i].verdict || a[i].at != b[i].at || a[i].in_window != b[i].in_window;
      if (a[i].verdict == CapVerdict::kAllowed && rng() % 10 == 0)
        rel.push_back(CapRelease{q[i].recipient, q[i].scope, a[i].at});
    }
    EXPECT_EQ(redis->release(rel, now).decided, memory->release(rel, now).decided);
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(RedisFrequencyCap, ThreeSimulatedDaysNeverLetARecipientOverItsCap) {
  testing::RedisServer server;
  auto s = storeFor(server);
  testing::CapSimOptions opts;
  opts.recipients = 3000;
  opts.max_step = minutes(10);
  opts.seed = 3;
  const testing::CapSimReport r = testing::runCapSimulation(*s, opts, kT0);
  EXPECT_GT(r.decisions, 40'000u);
  EXPECT_GT(r.capped, r.decisions / 10);
  EXPECT_EQ(r.unavailable, 0u) << s->lastError();
  EXPECT_EQ(r.released, r.release_requests);
  EXPECT_EQ(r.wrong_verdicts, 0u);
  EXPECT_EQ(r.wrong_allowed_at, 0u);
  EXPECT_EQ(r.pairs_over_cap, 0u);
  EXPECT_EQ(r.recipients_over_cap, 0u);
  // Exactly one round trip per decide or release batch, plus the SCRIPT LOAD.
  EXPECT_EQ(s->stats().round_trips, r.batches + r.release_batches + s->stats().script_loads);
  EXPECT_EQ(s->stats().script_loads, 1u);
}

// Two workers (two connections) deciding for the same recipients in turn.
class TwoWorkers final : public FrequencyCapStore {
 public:
  TwoWorkers(FrequencyCapStore& a, FrequencyCapStore& b) : a_(a), b_(b) {}
  CapBatchResult decide(std::span<const CapQuery> q, WallTime now, std::span<CapDecision> out) noexcept override {
    return (turn_++ % 2 ? b_ : a_).decide(q, now, out);
  }
  CapBatchResult release(std::span<const CapRelease> r, WallTime now) noexcept override {
    return (turn_ % 2 ? b_ : a_).release(r, now);
  }

 private:
  FrequencyCapStore& a_;
  FrequencyCapStore& b_;
  std::uint64_t turn_ = 0;
};

TEST(RedisFrequencyCap, TwoWorkersShareTheCaps) {
  testing::RedisServer server;
  auto a = storeFor(server);
  auto b = storeFor(server);
  TwoWorkers both(*a, *b);
  testing::CapSimOptions opts;
  opts.recipients = 500;
  opts.duration = hours(24);
  opts.max_step = minutes(5);
  opts.seed = 11;
  const testing::CapSimReport r = testing::runCapSimulation(both, opts, kT0);
  EXPECT_GT(a->stats().commands, 1000u);
  EXPECT_GT(b->stats().commands, 1000u);
  EXPECT_EQ(r.unavailable, 0u);
  EXPECT_EQ(r.wrong_verdicts, 0u);
  EXPECT_EQ(r.pairs_over_cap, 0u);
}

}  // namespace
}  // namespace pacer
