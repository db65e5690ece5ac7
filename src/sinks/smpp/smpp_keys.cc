// The SMPP sink's keys, sink.smpp.* (docs/smpp.md): the SMSC and its binds,
// then the carrier settings, what goes into every submit_sm (TON/NPI,
// service_type, validity_period, priority_flag) and how the SMSC writes
// message ids (docs/smpp.md "Carrier settings").
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>

#include "pacer/sinks/sink_registry.h"
#include "pacer/smpp/message_id.h"
#include "pacer/smpp/submit.h"

namespace pacer::sink {
namespace {

std::string trim(std::string s) {
  const auto notSpace = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), notSpace));
  s.erase(std::find_if(s.rbegin(), s.rend(), notSpace).base(), s.end());
  return s;
}

// A TON or NPI: a small number among `ok`; `expected` says which.
std::uint8_t asCode(const KeyValue& value, bool (*ok)(std::uint8_t), const char* expected) {
  const std::string v = trim(value.asString());
  const bool digits = !v.empty() && v.size() <= 2 && v.find_first_not_of("0123456789") == std::string::npos;
  if (!digits || !ok(static_cast<std::uint8_t>(std::stoi(v)))) value.fail(expected);
  return static_cast<std::uint8_t>(std::stoi(v));
}

bool isTon(std::uint8_t v) { return v <= smpp::ton::kMax; }

// nullopt for "auto": implied by the sender.
std::optional<std::uint8_t> autoOr(const KeyValue& value, bool (*ok)(std::uint8_t), const char* expected) {
  if (trim(value.asString()) == "auto") return std::nullopt;
  return asCode(value, ok, expected);
}

