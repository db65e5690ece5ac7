// The SMPP sink's private parts, shared by its two source files:
// smpp_sink.cc (messages: submit, dispatch, results, waiting) and
// smpp_sink_conn.cc (connections: connect, read, write, lose, events).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "pacer/sinks/smpp_sink.h"
#include "pacer/smpp/message_id.h"
#include "pacer/smpp/session.h"
#include "pacer/smpp/submit.h"
#include "tcp.h"

namespace pacer::sink::smpp_detail {

using smpp::EsmeSession;
using smpp::SessionEvent;
using smpp::SessionState;

constexpr std::size_t kReadChunk = 64 * 1024;
constexpr std::size_t kMaxReceiptText = 256;

// One TCP connection and the session on it.
struct Conn {
  explicit Conn(smpp::SessionOptions o) : session(std::move(o)) {}
  enum class Phase { kDown, kConnecting, kOpen };
  EsmeSession session;
  int fd = -1;
  Phase phase = Phase::kDown;
  MonoTime retry_at{};          // kDown: when to connect again
  MonoTime connect_deadline{};  // kConnecting
  unsigned failures = 0;        // consecutive, for the backoff
  bool transmits = true;
  // This connection's number, new at every connect and unique in the process
  // (nextConnectionSerial), 0 while down: the upper half of its receipts'
  // ack handles, so a handle from an earlier connection, or another sink's,
  // never answers a deliver_sm on this one.
  std::uint32_t serial = 0;
};

std::uint32_t nextConnectionSerial();  // thread-safe; never 0

// DeliveryReceipt::ack of the receipt deliver_sm `sequence` on connection `serial`.
inline std::uint64_t ackOf(std::uint32_t serial, std::uint32_t sequence) {
  return (std::uint64_t{serial} << 32) | sequence;
}

// One message between submit() and its result.
struct Slot {
  std::uint32_t generation = 0;
  bool used = false;
  std::uint64_t ticket = 0;
  std::vector<smpp::Pdu> pdus;  // kept between messages: no allocation per message in steady state
  std::size_t count = 0;
  int conn = -1;             // every segment of an attempt goes over the same bind
  smpp::SegmentTally tally;  // which segment goes next (one at a time), and the result
  MonoTime accepted_at{};
  std::string id;               // the message's id (its partial state is kept under it)
  std::uint16_t reference = 0;  // the concatenation reference of its segments
};

// A multi-segment message that failed in a way a retry may overcome
// (throttle, fault, timeout, lost connection): when the worker retries it
// (through the quota, like any failed message), only the segments the SMSC
// does not hold go, with the same reference, so that no segment reaches the
// handset twice and the handset joins the parts of both attempts. Kept even
// when no segment was accepted: an unanswered one may be at the SMSC.
struct Partial {
  std::uint16_t reference = 0;
  std::vector<std::string> accepted_ids;  // per segment: its message_id at the SMSC, empty if not accepted
  std::uint64_t order = 0;                // in partial_order_
};
// Beyond this many, the oldest is forgotten: its retry, if one still comes,
// goes whole under a new reference (logged).
constexpr std::size_t kMaxPartials = 100000;

inline std::uint64_t tagOf(std::uint32_t generation, std::size_t slot, std::size_t segment) {
  return (std::uint64_t{generation} << 32) | (std::uint64_t{slot} << 8) | segment;
}

// A moving average of submit_sm answer times, for the window's capacity
// (stats().submit_latency_ms): each answer weighs 1/16, so a change in the
// SMSC's pace shows within a few dozen answers.
class LatencyAverage {
 public:
  void add(Nanos latency) {
    const double ms = std::chrono::duration<double, std::milli>(latency).count();
    if (ms <= 0) return;
    ms_ = ms_ == 0 ? ms : ms_ + (ms - ms_) / 16;
  }
  double ms() const { return ms_; }

