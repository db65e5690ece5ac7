// The SMPP sink's connections: connect without blocking, read and write
// the session's bytes, lose a bind and schedule its reconnect, and turn the
// session's events into segment outcomes and receipts.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>

#include "smpp_sink_impl.h"

namespace pacer::sink::smpp_detail {

// Process-wide, so that no two connections of any sinks share a number
// until 2^32 connects (decades of reconnecting every half second).
std::uint32_t nextConnectionSerial() {
  static std::atomic<std::uint32_t> last{0};
  std::uint32_t s = last.fetch_add(1, std::memory_order_relaxed) + 1;
  while (s == 0) s = last.fetch_add(1, std::memory_order_relaxed) + 1;
  return s;
}

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
  c.serial = nextConnectionSerial();
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
  handleEvents(index);
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
  transmitter_lost_ = transmitter_lost_ || c.transmits;  // expireWaiting() looks at the binds left
  if (c.fd >= 0) ::close(c.fd);
  c.fd = -1;
  c.phase = Conn::Phase::kDown;
  c.serial = 0;
  const double r = std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
  c.retry_at =
      now + smpp::reconnectDelay(c.failures++, options_.reconnect_backoff_min, options_.reconnect_backoff_max, r);
}

void SmppSink::handleEvents(std::size_t index) {
  Conn& c = *conns_[index];
  for (const SessionEvent& e : c.session.events()) {
    switch (e.kind) {
      case SessionEvent::Kind::kBound:
        c.failures = 0;
        note("smpp: bound " + std::string(smpp::bindModeName(c.session.options().mode)) + " to " + endpoint_.text);
        break;
      case SessionEvent::Kind::kSubmitDone: segmentDone(e); break;
      case SessionEvent::Kind::kReceipt: {
        ++stats_.receipts;
        DeliveryReceipt& r = receipts_.emplace_back();
        r.provider = options_.provider;
        r.provider_message_id = e.receipt.message_id;
        receipt_ids_.toSubmitForm(r.provider_message_id);  // the ledger holds submit_sm_resp's form
        r.status = e.receipt.status;
        r.error_code = e.receipt.error_code;
        r.done_at_ms = e.receipt.done_at_ms;
        r.received_at_ms = wallMs();
        r.text = e.receipt.text.substr(0, kMaxReceiptText);
        r.ack = ackOf(c.serial, e.sequence);  // answered by receiptsRecorded()
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

// Settled by the next dispatch(), which also sends the next segment.
void SmppSink::segmentDone(const SessionEvent& e) {
  if (e.outcome == SendOutcome::kDelivered) {
    receipt_ids_.submitted(e.message_id);
    latency_.add(e.latency);
  }
  const auto slot = static_cast<std::size_t>((e.tag >> 8) & 0xFFFFFF);
  const auto segment = static_cast<std::size_t>(e.tag & 0xFF);
  if (slot >= slots_.size()) return;
  Slot& s = slots_[slot];
  if (!s.used || s.generation != static_cast<std::uint32_t>(e.tag >> 32)) return;  // cannot happen; be safe
  s.tally.done(segment, e.outcome, e.status, e.message_id, e.reason);
  answered_.push_back(slot);
}

Conn* SmppSink::connOfSerial(std::uint32_t serial) {
  for (auto& c : conns_)
    if (c->serial == serial) return c.get();
  return nullptr;
}

// Each receipt's deliver_sm_resp goes on the connection it came on, if that
// connection is still the same one and its session still bound: after a
// reconnect the SMSC sends unanswered receipts again, under new sequence
// numbers. Written at once, so that an unbind or the process ending after
// this call cannot leave recorded receipts unanswered.
void SmppSink::receiptsRecorded(std::span<const DeliveryReceipt> receipts) {
  Conn* last = nullptr;
  bool answered = false;
  for (const DeliveryReceipt& r : receipts) {
    const auto serial = static_cast<std::uint32_t>(r.ack >> 32);
    if (serial == 0) continue;
    Conn* c = last != nullptr && last->serial == serial ? last : connOfSerial(serial);
    if (c == nullptr || c->phase != Conn::Phase::kOpen) continue;  // another sink's, or gone
    last = c;
    if (!c->session.answerDeliver(static_cast<std::uint32_t>(r.ack & 0xFFFFFFFF))) continue;
    ++stats_.receipts_answered;
    answered = true;
  }
  if (!answered) return;
  for (auto& c : conns_)
    if (c->phase == Conn::Phase::kOpen) flush(*c);
}

}  // namespace pacer::sink::smpp_detail