// sink.smpp: an SMSC over SMPP 3.4
std::vector<SinkKey> smppKeys() {
  return {
      {"sink.smpp.host", KeyShape::kScalar, "--smpp-host", KeyFlag::kValue, false,
       "sink smpp: the SMSC's host (default 127.0.0.1)",
       [](const KeyValue& v, SinkSettings& s) { s.smpp.host = v.asNonEmpty(); }},
      {"sink.smpp.port", KeyShape::kScalar, "--smpp-port", KeyFlag::kValue, false,
       "sink smpp: the SMSC's port (default 2775)",
       [](const KeyValue& v, SinkSettings& s) { s.smpp.port = static_cast<int>(v.asInt(1, 65535)); }},
      {"sink.smpp.system_id", KeyShape::kScalar, "--smpp-system-id", KeyFlag::kValue, false,
       "sink smpp: the account (system_id) to bind as",
       [](const KeyValue& v, SinkSettings& s) { s.smpp.system_id = v.asString(); }},
      {"sink.smpp.password_env", KeyShape::kScalar, "--smpp-password-env", KeyFlag::kValue, false,
       "sink smpp: the environment variable holding the bind password (default PACER_SMPP_PASSWORD)",
       [](const KeyValue& v, SinkSettings& s) { s.smpp_password_env = v.asNonEmpty(); }},
      {"sink.smpp.system_type", KeyShape::kScalar, "--smpp-system-type", KeyFlag::kValue, false,
       "sink smpp: system_type in the bind (default empty)",
       [](const KeyValue& v, SinkSettings& s) { s.smpp.system_type = v.asString(); }},
      {"sink.smpp.bind_mode", KeyShape::kScalar, "--smpp-bind-mode", KeyFlag::kValue, false,
       "sink smpp: transceiver, or transmitter-receiver (two connections per bind) (default transceiver)",
       [](const KeyValue& v, SinkSettings& s) {
         s.smpp.bind_mode = v.asChoice({"transceiver", "transmitter-receiver"}) == "transceiver"
                                ? SmppBindMode::kTransceiver
                                : SmppBindMode::kTransmitterReceiver;
       }},
      {"sink.smpp.binds", KeyShape::kScalar, "--smpp-binds", KeyFlag::kValue, false,
       "sink smpp: binds per worker (default 1)",
       [](const KeyValue& v, SinkSettings& s) { s.smpp.binds = static_cast<std::size_t>(v.asInt(1, 64)); }},
      {"sink.smpp.window", KeyShape::kScalar, "--smpp-window", KeyFlag::kValue, false,
       "sink smpp: outstanding submit_sm per bind (default 10)",
       [](const KeyValue& v, SinkSettings& s) { s.smpp.window = static_cast<std::size_t>(v.asInt(1, 10000)); }},
      {"sink.smpp.enquire_link_ms", KeyShape::kScalar, "--smpp-enquire-link-ms", KeyFlag::kValue, false,
       "sink smpp: enquire_link on an idle bind this often (default 30000)",
       [](const KeyValue& v, SinkSettings& s) {
         s.smpp.enquire_link_interval = std::chrono::milliseconds(v.asInt(100));
       }},
      {"sink.smpp.response_timeout_ms", KeyShape::kScalar, "--smpp-response-timeout-ms", KeyFlag::kValue, false,
       "sink smpp: an unanswered request is retried on another connection after this (default 10000)",
       [](const KeyValue& v, SinkSettings& s) { s.smpp.response_timeout = std::chrono::milliseconds(v.asInt(10)); }},
      {"sink.smpp.reconnect_backoff_ms", KeyShape::kScalar, "--smpp-reconnect-backoff-ms", KeyFlag::kValue, false,
       "sink smpp: the first reconnect wait, doubling up to 60 times it, at most 30 s (default 500)",
       [](const KeyValue& v, SinkSettings& s) {
         s.smpp.reconnect_backoff_min = std::chrono::milliseconds(v.asInt(1, 30000));
         s.smpp.reconnect_backoff_max = std::max<Nanos>(std::chrono::milliseconds(30000), s.smpp.reconnect_backoff_min);
       }},
      {"sink.smpp.throttle_pause_ms", KeyShape::kScalar, "--smpp-throttle-pause-ms", KeyFlag::kValue, false,
       "sink smpp: ESME_RTHROTTLED/ESME_RMSGQFUL pause the provider this long, then the message is retried "
       "(default 250)",
       [](const KeyValue& v, SinkSettings& s) {
         s.smpp.throttle_retry_after = std::chrono::milliseconds(v.asInt(1, 60000));
       }},
      {"sink.smpp.source_addr", KeyShape::kScalar, "--smpp-source-addr", KeyFlag::kValue, false,
       "sink smpp: the sender address (default empty: the SMSC's)",
       [](const KeyValue& v, SinkSettings& s) {
         s.smpp.submit.source_addr = v.asString();
         if (s.smpp.submit.source_addr.size() > 20) v.fail("at most 20 characters");
       }},
      {"sink.smpp.concatenation", KeyShape::kScalar, "--smpp-concatenation", KeyFlag::kValue, false,
       "sink smpp: how long texts are joined: udh or sar (default udh)",
       [](const KeyValue& v, SinkSettings& s) {
         s.smpp.submit.concatenation =
             v.asChoice({"udh", "sar"}) == "udh" ? smpp::Concatenation::kUdh : smpp::Concatenation::kSar;
       }},
      {"sink.smpp.receipts", KeyShape::kScalar, "--smpp-receipts", KeyFlag::kValue, false,
       "sink smpp: which segments ask for a delivery receipt: first, all, none (default first)",
       [](const KeyValue& v, SinkSettings& s) {
         const std::string text = v.asChoice({"first", "all", "none"});
         s.smpp.submit.receipts = text == "first" ? smpp::ReceiptRequest::kFirst
                                  : text == "all" ? smpp::ReceiptRequest::kAll
                                                  : smpp::ReceiptRequest::kNone;
       }},
  };
}

