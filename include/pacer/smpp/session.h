// One ESME session over one TCP connection, as a pure state machine: the
// owner feeds it the bytes it reads and the time, and writes the bytes it
// produces. It binds, keeps the window (outstanding submit_sm), numbers
// PDUs, sends enquire_link when the link is quiet, times out unanswered
// requests, answers enquire_link, unbind and deliver_sm from the SMSC (a
// delivery receipt only when the owner says it is recorded: answerDeliver),
// and reports what happened as events. No sockets, no clock, no threads.
// Not thread-safe: one owner.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "pacer/sink.h"
#include "pacer/smpp/framer.h"
#include "pacer/smpp/pdu.h"
#include "pacer/smpp/receipt.h"
#include "pacer/time.h"

namespace pacer::smpp {

enum class BindMode { kTransceiver, kTransmitter, kReceiver };
const char* bindModeName(BindMode mode) noexcept;  // "transceiver", "transmitter", "receiver"

struct SessionOptions {
  BindMode mode = BindMode::kTransceiver;
  std::string system_id;
  std::string password;  // never logged, never put in an event
  std::string system_type;
  std::uint8_t addr_ton = 0;  // bind's address range, rarely used
  std::uint8_t addr_npi = 0;
  std::string address_range;
  std::size_t window = 10;                                 // outstanding submit_sm at most
  Nanos enquire_link_interval = std::chrono::seconds(30);  // sent after this long without a PDU from the SMSC
  Nanos response_timeout = std::chrono::seconds(10);       // for every request this session sends
};

enum class SessionState {
  kIdle,       // not started
  kBinding,    // bind sent, waiting for its answer
  kBound,      // may submit (transmitter/transceiver) and receives deliver_sm
  kUnbinding,  // unbind sent
  kClosed,     // over: write what is left of output(), then close the socket
};
const char* sessionStateName(SessionState s) noexcept;

struct SessionEvent {
  enum class Kind {
    kBound,          // the bind was accepted
    kSubmitDone,     // one submit_sm finished: tag, outcome, status, message_id, reason
    kReceipt,        // a deliver_sm delivery receipt, not yet answered: receipt, sequence (for answerDeliver)
    kMessage,        // a deliver_sm that is not a receipt (answered, otherwise ignored)
    kProtocolError,  // something the SMSC sent that was not understood (reason); not fatal
    kClosed,         // the session is over (reason; status: a refused bind's command_status)
  };
  Kind kind = Kind::kBound;
  std::uint64_t tag = 0;
  SendOutcome outcome = SendOutcome::kDelivered;
  std::uint32_t status = 0;
  std::string message_id;
  std::string reason;
  ParsedReceipt receipt;
  std::uint32_t sequence = 0;  // kReceipt: the deliver_sm's sequence_number
  Nanos latency{0};            // kSubmitDone on a submit_sm_resp: from sending the submit_sm to its answer
};

class EsmeSession {
 public:
  explicit EsmeSession(SessionOptions options);

  // The connection is up: writes the bind PDU. Only from kIdle (or again
  // after reset()).
  void start(MonoTime now);
  // Back to kIdle for a new connection: buffers, window and timers cleared
  // (call connectionLost() first so nothing outstanding is forgotten).
  void reset();

  // Feeds bytes read from the socket; handles every whole PDU in them.
  void onBytes(const std::uint8_t* data, std::size_t n, MonoTime now);
  // The same without a copy: recv() into prepareRead(n), then commitRead().
  std::uint8_t* prepareRead(std::size_t n) { return framer_.prepare(n); }
  void commitRead(std::size_t n, MonoTime now);

  // Fires what is due at `now`: enquire_link, response timeouts.
  void tick(MonoTime now);
  // The earliest instant tick() has something to do (MonoTime::max(): none).
  MonoTime nextDeadline() const;

  // Whether a submit_sm may be sent now: bound, transmitting, window not full.
  bool canSubmit() const;
  std::size_t windowRoom() const;
  // Sends `pdu` as a submit_sm (command_id and sequence_number are set here).
  // `tag` comes back in its kSubmitDone event. Precondition: canSubmit().
  // An encode error sends nothing and records nothing.
  EncodeError submit(Pdu& pdu, std::uint64_t tag, MonoTime now);

  // Answers the receipt deliver_sm `sequence` (a kReceipt event's) with
  // deliver_sm_resp ESME_ROK, once the owner has it recorded. Until then the
  // SMSC keeps the receipt and sends it again on a later bind if this one
  // ends. False, writing nothing, when this session has no such unanswered
  // receipt (already answered, or the session closed or was reset since: a
  // new session's sequence numbers are not the old one's).
  bool answerDeliver(std::uint32_t sequence);
  // Receipts received and not yet answered (the SMSC counts them against its
  // window of deliver_sm).
  std::size_t unansweredReceipts() const { return unanswered_.size(); }

  // Asks the SMSC to end the session (unbind); outstanding submits may
  // still be answered until unbind_resp or the response timeout.
  void unbind(MonoTime now);
  // The connection is gone: every outstanding submit_sm becomes a kFault
  // kSubmitDone ("connection lost: <reason>"), then kClosed.
  void connectionLost(std::string_view reason, MonoTime now);

  // Bytes to write, oldest first; consumeOutput() what the socket took.
  std::string_view output() const { return std::string_view(out_).substr(out_pos_); }
  void consumeOutput(std::size_t n);

  // Events since the last takeEvents(); the caller clears the vector.
  std::vector<SessionEvent>& events() { return events_; }

  SessionState state() const { return state_; }
  std::size_t outstandingSubmits() const { return outstanding_submits_; }
  const SessionOptions& options() const { return options_; }

 private:
  struct Pending {
    std::uint32_t seq;
    std::uint32_t command_id;
    std::uint64_t tag;
    MonoTime deadline;
  };

  std::uint32_t nextSeq();
  void send(const Pdu& pdu);
  void sendHeaderOnly(std::uint32_t command_id, std::uint32_t seq, std::uint32_t status = 0);
  void request(std::uint32_t command_id, MonoTime now);  // a header-only request awaited with a deadline
  void handle(std::string_view frame, MonoTime now);
  void handleDecodeError(DecodeError e, MonoTime now);
  void handleResponse(MonoTime now);
  void handleRequest(MonoTime now);
  void handleDeliverSm();
  bool takePending(std::uint32_t seq, Pending& out);
  void submitDone(const Pending& p, SendOutcome outcome, std::uint32_t status, std::string reason);
  void close(std::string reason, std::uint32_t status, MonoTime now);
  void protocolError(std::string reason);

  SessionOptions options_;
  SessionState state_ = SessionState::kIdle;
  Framer framer_;
  Pdu rx_;  // the PDU being handled; reused
  std::string out_;
  std::size_t out_pos_ = 0;
  std::vector<Pending> pending_;
  std::size_t outstanding_submits_ = 0;
  bool enquire_pending_ = false;
  std::uint32_t seq_ = 0;
  std::vector<std::uint32_t> unanswered_;  // receipt deliver_sm sequence numbers, in arrival order
  MonoTime last_rx_{};
  std::vector<SessionEvent> events_;
};

// The wait before reconnect attempt `attempt` (0 for the first retry):
// base * 2^attempt capped at `max`, then scaled into [1/2, 1] of that by
// `unit_random` in [0, 1) ("equal jitter"), so workers that lost the same
// SMSC do not all come back in the same millisecond.
Nanos reconnectDelay(unsigned attempt, Nanos base, Nanos max, double unit_random) noexcept;

}  // namespace pacer::smpp