 private:
  double ms_ = 0;
};

inline std::int64_t wallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class SmppSink final : public SmppSinkInterface {
 public:
  explicit SmppSink(SmppSinkOptions o) : options_(std::move(o)), endpoint_(tcp::resolve(options_.host, options_.port)) {
    if (options_.clock == nullptr) {
      own_clock_ = makeSteadyTimeSource();
      options_.clock = own_clock_.get();
    }
    rng_.seed(options_.seed != 0 ? options_.seed : std::random_device{}());
    max_in_flight_ = options_.max_in_flight != 0 ? options_.max_in_flight : options_.binds * options_.window;
    slots_.resize(max_in_flight_);
    for (std::size_t i = max_in_flight_; i-- > 0;) free_.push_back(i);
    addConns();
  }

  ~SmppSink() override {
    // Best effort: tell the SMSC we leave, then close. Anything still in
    // flight was the owner's to drain before destroying the sink. Receipts
    // not recorded by now are left unanswered: the SMSC sends them again.
    const MonoTime now = options_.clock->now();
    for (auto& c : conns_) {
      if (c->phase != Conn::Phase::kOpen) continue;
      c->session.unbind(now);
      flush(*c);
      ::close(c->fd);
    }
    for (auto& c : conns_)
      if (c->phase == Conn::Phase::kConnecting) ::close(c->fd);
  }

  bool submit(const Message& m, std::uint64_t ticket) override {
    if (free_.empty()) return false;
    const std::size_t i = free_.back();
    free_.pop_back();
    Slot& s = slots_[i];
    s.used = true;
    ++s.generation;
    s.ticket = ticket;
    s.conn = -1;
    s.accepted_at = options_.clock->now();
    s.id = m.id;
    const auto partial = partials_.find(m.id);
    s.reference = partial != partials_.end() ? partial->second.reference : ++reference_;
    const smpp::BuildError e =
        smpp::buildSubmits(options_.submit, m.recipient, m.payload, s.reference, scratch_, s.pdus, s.count, reason_);
    if (e != smpp::BuildError::kNone) {
      // Bad input is the message's own fault: a dead-letter row, not a retry.
      SendResult r;
      r.ticket = ticket;
      r.outcome = SendOutcome::kPermanent;
      r.reason = reason_;
      finish(i, std::move(r));
      return true;
    }
    if (m.expires_at_ms > 0) {
      // The message's deadline (docs/smpp.md, "Validity period"): the SMSC
      // stops trying once it passes.
      const std::string validity = smpp::validityFor(options_.submit.validity_period, m.expires_at_ms, wallMs());
      for (std::size_t k = 0; k < s.count; ++k) s.pdus[k].validity_period = validity;
    }
    s.tally.begin(s.count);
    if (partial != partials_.end() && partial->second.accepted_ids.size() == s.count)
      s.tally.restore(partial->second.accepted_ids);
    waiting_.push_back(i);
    return true;
  }

  void poll(std::vector<SendResult>& out) override {
    const MonoTime now = options_.clock->now();
    for (std::size_t c = 0; c < conns_.size(); ++c) service(c, now);
    dispatch(now);
    for (auto& c : conns_)
      if (c->phase == Conn::Phase::kOpen) flush(*c);
    expireWaiting(now);
    for (auto& r : done_) out.push_back(std::move(r));
    done_.clear();
  }

  void pollReceipts(std::vector<DeliveryReceipt>& out) override {
    for (auto& r : receipts_) out.push_back(std::move(r));
    receipts_.clear();
  }
  void receiptsRecorded(std::span<const DeliveryReceipt> receipts) override;

  std::size_t inFlight() const override { return max_in_flight_ - free_.size(); }
  // No transmitting bind up: no room. The worker then spends no token on a
  // message that could only wait here, and nothing goes in a burst when a
  // bind comes back (submit() still takes what it is handed: it waits, or
  // fails after response_timeout).
  std::size_t maxInFlight() const override {
    for (const auto& c : conns_)
      if (c->transmits && c->session.state() == SessionState::kBound) return max_in_flight_;
    return 0;
  }
  void wait(Nanos max) override;
  SmppSinkStats stats() const override {
    SmppSinkStats s = stats_;
    s.binds_up = 0;
    for (const auto& c : conns_) {
      const bool bound = c->session.state() == SessionState::kBound;
      s.binds_up += bound ? 1 : 0;
      s.receipts_unanswered += c->session.unansweredReceipts();
      s.window_in_use += c->session.outstandingSubmits();
      s.window_size += bound && c->transmits ? options_.window : 0;
    }
    s.submit_latency_ms = latency_.ms();
    return s;
  }

 private:
  void addConns();
  void service(std::size_t index, MonoTime now);
  void connect(Conn& c, MonoTime now);
  void readAll(Conn& c, MonoTime now);
  void flush(Conn& c);
  void lose(Conn& c, const std::string& reason, MonoTime now);
  void closeConn(Conn& c, MonoTime now);
  void handleEvents(std::size_t index);
  Conn* connOfSerial(std::uint32_t serial);
  void segmentDone(const SessionEvent& e);
  void dispatch(MonoTime now);
  bool progress(std::size_t slot, MonoTime now);
  void settle(std::size_t slot, MonoTime now);
  void remember(const Slot& s);
  void compactPartialOrder();
  bool pickBind(Slot& s);
  void expireWaiting(MonoTime now);
  void finish(std::size_t slot, SendResult r);
  void note(const std::string& line) const {
    if (options_.log) options_.log(line);
  }

  SmppSinkOptions options_;
  tcp::Endpoint endpoint_;
  TimeSourcePtr own_clock_;
  std::mt19937_64 rng_;
  std::size_t max_in_flight_ = 0;
  std::vector<std::unique_ptr<Conn>> conns_;
  bool transmitter_lost_ = false;  // a transmitting connection closed since the last expireWaiting()
  std::vector<Slot> slots_;
  std::vector<std::size_t> free_;
  // Every slot in use is in one of these two until its result, or has a
  // segment out (and comes back through segmentDone()).
  std::vector<std::size_t> waiting_;   // not started or waiting for room, oldest first
  std::vector<std::size_t> answered_;  // its segment was just answered: the next goes, or its result
  std::vector<SendResult> done_;
  std::vector<DeliveryReceipt> receipts_;
  std::unordered_map<std::string, Partial> partials_;                // by message id
  std::deque<std::pair<std::string, std::uint64_t>> partial_order_;  // (id, order), oldest first
  std::uint64_t partial_serial_ = 0;
  std::uint64_t partials_forgotten_ = 0;
  smpp::EncodedText scratch_;
  std::string reason_;
  std::string last_error_ = "not bound yet";
  std::uint16_t reference_ = 0;
  std::size_t rr_ = 0;  // round-robin start among binds
  SmppSinkStats stats_;
  smpp::ReceiptIdMatcher receipt_ids_{options_.receipt_ids};
  LatencyAverage latency_;
};

}  // namespace pacer::sink::smpp_detail
