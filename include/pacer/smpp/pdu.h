// SMPP 3.4 protocol data units: the subset an ESME (a client that submits
// messages and receives receipts) needs, as plain values, and their wire codec.
// Pure: no sockets, no clock. See docs/smpp.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace pacer::smpp {

// command_id values (SMPP 3.4 section 5.1.2.1).
namespace cmd {
inline constexpr std::uint32_t kGenericNack = 0x80000000;
inline constexpr std::uint32_t kBindReceiver = 0x00000001;
inline constexpr std::uint32_t kBindReceiverResp = 0x80000001;
inline constexpr std::uint32_t kBindTransmitter = 0x00000002;
inline constexpr std::uint32_t kBindTransmitterResp = 0x80000002;
inline constexpr std::uint32_t kSubmitSm = 0x00000004;
inline constexpr std::uint32_t kSubmitSmResp = 0x80000004;
inline constexpr std::uint32_t kDeliverSm = 0x00000005;
inline constexpr std::uint32_t kDeliverSmResp = 0x80000005;
inline constexpr std::uint32_t kUnbind = 0x00000006;
inline constexpr std::uint32_t kUnbindResp = 0x80000006;
inline constexpr std::uint32_t kBindTransceiver = 0x00000009;
inline constexpr std::uint32_t kBindTransceiverResp = 0x80000009;
inline constexpr std::uint32_t kEnquireLink = 0x00000015;
inline constexpr std::uint32_t kEnquireLinkResp = 0x80000015;
inline constexpr std::uint32_t kRespBit = 0x80000000;
}  // namespace cmd

// Optional parameter tags this codec reads or writes (section 5.3.2).
namespace tag {
inline constexpr std::uint16_t kScInterfaceVersion = 0x0210;
inline constexpr std::uint16_t kSarMsgRefNum = 0x020C;
inline constexpr std::uint16_t kSarTotalSegments = 0x020E;
inline constexpr std::uint16_t kSarSegmentSeqnum = 0x020F;
inline constexpr std::uint16_t kReceiptedMessageId = 0x001E;
inline constexpr std::uint16_t kMessageState = 0x0427;
inline constexpr std::uint16_t kNetworkErrorCode = 0x0423;
inline constexpr std::uint16_t kMessagePayload = 0x0424;
}  // namespace tag

// esm_class bits (section 5.2.12).
inline constexpr std::uint8_t kEsmClassReceipt = 0x04;  // deliver_sm: an SMSC delivery receipt
inline constexpr std::uint8_t kEsmClassUdhi = 0x40;     // short_message starts with a user data header

inline constexpr std::size_t kHeaderLength = 16;
// The largest PDU this codec accepts: a short_message is at most 254 octets, a
// message_payload at most 64 KiB; anything beyond that is an attack or garbage.
inline constexpr std::size_t kMaxPduLength = 70 * 1024;

// Largest C-Octet strings, NUL included (section 4 tables).
namespace limit {
inline constexpr std::size_t kSystemId = 16;
inline constexpr std::size_t kPassword = 9;
inline constexpr std::size_t kSystemType = 13;
inline constexpr std::size_t kAddressRange = 41;
inline constexpr std::size_t kServiceType = 6;
inline constexpr std::size_t kAddress = 21;
inline constexpr std::size_t kTime = 17;
inline constexpr std::size_t kMessageId = 65;
inline constexpr std::size_t kShortMessage = 254;
}  // namespace limit

// One PDU as a flat value: which fields matter depends on command_id (the
// codec reads and writes only those). A flat struct rather than one type per
// command so that a session can decode into the same object again and again
// and keep its strings' capacity: no allocation per PDU in steady state.
struct Pdu {
  std::uint32_t command_id = 0;
  std::uint32_t command_status = 0;
  std::uint32_t sequence_number = 0;

  // bind_* (and system_id in bind_*_resp)
  std::string system_id;
  std::string password;
  std::string system_type;
  std::uint8_t interface_version = 0x34;
  std::uint8_t addr_ton = 0;
  std::uint8_t addr_npi = 0;
  std::string address_range;

