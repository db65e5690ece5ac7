// The fixture WorkerCore's unit tests share: a simulated clock, the
// in-memory ledger, sink, parking and cap store of support/fakes.h, a core built on
// them, and a loop that steps it as the daemon's does. A test class derives
// from it and builds its core with makeCore() from its own options. Builders
// of the records and campaigns the tests offer, and counts of what went where
// and when, are here too.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pacer/time.h"
#include "pacer/worker.h"
#include "support/fakes.h"

namespace pacer::test_support {

class WorkerCoreFixture : public ::testing::Test {
 protected:
  // How the core's wall clock moves while run() steps it.
  enum class Wall {
    kFixed,   // set once by makeCore (or never), as a test that needs only a date
    kFollow,  // moved with the simulated clock before every step, as the daemon does
  };

  // Builds core_ at the clock's now from `o` as given (parking_ when
  // with_parking). With `wall`, the core's wall clock starts there.
  void makeCore(const WorkerOptions& o, bool with_parking = false, std::optional<WallTime> wall = std::nullopt,
                Wall mode = Wall::kFixed) {
    start_ = clock_.now();
    wall0_ = wall.value_or(WallTime{});
    wall_mode_ = wall ? mode : Wall::kFixed;
    core_ = std::make_unique<WorkerCore>(o, ledger_, sink_, with_parking ? &parking_ : nullptr, clock_.now());
    if (wall) core_->setWallClock(*wall, clock_.now());
  }
  // The wall time that corresponds to the simulated clock's now.
  WallTime wall() const {
    return wall0_ + std::chrono::duration_cast<std::chrono::milliseconds>(clock_.now() - start_);
  }
  // Steps every `tick` for `d`, noting the wall time of every send in sent_at_
  // and its simulated time in sent_mono_.
  void run(Nanos d, Nanos tick = std::chrono::milliseconds(5)) {
    const MonoTime end = clock_.now() + d;
    while (clock_.now() < end) {
      clock_.advance(tick);
      if (wall_mode_ == Wall::kFollow) core_->setWallClock(wall(), clock_.now());
      core_->step(clock_.now());
      while (sent_at_.size() < sink_.submitted.size()) sent_at_.push_back(wall());
      while (sent_mono_.size() < sink_.submitted.size()) sent_mono_.push_back(clock_.now());
    }
  }
  // run(), then the rows still pending written to the ledger.
  void runAndFlush(Nanos d) {
    run(d);
    core_->flush(clock_.now());
  }
  // Messages handed to `provider` ("" for any) in [from, to) of the simulated clock.
  std::size_t sentVia(const std::string& provider, MonoTime from, MonoTime to) const {
    std::size_t n = 0;
    for (std::size_t i = 0; i < sent_mono_.size(); ++i)
      n += (provider.empty() || sink_.submitted[i].provider == provider) && sent_mono_[i] >= from && sent_mono_[i] < to;
    return n;
  }
  // The most handed to `provider` ("" for any) in any 1 s window starting at a send.
  std::size_t maxPerSecond(const std::string& provider) const {
    std::size_t most = 0;
    for (const MonoTime t : sent_mono_) most = std::max(most, sentVia(provider, t, t + std::chrono::seconds(1)));
    return most;
  }
  // A record of campaign `campaign` at `offset` (id "m<offset>", payload
  // "p"), with a recipient header when `recipient` is not empty.
  static RawMessage rawMessage(std::int64_t offset, const std::string& campaign, const std::string& recipient = {}) {
    RawMessage r;
    r.position = Position{"t", 0, offset};
    r.key = campaign;
    r.headers.emplace_back("message-id", "m" + std::to_string(offset));
    if (!recipient.empty()) r.headers.emplace_back("recipient", recipient);
    r.value = "p";
    return r;
  }
  // Campaign `id` on `provider`, with its failover list, prefix routes and rate.
  static CampaignInfo campaignOn(const std::string& id, const std::string& provider,
                                 std::vector<std::string> failover = {}, std::vector<PrefixRoute> routes = {},
                                 std::optional<RateLimit> limit = std::nullopt) {
    CampaignInfo c;
    c.id = id;
    c.provider = provider;
    c.failover = std::move(failover);
    c.routes = std::move(routes);
    c.limit = limit;
    return c;
  }
  // The core's counters for campaign `id` (all zero when it has none).
  CampaignStats statsOf(const std::string& id) const {
    for (const CampaignStats& s : core_->campaignStats())
      if (s.id == id) return s;
    return {};
  }

  SimulatedTimeSource clock_{monoAt(std::chrono::seconds(1000))};
  MonoTime start_{};
  WallTime wall0_{};
  Wall wall_mode_ = Wall::kFixed;
  FakeLedger ledger_;
  FakeSink sink_{1000};
  FakeParking parking_;
  FakeCapStore caps_;                 // for the tests that give it to the core (WorkerOptions::caps)
  std::unique_ptr<WorkerCore> core_;  // last: destroyed before the fakes it points at
  std::vector<WallTime> sent_at_;     // per send, in order
  std::vector<MonoTime> sent_mono_;   // per send, in order: the step that handed it over
};

// One of several worker cores sharing `quota` (the in-process backend, as
// Redis would be shared), each with its own ledger and sink of `sink_slots`:
// the quota's tests across workers. `o` gives the rest of the options.
struct QuotaWorker {
  QuotaWorker(QuotaBackend* quota, std::uint64_t seed, MonoTime now, std::size_t sink_slots = 100000,
              WorkerOptions o = {})
      : sink(sink_slots) {
    o.quota = quota;
    o.lease.live_workers = 2;
    o.seed = seed;
    o.ledger_flush_interval = std::chrono::milliseconds(50);
    core = std::make_unique<WorkerCore>(o, ledger, sink, nullptr, now);
  }
  FakeLedger ledger;
  FakeSink sink;
  std::unique_ptr<WorkerCore> core;  // last: destroyed before the fakes it points at
};

}  // namespace pacer::test_support