std::vector<SinkKey> smppCarrierKeys() {
  return {
      {"sink.smpp.source_addr_ton", KeyShape::kScalar, "--smpp-source-addr-ton", KeyFlag::kValue, false,
       "sink smpp: the sender's TON, 0-6, or auto: 5 for a name, 1 for +digits or 9+ digits, 2 for a leading 0, "
       "3 for a short code (default auto)",
       [](const KeyValue& v, SinkSettings& s) {
         s.smpp.submit.source_addr_ton = autoOr(v, isTon, "auto or an integer from 0 to 6");
       }},
      {"sink.smpp.source_addr_npi", KeyShape::kScalar, "--smpp-source-addr-npi", KeyFlag::kValue, false,
       "sink smpp: the sender's NPI, or auto: 0 for a name or short code, else 1 (E.164) (default auto)",
       [](const KeyValue& v, SinkSettings& s) {
         s.smpp.submit.source_addr_npi = autoOr(v, smpp::isDefinedNpi, "auto, 0, 1, 3, 4, 6, 8, 9, 10, 14 or 18");
       }},
      {"sink.smpp.dest_addr_ton", KeyShape::kScalar, "--smpp-dest-addr-ton", KeyFlag::kValue, false,
       "sink smpp: the recipient's TON, 0-6 (default 1, international)",
       [](const KeyValue& v, SinkSettings& s) {
         s.smpp.submit.dest_addr_ton = asCode(v, isTon, "an integer from 0 to 6");
       }},
      {"sink.smpp.dest_addr_npi", KeyShape::kScalar, "--smpp-dest-addr-npi", KeyFlag::kValue, false,
       "sink smpp: the recipient's NPI (default 1, E.164)",
       [](const KeyValue& v, SinkSettings& s) {
         s.smpp.submit.dest_addr_npi = asCode(v, smpp::isDefinedNpi, "0, 1, 3, 4, 6, 8, 9, 10, 14 or 18");
       }},
      {"sink.smpp.service_type", KeyShape::kScalar, "--smpp-service-type", KeyFlag::kValue, false,
       "sink smpp: submit_sm service_type, at most 5 characters (default empty: the SMSC's default)",
       [](const KeyValue& v, SinkSettings& s) {
         const std::string text = v.asString();
         const bool printable = std::all_of(text.begin(), text.end(), [](char ch) { return ch > ' ' && ch < 0x7F; });
         if (text.size() > 5 || !printable) v.fail("at most 5 printable ASCII characters");
         s.smpp.submit.service_type = text;
       }},
      {"sink.smpp.validity_period", KeyShape::kScalar, "--smpp-validity-period", KeyFlag::kValue, false,
       "sink smpp: how long the SMSC keeps trying, SMPP relative time YYMMDDhhmmss000R, e.g. 000002000000000R "
       "for 2 days (default empty: the SMSC's default)",
       [](const KeyValue& v, SinkSettings& s) {
         const std::string text = trim(v.asString());
         if (const char* why = smpp::validityPeriodError(text))
           v.fail(fmt::format("SMPP's relative time YYMMDDhhmmss000R, e.g. 000002000000000R for 2 days ({})", why));
         s.smpp.submit.validity_period = text;
       }},
      {"sink.smpp.priority_flag", KeyShape::kScalar, "--smpp-priority-flag", KeyFlag::kValue, false,
       "sink smpp: submit_sm priority_flag, 0-3 (default 0)",
       [](const KeyValue& v, SinkSettings& s) {
         s.smpp.submit.priority_flag = static_cast<std::uint8_t>(v.asInt(0, 3));
       }},
      {"sink.smpp.receipt_ids", KeyShape::kScalar, "--smpp-receipt-ids", KeyFlag::kValue, false,
       "sink smpp: how the SMSC writes message ids in submit_sm_resp and in receipts: as-is, hex-decimal, "
       "decimal-hex or auto (default as-is)",
       [](const KeyValue& v, SinkSettings& s) {
         const std::string text = v.asChoice({"as-is", "hex-decimal", "decimal-hex", "auto"});
         s.smpp.receipt_ids = *smpp::parseIdConvention(text);
       }},
  };
}

}  // namespace

std::vector<SinkKey> smppSinkKeys() {
  std::vector<SinkKey> keys = smppKeys();
  for (const SinkKey& k : smppCarrierKeys()) keys.push_back(k);
  return keys;
}

}  // namespace pacer::sink
