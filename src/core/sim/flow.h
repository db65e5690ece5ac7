// One campaign's messages in the simulation: when they arrive, which
// recipient and time zone each has, and the recipient rules applied to each
// granted message (quiet hours, then the frequency cap). A granted message
// that a rule holds has used its grant (the scheduler's tokens) without being
// sent, as in the worker core where the check follows the grant; held
// messages come back as backlog when their allowed_at is reached.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include "oracle.h"
#include "pacer/frequency_cap.h"
#include "pacer/quiet_hours.h"
#include "pacer/sim/scenario.h"
#include "pacer/sim/simulator.h"

namespace pacer::sim {

class Flow {
 public:
  // `caps` and `quiet` outlive the flow; `quiet` may be null when the
  // campaign has no quiet hours.
  Flow(const Scenario& s, std::size_t index, std::int64_t tick_ns, FrequencyCapStore* caps, QuietHours* quiet);

  // The campaign joins at tick k: the backlog it has from the start.
  std::uint64_t start(std::uint64_t k);
  // Messages that arrive at tick k or whose hold ends: new backlog.
  std::uint64_t due(std::uint64_t k);
  // The scheduler granted n messages at tick k: applies the rules; returns
  // how many were sent.
  std::uint64_t take(std::uint64_t k, std::uint64_t n);
  // With a lifetime: the seqs of the messages the last take() sent, in order
  // (for the provider model to say which it refused).
  const std::vector<std::uint64_t>& taken() const { return taken_; }
  // The provider refused these of the last take(): they wait until due_tick,
  // then are backlog again (ahead of fresh ones), keeping their deadlines.
  void retry(std::uint64_t due_tick, const std::vector<std::uint64_t>& seqs);
  // Messages in the backlog (not held) whose deadline is at or before tick
  // k: they leave it as expired; returns how many (the caller drops them from
  // the scheduler's backlog before the tick, so none is granted a token).
  std::uint64_t expire(std::uint64_t k);
  // Every message of a finite campaign sent, suppressed or expired.
  bool done() const;
  // The rule counts, wait statistics and independent checks; `end` is the
  // tick after the last (held messages past their deadline then count as expired).
  RuleResult finish(std::uint64_t end);

 private:
  struct Msg {
    std::uint64_t seq = 0;
    bool held_quiet = false;
    bool retried = false;  // refused by the provider once: its wait was recorded at its first send
  };
  struct Parked {
    std::uint64_t due_tick;
    Msg msg;
    bool operator>(const Parked& o) const { return due_tick != o.due_tick ? due_tick > o.due_tick : msg.seq > o.msg.seq; }
  };

  bool dispatch(std::uint64_t k, Msg& m);
  bool capAllows(std::uint64_t k, WallTime now, Msg& m);
  void park(std::uint64_t k, WallTime allowed_at, const Msg& m);
  WallTime wallAt(std::uint64_t k) const;
  void recordWait(std::uint64_t k, std::uint64_t seq);
  double arrivalNs(std::uint64_t seq) const;
  bool expiredAt(std::uint64_t k, std::uint64_t seq) const;
  void recordQuietSend(std::size_t zone, WallTime now);
  void checkQuietSends();

  const CampaignScenario& c_;
  const std::int64_t tick_ns_;
  const WallTime start_utc_;
  FrequencyCapStore* caps_;
  QuietHours* quiet_;
  const bool per_message_;  // rules apply: messages one by one
  const std::optional<double> lifetime_ns_;
  std::string scope_;
  std::string recipient_;  // scratch
  std::vector<ZoneId> zones_;
  std::uint64_t k0_ = 0;
  std::uint64_t arrived_ = 0;
  std::uint64_t next_seq_ = 0;
  std::uint64_t sent_ = 0;
  std::deque<std::pair<std::uint64_t, std::uint64_t>> fresh_;  // (tick offered, messages) not yet granted
  std::deque<Msg> ready_;                                      // back from a hold or a retry, in the backlog again
  std::priority_queue<Parked, std::vector<Parked>, std::greater<>> parked_;
  std::map<std::uint64_t, std::uint64_t> waits_;  // arrival-to-send wait in 0.1 ms -> messages
  RuleResult out_;
  std::vector<Parked> kept_;          // scratch of finish()
  std::vector<std::uint64_t> taken_;  // seqs the last take() sent (with a lifetime)
  std::optional<CapOracle> cap_oracle_;
  // Sends by zone index, for the oracle; checked and cleared as they pile up.
  std::vector<std::vector<SendRun>> quiet_sends_;
  std::size_t quiet_pending_ = 0;
};

}  // namespace pacer::sim
