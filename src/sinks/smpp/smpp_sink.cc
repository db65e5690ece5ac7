// The SMPP sink: sockets and bookkeeping around the pure pieces of
// pacer::smpp. Protocol decisions (window, timeouts, answers, receipts,
// segment outcomes) are made by EsmeSession and SegmentTally; this file
// moves bytes, keeps messages in slots and reconnects.
#include "pacer/sinks/smpp_sink.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <random>
#include <stdexcept>
#include <unordered_map>

#include "pacer/smpp/session.h"
#include "pacer/smpp/submit.h"
#include "tcp.h"

namespace pacer::sink {
namespace {

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
};

// One message between submit() and its result.
struct Slot {
  std::uint32_t generation = 0;
  bool used = false;
  std::uint64_t ticket = 0;
  std::vector<smpp::Pdu> pdus;  // kept between messages: no allocation per message in steady state
  std::size_t count = 0;
  std::size_t next = 0;  // next segment to send
  int conn = -1;         // every segment goes over the same bind
  smpp::SegmentTally tally;
  MonoTime accepted_at{};
  std::string id;               // the message's id (its partial state is kept under it)
  std::uint16_t reference = 0;  // the concatenation reference of its segments
  std::vector<bool> skip;       // segments the SMSC accepted on an earlier attempt
};

// A message the SMSC accepted part of before throttling the rest: when the
// worker retries it (through the quota, like any throttled message), only
// the segments not yet accepted go, with the same reference, so that no
// segment reaches the handset twice.
struct Partial {
  std::uint16_t reference = 0;
  std::vector<bool> accepted;
  std::string first_id;
};
constexpr std::size_t kMaxPartials = 100000;  // beyond: the whole message goes again (logged)

std::uint64_t tagOf(std::uint32_t generation, std::size_t slot, std::size_t segment) {
  return (std::uint64_t{generation} << 32) | (std::uint64_t{slot} << 8) | segment;
}

std::int64_t wallMs() {
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
    // flight was the owner's to drain before destroying the sink.
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
    s.next = 0;
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
    s.tally.begin(s.count);
    s.skip.assign(s.count, false);
    if (partial != partials_.end() && partial->second.accepted.size() == s.count) {
      s.skip = partial->second.accepted;
      s.tally.restore(s.skip, partial->second.first_id);
    }
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

  std::size_t inFlight() const override { return max_in_flight_ - free_.size(); }
  std::size_t maxInFlight() const override { return max_in_flight_; }
  void wait(Nanos max) override;
  SmppSinkStats stats() const override {
    SmppSinkStats s = stats_;
    s.binds_up = 0;
    for (const auto& c : conns_) s.binds_up += c->session.state() == SessionState::kBound ? 1 : 0;
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
  void handleEvents(std::size_t index, MonoTime now);
  void segmentDone(const SessionEvent& e, MonoTime now);
  void dispatch(MonoTime now);
  bool progress(std::size_t slot, MonoTime now);
  void settle(std::size_t slot, MonoTime now);
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
  std::vector<Slot> slots_;
  std::vector<std::size_t> free_;
  std::vector<std::size_t> waiting_;  // slots with segments not yet sent
  std::vector<SendResult> done_;
  std::vector<DeliveryReceipt> receipts_;
  std::unordered_map<std::string, Partial> partials_;  // by message id
  smpp::EncodedText scratch_;
  std::string reason_;
  std::string last_error_ = "not bound yet";
  std::uint16_t reference_ = 0;
  std::size_t rr_ = 0;  // round-robin start among binds
  SmppSinkStats stats_;
};

void SmppSink::addConns() {
  smpp::SessionOptions so;
  so.system_id = options_.system_id;
  so.password = options_.password;
  so.system_type = options_.system_type;
  so.window = options_.window;
  so.enquire_link_interval = options_.enquire_link_interval;
  so.response_timeout = options_.response_timeout;
  for (std::size_t i = 0; i < options_.binds; ++i) {
    if (options_.bind_mode == SmppBindMode::kTransceiver) {
      so.mode = smpp::BindMode::kTransceiver;
      conns_.push_back(std::make_unique<Conn>(so));
    } else {
      so.mode = smpp::BindMode::kTransmitter;
      conns_.push_back(std::make_unique<Conn>(so));
      so.mode = smpp::BindMode::kReceiver;
      conns_.push_back(std::make_unique<Conn>(so));
      conns_.back()->transmits = false;
    }
  }
}

void SmppSink::connect(Conn& c, MonoTime now) {
  c.session.reset();  // its events were handed out by the last service()
  std::string error;
  c.fd = tcp::startConnect(endpoint_, error);
  if (c.fd < 0) {
    c.phase = Conn::Phase::kOpen;  // so that lose() schedules the retry
    return lose(c, "connect to " + endpoint_.text + ": " + error, now);
  }
  c.phase = Conn::Phase::kConnecting;
  c.connect_deadline = now + options_.connect_timeout;
}

void SmppSink::service(std::size_t index, MonoTime now) {
  Conn& c = *conns_[index];
  if (c.phase == Conn::Phase::kDown && now >= c.retry_at) connect(c, now);
  if (c.phase == Conn::Phase::kConnecting) {
    pollfd p{c.fd, POLLOUT, 0};
    if (::poll(&p, 1, 0) == 0) {
      if (now >= c.connect_deadline) lose(c, "connect to " + endpoint_.text + ": timeout", now);
    } else if (const int err = tcp::connectError(c.fd); err != 0) {
      lose(c, "connect to " + endpoint_.text + ": " + tcp::errorText(err), now);
    } else {
      c.phase = Conn::Phase::kOpen;
      ++stats_.connects;
      c.session.start(now);
    }
  }
  if (c.phase == Conn::Phase::kOpen) {
    readAll(c, now);
    if (c.phase == Conn::Phase::kOpen) c.session.tick(now);
  }
  handleEvents(index, now);
  if (c.phase == Conn::Phase::kOpen && c.session.state() == SessionState::kClosed) {
    flush(c);  // an unbind_resp, if that is how it ended
    closeConn(c, now);
  }
}

void SmppSink::readAll(Conn& c, MonoTime now) {
  while (c.phase == Conn::Phase::kOpen && c.session.state() != SessionState::kClosed) {
    const ssize_t n = ::recv(c.fd, c.session.prepareRead(kReadChunk), kReadChunk, 0);
    if (n > 0) {
      c.session.commitRead(static_cast<std::size_t>(n), now);
      if (static_cast<std::size_t>(n) < kReadChunk) return;
      continue;
    }
    if (n == 0) return lose(c, "closed by the SMSC", now);
    if (errno == EAGAIN || errno == EWOULDBLOCK) return;
    if (errno == EINTR) continue;
    return lose(c, tcp::errorText(errno), now);
  }
}

void SmppSink::flush(Conn& c) {
  while (!c.session.output().empty()) {
    const std::string_view out = c.session.output();
    const ssize_t n = ::send(c.fd, out.data(), out.size(), MSG_NOSIGNAL);
    if (n > 0) {
      c.session.consumeOutput(static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return;  // EAGAIN: later; a real error shows up on the next read
  }
}

// The connection is gone (or never came): outstanding submits come back as
// faults through the session's events, and a reconnect is scheduled.
void SmppSink::lose(Conn& c, const std::string& reason, MonoTime now) {
  const SessionState st = c.session.state();
  const bool had_session = st == SessionState::kBinding || st == SessionState::kBound || st == SessionState::kUnbinding;
  c.session.connectionLost(reason, now);
  if (!had_session) {  // no session to report it through
    last_error_ = reason;
    note("smpp: " + reason);
  }
  closeConn(c, now);
}

void SmppSink::closeConn(Conn& c, MonoTime now) {
  if (c.fd >= 0) ::close(c.fd);
  c.fd = -1;
  c.phase = Conn::Phase::kDown;
  const double r = std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
  c.retry_at =
      now + smpp::reconnectDelay(c.failures++, options_.reconnect_backoff_min, options_.reconnect_backoff_max, r);
}

void SmppSink::handleEvents(std::size_t index, MonoTime now) {
  Conn& c = *conns_[index];
  for (const SessionEvent& e : c.session.events()) {
    switch (e.kind) {
      case SessionEvent::Kind::kBound:
        c.failures = 0;
        note("smpp: bound " + std::string(smpp::bindModeName(c.session.options().mode)) + " to " + endpoint_.text);
        break;
      case SessionEvent::Kind::kSubmitDone: segmentDone(e, now); break;
      case SessionEvent::Kind::kReceipt: {
        ++stats_.receipts;
        DeliveryReceipt& r = receipts_.emplace_back();
        r.provider = options_.provider;
        r.provider_message_id = e.receipt.message_id;
        r.status = e.receipt.status;
        r.error_code = e.receipt.error_code;
        r.done_at_ms = e.receipt.done_at_ms;
        r.received_at_ms = wallMs();
        r.text = e.receipt.text.substr(0, kMaxReceiptText);
        break;
      }
      case SessionEvent::Kind::kMessage: break;
      case SessionEvent::Kind::kProtocolError:
        ++stats_.protocol_errors;
        note("smpp: " + e.reason);
        break;
      case SessionEvent::Kind::kClosed:
        ++stats_.disconnects;
        if (e.reason.rfind("bind", 0) == 0) ++stats_.bind_failures;
        last_error_ = e.reason;
        note("smpp: session to " + endpoint_.text + " ended: " + e.reason);
        break;
    }
  }
  c.session.events().clear();
}

void SmppSink::segmentDone(const SessionEvent& e, MonoTime now) {
  const auto slot = static_cast<std::size_t>((e.tag >> 8) & 0xFFFFFF);
  const auto segment = static_cast<std::size_t>(e.tag & 0xFF);
  if (slot >= slots_.size()) return;
  Slot& s = slots_[slot];
  if (!s.used || s.generation != static_cast<std::uint32_t>(e.tag >> 32)) return;  // cannot happen; be safe
  s.tally.done(segment, e.outcome, e.status, e.message_id, e.reason);
  if (s.tally.finished()) settle(slot, now);
}

// A finished message: its result. When the SMSC accepted part of it and
// throttled the rest, what it holds is remembered for the retry.
void SmppSink::settle(std::size_t slot, MonoTime now) {
  Slot& s = slots_[slot];
  if (s.tally.resumable()) {
    if (partials_.size() < kMaxPartials || partials_.count(s.id)) {
      ++stats_.partial_throttles;
      partials_[s.id] = Partial{s.reference, s.tally.acceptedSegments(), s.tally.firstId()};
    } else {
      note("smpp: " + std::to_string(kMaxPartials) + " partly sent messages remembered already; message " + s.id +
           " will be sent whole again");
    }
  } else if (!partials_.empty()) {
    partials_.erase(s.id);
  }
  SendResult r = s.tally.result(s.ticket);
  r.latency = now - s.accepted_at;
  if (r.outcome == SendOutcome::kThrottled) r.retry_after = options_.throttle_retry_after;
  finish(slot, std::move(r));
}

void SmppSink::finish(std::size_t slot, SendResult r) {
  Slot& s = slots_[slot];
  s.used = false;
  done_.push_back(std::move(r));
  free_.push_back(slot);
}

// Sends what the windows allow, oldest message first. A message's segments
// all go over the bind its first one took.
void SmppSink::dispatch(MonoTime now) {
  std::size_t keep = 0;
  for (std::size_t i = 0; i < waiting_.size(); ++i) {
    if (progress(waiting_[i], now)) waiting_[keep++] = waiting_[i];
  }
  waiting_.resize(keep);
}

// Returns whether the slot still has segments to send.
bool SmppSink::progress(std::size_t slot, MonoTime now) {
  Slot& s = slots_[slot];
  if (!s.used) return false;
  if (s.conn < 0) {
    // The bind with the most room, starting the search at a rotating point.
    std::size_t best_room = 0;
    for (std::size_t k = 0; k < conns_.size(); ++k) {
      const std::size_t c = (rr_ + k) % conns_.size();
      const std::size_t room = conns_[c]->transmits ? conns_[c]->session.windowRoom() : 0;
      if (room > best_room) best_room = room, s.conn = static_cast<int>(c);
    }
    if (s.conn < 0) return true;
    rr_ = (rr_ + 1) % conns_.size();
  }
  EsmeSession& session = conns_[static_cast<std::size_t>(s.conn)]->session;
  while (s.next < s.count && s.tally.mayContinue()) {
    if (s.skip[s.next]) {  // accepted on an earlier attempt
      ++s.next;
      continue;
    }
    if (!session.canSubmit()) {
      // The bind went away between segments: the rest cannot follow on it.
      if (session.state() != SessionState::kBound) break;
      return true;
    }
    const smpp::EncodeError e = session.submit(s.pdus[s.next], tagOf(s.generation, slot, s.next), now);
    if (e != smpp::EncodeError::kNone) {
      s.tally.done(s.next, SendOutcome::kPermanent, 0, "", std::string("cannot encode: ") + smpp::encodeErrorName(e));
      s.tally.sent();
      ++s.next;
      break;
    }
    ++stats_.submit_sm;
    s.tally.sent();
    ++s.next;
  }
  if (s.next < s.count && s.tally.mayContinue()) {
    // Its bind is gone before the first failure could be reported: the
    // unsent rest counts as one fault, and the message finishes once the
    // segments already sent are answered.
    s.tally.done(s.next, SendOutcome::kFault, 0, "", "bind lost between segments: " + last_error_);
    s.tally.sent();
  }
  if (s.tally.finished()) settle(slot, now);
  return false;
}

// A message that found no bound transmitter within response_timeout fails
// as a fault (the worker retries it with backoff) instead of waiting forever.
void SmppSink::expireWaiting(MonoTime now) {
  std::size_t keep = 0;
  for (std::size_t i = 0; i < waiting_.size(); ++i) {
    Slot& s = slots_[waiting_[i]];
    if (s.conn < 0 && now - s.accepted_at >= options_.response_timeout) {
      SendResult r;
      r.ticket = s.ticket;
      r.outcome = SendOutcome::kFault;
      r.reason = "no SMPP bind available: " + last_error_;
      r.latency = now - s.accepted_at;
      finish(waiting_[i], std::move(r));
      continue;
    }
    waiting_[keep++] = waiting_[i];
  }
  waiting_.resize(keep);
}

void SmppSink::wait(Nanos max) {
  const MonoTime now = options_.clock->now();
  // What was submitted since the last poll() goes out before blocking, so
  // the wait overlaps the SMSC's answer instead of delaying the request.
  dispatch(now);
  for (auto& c : conns_)
    if (c->phase == Conn::Phase::kOpen) flush(*c);
  MonoTime until = now + std::clamp(max, Nanos{0}, Nanos{std::chrono::seconds(1)});
  std::vector<pollfd> fds;
  fds.reserve(conns_.size());
  for (const auto& c : conns_) {
    if (c->phase == Conn::Phase::kDown) {
      until = std::min(until, c->retry_at);
    } else if (c->phase == Conn::Phase::kConnecting) {
      fds.push_back({c->fd, POLLOUT, 0});
      until = std::min(until, c->connect_deadline);
    } else {
      const short events = static_cast<short>(POLLIN | (c->session.output().empty() ? 0 : POLLOUT));
      fds.push_back({c->fd, events, 0});
      until = std::min(until, c->session.nextDeadline());
    }
  }
  for (std::size_t slot : waiting_) {
    if (slots_[slot].conn < 0) until = std::min(until, slots_[slot].accepted_at + options_.response_timeout);
  }
  if (!done_.empty() || until <= now) return;
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(until - now).count();
  ::poll(fds.data(), fds.size(), static_cast<int>(ms));
}

}  // namespace

std::unique_ptr<SmppSinkInterface> makeSmppSink(SmppSinkOptions o) {
  if (o.system_id.empty() || o.system_id.size() + 1 > smpp::limit::kSystemId)
    throw std::invalid_argument("smpp: system_id must be 1 to 15 characters");
  if (o.password.size() + 1 > smpp::limit::kPassword)
    throw std::invalid_argument("smpp: password must be at most 8 characters");
  if (o.system_type.size() + 1 > smpp::limit::kSystemType)
    throw std::invalid_argument("smpp: system_type must be at most 12 characters");
  if (o.port <= 0 || o.port > 65535) throw std::invalid_argument("smpp: port must be 1-65535");
  if (o.binds == 0 || o.binds > 64) throw std::invalid_argument("smpp: binds must be 1-64");
  if (o.window == 0 || o.window > 10000) throw std::invalid_argument("smpp: window must be 1-10000");
  if (o.response_timeout <= Nanos{0} || o.enquire_link_interval <= Nanos{0} || o.connect_timeout <= Nanos{0})
    throw std::invalid_argument("smpp: timeouts and the enquire_link interval must be positive");
  if (o.reconnect_backoff_min <= Nanos{0} || o.reconnect_backoff_max < o.reconnect_backoff_min)
    throw std::invalid_argument("smpp: reconnect backoff must be positive, min <= max");
  const std::size_t in_flight = o.max_in_flight != 0 ? o.max_in_flight : o.binds * o.window;
  if (in_flight > 0xFFFFFF) throw std::invalid_argument("smpp: max_in_flight too large");
  if (o.submit.source_addr.size() + 1 > smpp::limit::kAddress)
    throw std::invalid_argument("smpp: source address must be at most 20 characters");
  return std::make_unique<SmppSink>(std::move(o));
}

}  // namespace pacer::sink
