#include "pacer/smpp/session.h"

#include <algorithm>
#include <utility>

namespace pacer::smpp {
namespace {

constexpr std::uint32_t kMaxSeq = 0x7FFFFFFF;

std::uint32_t bindCommand(BindMode mode) {
  switch (mode) {
    case BindMode::kTransmitter: return cmd::kBindTransmitter;
    case BindMode::kReceiver: return cmd::kBindReceiver;
    case BindMode::kTransceiver: break;
  }
  return cmd::kBindTransceiver;
}

bool isBindResp(std::uint32_t id) {
  return id == cmd::kBindTransceiverResp || id == cmd::kBindTransmitterResp || id == cmd::kBindReceiverResp;
}

}  // namespace

const char* bindModeName(BindMode mode) noexcept {
  switch (mode) {
    case BindMode::kTransceiver: return "transceiver";
    case BindMode::kTransmitter: return "transmitter";
    case BindMode::kReceiver: return "receiver";
  }
  return "unknown";
}

const char* sessionStateName(SessionState s) noexcept {
  switch (s) {
    case SessionState::kIdle: return "idle";
    case SessionState::kBinding: return "binding";
    case SessionState::kBound: return "bound";
    case SessionState::kUnbinding: return "unbinding";
    case SessionState::kClosed: return "closed";
  }
  return "unknown";
}

EsmeSession::EsmeSession(SessionOptions options) : options_(std::move(options)) {
  if (options_.window == 0) options_.window = 1;
  pending_.reserve(options_.window + 4);
}

std::uint32_t EsmeSession::nextSeq() {
  seq_ = seq_ >= kMaxSeq ? 1 : seq_ + 1;
  return seq_;
}

void EsmeSession::send(const Pdu& pdu) {
  if (out_pos_ == out_.size()) out_pos_ = 0, out_.clear();
  // Our own PDUs are built within limits; an error here is a bug, and
  // sending nothing is the safe answer (the peer's timeout covers it).
  (void)encode(pdu, out_);
}

void EsmeSession::sendHeaderOnly(std::uint32_t command_id, std::uint32_t seq, std::uint32_t status) {
  if (out_pos_ == out_.size()) out_pos_ = 0, out_.clear();
  // deliver_sm_resp has one body field, an unused message_id: an empty C-Octet string.
  const bool empty_id = command_id == cmd::kDeliverSmResp;
  const std::uint32_t length = empty_id ? 17 : 16;
  for (std::uint32_t v : {length, command_id, status, seq})
    for (int shift = 24; shift >= 0; shift -= 8) out_.push_back(static_cast<char>((v >> shift) & 0xFF));
  if (empty_id) out_.push_back('\0');
}

void EsmeSession::request(std::uint32_t command_id, MonoTime now) {
  const std::uint32_t seq = nextSeq();
  sendHeaderOnly(command_id, seq);
  pending_.push_back({seq, command_id, 0, now + options_.response_timeout});
}

void EsmeSession::consumeOutput(std::size_t n) {
  out_pos_ = std::min(out_.size(), out_pos_ + n);
  if (out_pos_ == out_.size()) out_pos_ = 0, out_.clear();
}

void EsmeSession::start(MonoTime now) {
  if (state_ != SessionState::kIdle) return;
  Pdu bind;
  bind.command_id = bindCommand(options_.mode);
  bind.sequence_number = nextSeq();
  bind.system_id = options_.system_id;
  bind.password = options_.password;
  bind.system_type = options_.system_type;
  bind.interface_version = 0x34;
  bind.addr_ton = options_.addr_ton;
  bind.addr_npi = options_.addr_npi;
  bind.address_range = options_.address_range;
  send(bind);
  pending_.push_back({bind.sequence_number, bind.command_id, 0, now + options_.response_timeout});
  state_ = SessionState::kBinding;
  last_rx_ = now;
}

void EsmeSession::reset() {
  state_ = SessionState::kIdle;
  framer_.reset();
  out_.clear();
  out_pos_ = 0;
  pending_.clear();
  outstanding_submits_ = 0;
  enquire_pending_ = false;
  unanswered_.clear();
}

bool EsmeSession::canSubmit() const { return windowRoom() > 0; }

std::size_t EsmeSession::windowRoom() const {
  if (state_ != SessionState::kBound || options_.mode == BindMode::kReceiver) return 0;
  return options_.window > outstanding_submits_ ? options_.window - outstanding_submits_ : 0;
}

EncodeError EsmeSession::submit(Pdu& pdu, std::uint64_t tag, MonoTime now) {
  pdu.command_id = cmd::kSubmitSm;
  pdu.command_status = 0;
  pdu.sequence_number = nextSeq();
  if (out_pos_ == out_.size()) out_pos_ = 0, out_.clear();
  const EncodeError e = encode(pdu, out_);
  if (e != EncodeError::kNone) return e;
  pending_.push_back({pdu.sequence_number, cmd::kSubmitSm, tag, now + options_.response_timeout});
  ++outstanding_submits_;
  return e;
}

void EsmeSession::unbind(MonoTime now) {
  if (state_ != SessionState::kBound) return;
  request(cmd::kUnbind, now);
  state_ = SessionState::kUnbinding;
}

void EsmeSession::connectionLost(std::string_view reason, MonoTime now) {
  if (state_ == SessionState::kIdle) return;
  out_.clear();
  out_pos_ = 0;
  close("connection lost: " + std::string(reason), 0, now);
}

bool EsmeSession::takePending(std::uint32_t seq, Pending& out) {
  for (std::size_t i = 0; i < pending_.size(); ++i) {
    if (pending_[i].seq != seq) continue;
    out = pending_[i];
    pending_[i] = pending_.back();
    pending_.pop_back();
    if (out.command_id == cmd::kSubmitSm) --outstanding_submits_;
    if (out.command_id == cmd::kEnquireLink) enquire_pending_ = false;
    return true;
  }
  return false;
}

void EsmeSession::submitDone(const Pending& p, SendOutcome outcome, std::uint32_t status, std::string reason) {
  SessionEvent& e = events_.emplace_back();
  e.kind = SessionEvent::Kind::kSubmitDone;
  e.tag = p.tag;
  e.outcome = outcome;
  e.status = status;
  e.reason = std::move(reason);
}

void EsmeSession::close(std::string reason, std::uint32_t status, MonoTime now) {
  (void)now;
  if (state_ == SessionState::kClosed) return;
  // Every outstanding submit comes back: the message retries elsewhere.
  for (const Pending& p : pending_)
    if (p.command_id == cmd::kSubmitSm) submitDone(p, SendOutcome::kFault, 0, reason);
  pending_.clear();
  outstanding_submits_ = 0;
  enquire_pending_ = false;
  // Unanswered receipts stay unanswered: the SMSC sends them again on the
  // next bind, and this session's sequence numbers mean nothing there.
  unanswered_.clear();
  state_ = SessionState::kClosed;
  SessionEvent& e = events_.emplace_back();
  e.kind = SessionEvent::Kind::kClosed;
  e.status = status;
  e.reason = std::move(reason);
}

void EsmeSession::protocolError(std::string reason) {
  SessionEvent& e = events_.emplace_back();
  e.kind = SessionEvent::Kind::kProtocolError;
  e.reason = std::move(reason);
}

void EsmeSession::onBytes(const std::uint8_t* data, std::size_t n, MonoTime now) {
  framer_.append(data, n);
  commitRead(0, now);
}

void EsmeSession::commitRead(std::size_t n, MonoTime now) {
  framer_.commit(n);
  std::string_view frame;
  while (state_ != SessionState::kClosed && state_ != SessionState::kIdle) {
    const Framer::Next next = framer_.next(frame);
    if (next == Framer::Next::kNeedMore) return;
    if (next == Framer::Next::kBadLength) return close("framing error: bad command_length", 0, now);
    handle(frame, now);
  }
}

void EsmeSession::handle(std::string_view frame, MonoTime now) {
  last_rx_ = now;
  const DecodeError err = decode(frame, rx_);
  if (err != DecodeError::kNone) return handleDecodeError(err, now);
  if (isResponse(rx_.command_id)) return handleResponse(now);
  handleRequest(now);
}

void EsmeSession::handleDecodeError(DecodeError err, MonoTime now) {
  const std::string what = commandName(rx_.command_id) + ": " + decodeErrorName(err);
  if (rx_.command_id == cmd::kDeliverSm) {
    // Answered all the same, with a permanent application error so that the
    // SMSC does not send the same broken PDU again and again.
    sendHeaderOnly(cmd::kDeliverSmResp, rx_.sequence_number, status::kRxPAppn);
    return protocolError("malformed " + what);
  }
  if (!isResponse(rx_.command_id)) {
    sendHeaderOnly(cmd::kGenericNack, rx_.sequence_number,
                   err == DecodeError::kUnknownCommand ? status::kInvCmdId : status::kInvCmdLen);
    return protocolError("refused " + what);
  }
  // A response we cannot read: settle what it answers, as a fault.
  Pending p{};
  if (!takePending(rx_.sequence_number, p)) return protocolError("unmatched malformed " + what);
  if (p.command_id == cmd::kSubmitSm)
    return submitDone(p, SendOutcome::kFault, rx_.command_status, "malformed " + what);
  if (isBindResp(rx_.command_id) || p.command_id == cmd::kUnbind) return close("malformed " + what, 0, now);
}

void EsmeSession::handleResponse(MonoTime now) {
  Pending p{};
  if (!takePending(rx_.sequence_number, p)) {
    // Late (after its timeout) or never asked for: nothing waits for it.
    return protocolError("unmatched " + commandName(rx_.command_id) + " seq " + std::to_string(rx_.sequence_number));
  }
  const std::uint32_t st = rx_.command_status;
  if (rx_.command_id == cmd::kGenericNack) {
    const std::string reason = "generic_nack " + commandStatusName(st) + " for " + commandName(p.command_id);
    if (p.command_id == cmd::kSubmitSm) return submitDone(p, SendOutcome::kFault, st, reason);
    if (p.command_id == cmd::kEnquireLink) return;  // the link answered: it is alive
    return close(reason, st, now);
  }
  if (p.command_id == cmd::kSubmitSm && rx_.command_id == cmd::kSubmitSmResp) {
    const SendOutcome o = classifyCommandStatus(st);
    SessionEvent& e = events_.emplace_back();
    e.kind = SessionEvent::Kind::kSubmitDone;
    e.tag = p.tag;
    e.outcome = o;
    e.status = st;
    e.latency = now - (p.deadline - options_.response_timeout);  // the deadline was set at sending
    if (o == SendOutcome::kDelivered) {
      e.message_id = rx_.message_id;
    } else {
      e.reason = "submit_sm_resp " + commandStatusName(st);
    }
    return;
  }
  if (isBindResp(rx_.command_id) && p.command_id == (rx_.command_id & ~cmd::kRespBit)) {
    if (st != status::kOk) return close("bind refused: " + commandStatusName(st), st, now);
    state_ = SessionState::kBound;
    events_.emplace_back().kind = SessionEvent::Kind::kBound;
    return;
  }
  if (rx_.command_id == cmd::kUnbindResp && p.command_id == cmd::kUnbind) return close("unbound", 0, now);
  if (rx_.command_id == cmd::kEnquireLinkResp && p.command_id == cmd::kEnquireLink) return;
  // An answer of the wrong kind for its sequence number.
  if (p.command_id == cmd::kSubmitSm) {
    return submitDone(p, SendOutcome::kFault, st, "unexpected " + commandName(rx_.command_id) + " for submit_sm");
  }
  protocolError("unexpected " + commandName(rx_.command_id) + " for " + commandName(p.command_id));
}

void EsmeSession::handleRequest(MonoTime now) {
  switch (rx_.command_id) {
    case cmd::kDeliverSm: return handleDeliverSm();
    case cmd::kEnquireLink: return sendHeaderOnly(cmd::kEnquireLinkResp, rx_.sequence_number);
    case cmd::kUnbind: sendHeaderOnly(cmd::kUnbindResp, rx_.sequence_number); return close("unbind from SMSC", 0, now);
    default:
      sendHeaderOnly(cmd::kGenericNack, rx_.sequence_number, status::kInvCmdId);
      return protocolError("refused " + commandName(rx_.command_id) + " from SMSC");
  }
}

// A receipt is answered only by answerDeliver(), once the owner has it in
// the ledger: an SMSC forgets what it has an answer for, so answering first
// would lose the receipt if the process died before writing it. Anything
// else is answered at once: a mobile-originated message is not kept, and a
// receipt without an id can never be matched, so it would come back for ever.
void EsmeSession::handleDeliverSm() {
  if (!isReceipt(rx_)) {
    sendHeaderOnly(cmd::kDeliverSmResp, rx_.sequence_number);
    events_.emplace_back().kind = SessionEvent::Kind::kMessage;
    return;
  }
  std::optional<ParsedReceipt> r = parseReceipt(rx_);
  if (!r) {
    sendHeaderOnly(cmd::kDeliverSmResp, rx_.sequence_number);
    return protocolError("delivery receipt without a message id: " + rx_.short_message.substr(0, 200));
  }
  unanswered_.push_back(rx_.sequence_number);
  SessionEvent& e = events_.emplace_back();
  e.kind = SessionEvent::Kind::kReceipt;
  e.receipt = std::move(*r);
  e.sequence = rx_.sequence_number;
}

bool EsmeSession::answerDeliver(std::uint32_t sequence) {
  if (state_ != SessionState::kBound && state_ != SessionState::kUnbinding) return false;
  // Mostly answered in arrival order: the match is near the front.
  const auto it = std::find(unanswered_.begin(), unanswered_.end(), sequence);
  if (it == unanswered_.end()) return false;
  unanswered_.erase(it);
  sendHeaderOnly(cmd::kDeliverSmResp, sequence);
  return true;
}

void EsmeSession::tick(MonoTime now) {
  if (state_ == SessionState::kIdle || state_ == SessionState::kClosed) return;
  // Expired requests; a submit's expiry fails only that submit, anything
  // else means the link is not answering and ends the session.
  bool submit_expired = false;
  for (std::size_t i = 0; i < pending_.size();) {
    if (pending_[i].deadline > now) {
      ++i;
      continue;
    }
    const Pending p = pending_[i];
    if (p.command_id != cmd::kSubmitSm) return close(commandName(p.command_id) + " response timeout", 0, now);
    pending_[i] = pending_.back();
    pending_.pop_back();
    --outstanding_submits_;
    submit_expired = true;
    submitDone(p, SendOutcome::kFault, 0, "response timeout");
  }
  // An unanswered submit may mean a dead link: probe it at once rather than
  // after a quiet interval; if the probe goes unanswered too, the session
  // closes and the owner reconnects.
  const bool quiet = now - last_rx_ >= options_.enquire_link_interval;
  if (state_ == SessionState::kBound && !enquire_pending_ && (quiet || submit_expired)) {
    request(cmd::kEnquireLink, now);
    enquire_pending_ = true;
  }
}

MonoTime EsmeSession::nextDeadline() const {
  MonoTime t = MonoTime::max();
  if (state_ == SessionState::kIdle || state_ == SessionState::kClosed) return t;
  for (const Pending& p : pending_) t = std::min(t, p.deadline);
  if (state_ == SessionState::kBound && !enquire_pending_) t = std::min(t, last_rx_ + options_.enquire_link_interval);
  return t;
}

Nanos reconnectDelay(unsigned attempt, Nanos base, Nanos max, double unit_random) noexcept {
  if (base <= Nanos{0}) return Nanos{0};
  Nanos d = base;
  for (unsigned i = 0; i < attempt && d < max; ++i) d *= 2;
  d = std::min(d, max);
  const double r = unit_random < 0 ? 0 : unit_random >= 1 ? 1 : unit_random;
  return Nanos{static_cast<Nanos::rep>(static_cast<double>(d.count()) * (0.5 + 0.5 * r))};
}

}  // namespace pacer::smpp