  // submit_sm / deliver_sm
  std::string service_type;
  std::uint8_t source_addr_ton = 0;
  std::uint8_t source_addr_npi = 0;
  std::string source_addr;
  std::uint8_t dest_addr_ton = 0;
  std::uint8_t dest_addr_npi = 0;
  std::string destination_addr;
  std::uint8_t esm_class = 0;
  std::uint8_t protocol_id = 0;
  std::uint8_t priority_flag = 0;
  std::string schedule_delivery_time;
  std::string validity_period;
  std::uint8_t registered_delivery = 0;
  std::uint8_t replace_if_present_flag = 0;
  std::uint8_t data_coding = 0;
  std::uint8_t sm_default_msg_id = 0;
  std::string short_message;  // raw octets, at most 254

  // submit_sm_resp
  std::string message_id;

  // Optional parameters (TLVs). Unknown tags are skipped on decode.
  std::optional<std::uint8_t> sc_interface_version;
  std::optional<std::uint16_t> sar_msg_ref_num;
  std::optional<std::uint8_t> sar_total_segments;
  std::optional<std::uint8_t> sar_segment_seqnum;
  std::optional<std::string> receipted_message_id;
  std::optional<std::uint8_t> message_state;
  std::optional<std::string> network_error_code;  // 3 octets: network type, error code (2)
  std::optional<std::string> message_payload;

  // Back to a fresh PDU, keeping string capacity.
  void clear() noexcept;
};

enum class DecodeError {
  kNone,
  kTooShort,            // fewer than 16 octets, or command_length below 16
  kTooLong,             // command_length above kMaxPduLength
  kLengthMismatch,      // command_length differs from the octets given
  kUnknownCommand,      // a command_id this codec does not handle (header fields are set)
  kTruncatedBody,       // a mandatory field runs past the end
  kUnterminatedString,  // a C-Octet string without its NUL within its maximum length
  kBadShortMessage,     // sm_length above 254 or past the end
  kBadTlv,              // an optional parameter whose length runs past the end
  kBadTlvLength,        // a known optional parameter with the wrong length
  kTrailingBytes,       // octets left over in a body without optional parameters
};

// "too_short", "too_long", ...; for logs and reasons.
const char* decodeErrorName(DecodeError e) noexcept;

// Decodes exactly one PDU from `size` octets at `data` into `out`. Never reads
// outside [data, data+size), never throws for any input (the libFuzzer entry
// point), and on error leaves `out` holding whatever header fields were read.
// A response with a non-zero command_status may come without a body (5.1.3);
// that decodes with empty fields.
DecodeError decode(const std::uint8_t* data, std::size_t size, Pdu& out) noexcept;
inline DecodeError decode(std::string_view bytes, Pdu& out) noexcept {
  return decode(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size(), out);
}

enum class EncodeError {
  kNone,
  kUnknownCommand,       // command_id not handled by this codec
  kFieldTooLong,         // a C-Octet string over its maximum (or containing a NUL)
  kShortMessageTooLong,  // short_message over 254 octets
  kTlvTooLong,           // an optional parameter over 65535 octets
};

const char* encodeErrorName(EncodeError e) noexcept;

// Appends the wire form of `pdu` to `out` (command_length is computed).
// On error `out` is left as it was. Never throws except std::bad_alloc.
EncodeError encode(const Pdu& pdu, std::string& out);

// Whether `command_id` is a response (the high bit).
inline constexpr bool isResponse(std::uint32_t command_id) { return (command_id & cmd::kRespBit) != 0; }

// "submit_sm", "deliver_sm_resp", ...; "0x%08x" text for others.
std::string commandName(std::uint32_t command_id);

// Builders for the PDUs a session writes with no body of interest.
Pdu makeHeaderOnly(std::uint32_t command_id, std::uint32_t sequence_number, std::uint32_t status = 0);

}  // namespace pacer::smpp
