// The SMPP sink: sockets and bookkeeping around the pure pieces of
// pacer::smpp. Protocol decisions (window, timeouts, answers, receipts,
// segment outcomes) are made by EsmeSession and SegmentTally; this file
// keeps messages in slots, sends what the windows allow and hands out results;
// smpp_sink_conn.cc moves bytes and reconnects.
#include "pacer/sinks/smpp_sink.h"

#include <poll.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "pacer/error.h"
#include "smpp_sink_impl.h"

namespace pacer::sink {
namespace smpp_detail {

// A finished message: its result. When a retry may still deliver it, what
// the SMSC holds of it and its reference are remembered for that retry.
void SmppSink::settle(std::size_t slot, MonoTime now) {
  Slot& s = slots_[slot];
  if (s.tally.resumable()) {
    remember(s);
  } else if (!partials_.empty()) {
    partials_.erase(s.id);
  }
  SendResult r = s.tally.result(s.ticket);
  r.latency = now - s.accepted_at;
  if (r.outcome == SendOutcome::kThrottled) r.retry_after = options_.throttle_retry_after;
  finish(slot, std::move(r));
}

void SmppSink::remember(const Slot& s) {
  if (s.tally.acceptedCount() > 0) {
    if (s.tally.outcome() == SendOutcome::kThrottled)
      ++stats_.partial_throttles;
    else
      ++stats_.partial_faults;
  }
  auto it = partials_.find(s.id);
  if (it == partials_.end()) {
    while (partials_.size() >= kMaxPartials && !partial_order_.empty()) {
      const auto old = partials_.find(partial_order_.front().first);
      if (old != partials_.end() && old->second.order == partial_order_.front().second) {
        if (partials_forgotten_++ % 1000 == 0)
          note("smpp: " + std::to_string(kMaxPartials) + " partly sent messages remembered; forgot " + old->first +
               " (" + std::to_string(partials_forgotten_) +
               " so far): a retry of it goes whole, under a new reference");
        partials_.erase(old);
      }
      partial_order_.pop_front();
    }
    it = partials_.emplace(s.id, Partial{}).first;
  }
  it->second.reference = s.reference;
  it->second.accepted_ids = s.tally.acceptedIds();
  it->second.order = ++partial_serial_;
  partial_order_.emplace_back(s.id, it->second.order);
  // Entries updated in place leave stale order entries behind: drop them
  // once they outnumber the live ones, so the queue stays bounded.
  if (partial_order_.size() > 2 * kMaxPartials) compactPartialOrder();
}

void SmppSink::compactPartialOrder() {
  std::deque<std::pair<std::string, std::uint64_t>> live;
  for (auto& e : partial_order_) {
    const auto it = partials_.find(e.first);
    if (it != partials_.end() && it->second.order == e.second) live.push_back(std::move(e));
  }
  partial_order_.swap(live);
}

void SmppSink::finish(std::size_t slot, SendResult r) {
  Slot& s = slots_[slot];
  s.used = false;
  done_.push_back(std::move(r));
  free_.push_back(slot);
}

// Sends what the windows allow and settles what is finished: first the
// messages whose last segment was just answered (their next segment goes
// before new messages take the window, so a started message finishes soon),
// then the waiting ones, oldest first.
void SmppSink::dispatch(MonoTime now) {
  for (std::vector<std::size_t>* list : {&answered_, &waiting_}) {
    std::size_t keep = 0;
    for (std::size_t i = 0; i < list->size(); ++i) {
      if (progress((*list)[i], now)) (*list)[keep++] = (*list)[i];
    }
    list->resize(keep);
  }
}

// Picks the bind with the most window room for a message's first segment,
// starting the search at a rotating point. False: none has room now.
bool SmppSink::pickBind(Slot& s) {
  std::size_t best_room = 0;
  for (std::size_t k = 0; k < conns_.size(); ++k) {
    const std::size_t c = (rr_ + k) % conns_.size();
    const std::size_t room = conns_[c]->transmits ? conns_[c]->session.windowRoom() : 0;
    if (room > best_room) best_room = room, s.conn = static_cast<int>(c);
  }
  if (s.conn < 0) return false;
  rr_ = (rr_ + 1) % conns_.size();
  return true;
}

// Sends the message's next segment if it may go: one segment at a time,
// each only after the one before it was accepted, all over the bind the
// first took. Returns whether the slot still waits in its list (for a bind
// or window room); a slot whose segment went comes back through
// segmentDone(), into answered_.
bool SmppSink::progress(std::size_t slot, MonoTime now) {
  Slot& s = slots_[slot];
  if (!s.used) return false;
  if (s.conn < 0 && !pickBind(s)) return true;
  EsmeSession& session = conns_[static_cast<std::size_t>(s.conn)]->session;
  const std::size_t k = s.tally.next();
  if (k != smpp::SegmentTally::kNone) {
    if (session.canSubmit()) {
      const smpp::EncodeError e = session.submit(s.pdus[k], tagOf(s.generation, slot, k), now);
      if (e == smpp::EncodeError::kNone) {
        ++stats_.submit_sm;
        s.tally.sent(k);
        return false;
      }
      s.tally.done(k, SendOutcome::kPermanent, 0, "", std::string("cannot encode: ") + smpp::encodeErrorName(e));
    } else if (session.state() != SessionState::kBound) {
      // Its bind went away between segments: the rest cannot follow on it.
      // A fault: the retry sends the rest, under the same reference.
      s.tally.done(k, SendOutcome::kFault, 0, "", "bind lost between segments: " + last_error_);
    } else {
      return true;  // the window is full
    }
  }
  if (s.tally.finished()) settle(slot, now);
  return false;
}

// A message that found no bound transmitter fails as a fault (the worker
// retries it with backoff) instead of waiting forever: after
// response_timeout, or at once when the last transmitting bind went away
// while it waited. Then the worker marks the provider down (no bound
// session), and the retry goes to a failover provider or waits in the
// worker, not here for a bind that may be 30 s away.
void SmppSink::expireWaiting(MonoTime now) {
  bool last_bind_lost = false;
  if (transmitter_lost_) {
    transmitter_lost_ = false;
    last_bind_lost = std::none_of(conns_.begin(), conns_.end(), [](const std::unique_ptr<Conn>& c) {
      return c->transmits && c->session.state() == SessionState::kBound;
    });
  }
  std::size_t keep = 0;
  for (std::size_t i = 0; i < waiting_.size(); ++i) {
    Slot& s = slots_[waiting_[i]];
    if (s.conn < 0 && (last_bind_lost || now - s.accepted_at >= options_.response_timeout)) {
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

}  // namespace smpp_detail

namespace {

// What the submit builder would refuse for every message, refused at start.
void checkCarrierSettings(const smpp::SubmitOptions& s) {
  if (s.service_type.size() + 1 > smpp::limit::kServiceType)
    throw InvalidError("smpp: service_type must be at most 5 characters");
  if (const char* why = smpp::validityPeriodError(s.validity_period))
    throw InvalidError(std::string("smpp: validity_period must be SMPP's relative time YYMMDDhhmmss000R: ") +
                                why);
  if (s.priority_flag > 3) throw InvalidError("smpp: priority_flag must be 0-3");
  const smpp::AddressType implied = smpp::sourceAddressType(s.source_addr);
  const std::uint8_t ton = s.source_addr_ton.value_or(implied.ton);
  if (ton > smpp::ton::kMax || s.dest_addr_ton > smpp::ton::kMax)
    throw InvalidError("smpp: a TON must be 0-6");
  if (!smpp::isDefinedNpi(s.source_addr_npi.value_or(implied.npi)) || !smpp::isDefinedNpi(s.dest_addr_npi))
    throw InvalidError("smpp: an NPI must be one of 0, 1, 3, 4, 6, 8, 9, 10, 14, 18");
  // GSM 03.40 carries an alphanumeric sender in 11 characters at most.
  if (ton == smpp::ton::kAlphanumeric && s.source_addr.size() > 11)
    throw InvalidError("smpp: an alphanumeric source_addr (TON 5) has at most 11 characters");
}

}  // namespace

std::unique_ptr<SmppSinkInterface> makeSmppSink(SmppSinkOptions o) {
  if (o.system_id.empty() || o.system_id.size() + 1 > smpp::limit::kSystemId)
    throw InvalidError("smpp: system_id must be 1 to 15 characters");
  if (o.password.size() + 1 > smpp::limit::kPassword)
    throw InvalidError("smpp: password must be at most 8 characters");
  if (o.system_type.size() + 1 > smpp::limit::kSystemType)
    throw InvalidError("smpp: system_type must be at most 12 characters");
  if (o.port <= 0 || o.port > 65535) throw InvalidError("smpp: port must be 1-65535");
  if (o.binds == 0 || o.binds > 64) throw InvalidError("smpp: binds must be 1-64");
  if (o.window == 0 || o.window > 10000) throw InvalidError("smpp: window must be 1-10000");
  if (o.response_timeout <= Nanos{0} || o.enquire_link_interval <= Nanos{0} || o.connect_timeout <= Nanos{0})
    throw InvalidError("smpp: timeouts and the enquire_link interval must be positive");
  if (o.reconnect_backoff_min <= Nanos{0} || o.reconnect_backoff_max < o.reconnect_backoff_min)
    throw InvalidError("smpp: reconnect backoff must be positive, min <= max");
  const std::size_t in_flight = o.max_in_flight != 0 ? o.max_in_flight : o.binds * o.window;
  if (in_flight > 0xFFFFFF) throw InvalidError("smpp: max_in_flight too large");
  if (o.submit.source_addr.size() + 1 > smpp::limit::kAddress)
    throw InvalidError("smpp: source address must be at most 20 characters");
  checkCarrierSettings(o.submit);
  return std::make_unique<smpp_detail::SmppSink>(std::move(o));
}

}  // namespace pacer::sink
