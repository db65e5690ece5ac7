// The SMPP 3.4 provider sink: Pacer messages as submit_sm over one or more
// binds to an SMSC, their delivery receipts out of pollReceipts(), each
// answered (deliver_sm_resp) only when the owner calls receiptsRecorded().
// See docs/smpp.md for every option and the payload contract.
//
// Not thread-safe: one owner thread calls everything (like the HTTP sink,
// it does its socket work inside poll() and wait(); no threads of its own).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <string_view>

#include "pacer/sink.h"
#include "pacer/smpp/message_id.h"
#include "pacer/smpp/submit.h"
#include "pacer/time.h"

namespace pacer::sink {

enum class SmppBindMode {
  kTransceiver,          // each bind submits and receives receipts
  kTransmitterReceiver,  // each bind is a transmitter plus a receiver (two connections)
};

struct SmppSinkOptions {
  std::string host = "127.0.0.1";
  int port = 2775;
  std::string system_id;
  std::string password;  // from the environment (the daemon's job); never logged or put in a reason
  std::string system_type;
  SmppBindMode bind_mode = SmppBindMode::kTransceiver;
  std::size_t binds = 1;    // binds per worker (in kTransmitterReceiver: transmitter/receiver pairs)
  std::size_t window = 10;  // outstanding submit_sm per bind
  Nanos enquire_link_interval = std::chrono::seconds(30);
  Nanos response_timeout = std::chrono::seconds(10);  // every request; also the most a message waits for a bind
  Nanos connect_timeout = std::chrono::seconds(5);
  Nanos reconnect_backoff_min = std::chrono::milliseconds(500);  // doubles per failed attempt, jittered
  Nanos reconnect_backoff_max = std::chrono::seconds(30);
  // retry_after on ESME_RTHROTTLED / ESME_RMSGQFUL: the provider-wide pause.
  // SMPP gives no Retry-After; the worker also lowers the provider's rate on
  // each throttle, so a short pause suffices against a one-second window.
  Nanos throttle_retry_after = std::chrono::milliseconds(250);
  // Source address, TON/NPI, destination TON/NPI, UDH or SAR, which
  // segments ask for a receipt (registered_delivery).
  smpp::SubmitOptions submit;
  // How the SMSC writes message ids in submit_sm_resp and in receipts:
  // receipts' ids are rewritten into submit_sm_resp's form (the ledger's).
  smpp::IdConvention receipt_ids = smpp::IdConvention::kAsIs;
  std::size_t max_in_flight = 0;      // messages; 0: binds * window
  std::string provider;               // copied into DeliveryReceipt::provider
  const TimeSource* clock = nullptr;  // nullptr: the steady clock
  std::uint64_t seed = 0;             // reconnect jitter; 0: from std::random_device
  // Called with one line per notable event (bind up/down, refusals,
  // protocol errors); never with the password. Empty: silent.
  std::function<void(std::string_view)> log;
};

struct SmppSinkStats {
  std::size_t binds_up = 0;         // sessions bound now
  std::uint64_t connects = 0;       // TCP connections made
  std::uint64_t bind_failures = 0;  // binds refused or unanswered
  std::uint64_t disconnects = 0;    // sessions that ended (any reason)
  std::uint64_t submit_sm = 0;      // PDUs sent
  std::uint64_t receipts = 0;       // delivery receipts received
  std::uint64_t receipts_answered = 0;  // deliver_sm_resp sent for receipts the owner reported recorded
  std::size_t receipts_unanswered = 0;  // receipts received on the binds up now, awaiting receiptsRecorded()
  std::uint64_t partial_throttles = 0;  // messages partly accepted, the rest throttled: retried without the accepted segments
  std::uint64_t partial_faults = 0;     // the same after a fault (error status, timeout, lost bind, generic_nack)
  std::uint64_t protocol_errors = 0;
  std::size_t window_in_use = 0;  // submit_sm sent and not yet answered, all binds
  std::size_t window_size = 0;    // room for them: transmitting binds up now x window
  double submit_latency_ms = 0;   // moving average from submit_sm to its answer; 0: none answered yet
};

// The most submit_sm per second `binds` binds with `window` each can carry
// when an answer takes `latency_ms` (window x binds / latency); +infinity
// for a latency of 0 (nothing measured). Pure.
inline double smppWindowCapacity(std::size_t window, std::size_t binds, double latency_ms) noexcept {
  if (latency_ms <= 0) return std::numeric_limits<double>::infinity();
  return static_cast<double>(window * binds) * 1000.0 / latency_ms;
}

class SmppSinkInterface : public SinkInterface {
 public:
  // Counters for /metrics. Same thread as the rest.
  virtual SmppSinkStats stats() const = 0;
};

// Resolves `host` now (start-up); throws InvalidError (pacer/error.h) for unusable
// options (no system_id, window 0, an unresolvable host, ...), with a message
// that never contains the password.
std::unique_ptr<SmppSinkInterface> makeSmppSink(SmppSinkOptions options);

}  // namespace pacer::sink
