// SMSC delivery receipts carried in deliver_sm (SMPP 3.4 appendix B), and
// the command_status classification table. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "pacer/sink.h"
#include "pacer/smpp/pdu.h"

namespace pacer::smpp {

// message_state values (section 5.2.28).
namespace state {
inline constexpr std::uint8_t kEnroute = 1;
inline constexpr std::uint8_t kDelivered = 2;
inline constexpr std::uint8_t kExpired = 3;
inline constexpr std::uint8_t kDeleted = 4;
inline constexpr std::uint8_t kUndeliverable = 5;
inline constexpr std::uint8_t kAccepted = 6;
inline constexpr std::uint8_t kUnknown = 7;
inline constexpr std::uint8_t kRejected = 8;
}  // namespace state

struct ParsedReceipt {
  std::string message_id;  // receipted_message_id TLV, else the text's "id:"
  ReceiptStatus status = ReceiptStatus::kUnknown;
  std::string stat;         // the text's "stat:" word (upper case), or the state's name from the TLV
  std::string error_code;   // the text's "err:", else the network_error_code TLV as "<type>:<code>"
  std::string submit_date;  // "YYMMDDhhmm[ss]" as sent, empty if absent
  std::string done_date;
  std::int64_t done_at_ms = 0;  // done_date read as UTC, Unix ms; 0 if absent or unreadable
  std::string text;             // the receipt text as received (short_message or message_payload)
};

// Whether a deliver_sm is a delivery receipt (esm_class bit 0x04).
inline bool isReceipt(const Pdu& deliver_sm) {
  return deliver_sm.command_id == cmd::kDeliverSm && (deliver_sm.esm_class & kEsmClassReceipt) != 0;
}

// Reads a receipt from a deliver_sm. nullopt when it is not a receipt or names
// no message id anywhere. The text's fields are found by name, ignoring case
// and order; a missing field stays empty. The receipted_message_id and
// message_state TLVs win over the text when present.
std::optional<ParsedReceipt> parseReceipt(const Pdu& deliver_sm);

// The text's "stat:" word -> ReceiptStatus:
//   DELIVRD -> delivered; UNDELIV, DELETED -> undelivered; EXPIRED -> expired;
//   REJECTD -> rejected; ACCEPTD, ENROUTE, UNKNOWN and anything else -> unknown
//   (ACCEPTD and ENROUTE do not prove delivery; see docs/smpp.md).
ReceiptStatus receiptStatusFromStat(std::string_view stat) noexcept;
ReceiptStatus receiptStatusFromState(std::uint8_t message_state) noexcept;
// "DELIVRD", "UNDELIV", ... for a message_state value; "UNKNOWN" otherwise.
const char* statWordOfState(std::uint8_t message_state) noexcept;

// "YYMMDDhhmm" or "YYMMDDhhmmss" (years 2000-2099) read as UTC -> Unix ms; 0 when unreadable.
std::int64_t receiptDateToUnixMs(std::string_view date) noexcept;

// command_status names and values used across the project.
namespace status {
inline constexpr std::uint32_t kOk = 0x00;
inline constexpr std::uint32_t kInvMsgLen = 0x01;
inline constexpr std::uint32_t kInvCmdLen = 0x02;
inline constexpr std::uint32_t kInvCmdId = 0x03;
inline constexpr std::uint32_t kInvBndSts = 0x04;
inline constexpr std::uint32_t kAlyBnd = 0x05;
inline constexpr std::uint32_t kSysErr = 0x08;
inline constexpr std::uint32_t kInvSrcAdr = 0x0A;
inline constexpr std::uint32_t kInvDstAdr = 0x0B;
inline constexpr std::uint32_t kBindFail = 0x0D;
inline constexpr std::uint32_t kInvPaswd = 0x0E;
inline constexpr std::uint32_t kInvSysId = 0x0F;
inline constexpr std::uint32_t kMsgQFul = 0x14;
inline constexpr std::uint32_t kSubmitFail = 0x45;
inline constexpr std::uint32_t kThrottled = 0x58;
inline constexpr std::uint32_t kRxPAppn = 0x65;
inline constexpr std::uint32_t kInvDcs = 0x104;  // SMPP 5.0's ESME_RINVDCS, sent by many 3.4 SMSCs
}  // namespace status

// The class an answer's command_status puts a submit in (the table in
// docs/smpp.md): ROK delivered; RTHROTTLED and RMSGQFUL throttled; the
// message's own faults permanent; everything else, unknown codes included,
// a fault (retried with backoff).
SendOutcome classifyCommandStatus(std::uint32_t command_status) noexcept;
// "ESME_RTHROTTLED", ...; "0x%08x" for codes without a name.
std::string commandStatusName(std::uint32_t command_status);

}  // namespace pacer::smpp
