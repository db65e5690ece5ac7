// From one Pacer message to its submit_sm PDUs, and from their answers back
// to one SendResult. Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pacer/sink.h"
#include "pacer/smpp/pdu.h"
#include "pacer/smpp/text.h"

namespace pacer::smpp {

enum class Concatenation { kUdh, kSar };  // UDH (IEI 0x00, 8-bit reference) or sar_* TLVs
enum class ReceiptRequest {
  kNone,   // registered_delivery 0 on every segment
  kFirst,  // only the first segment asks for a receipt: one receipt per message, under its id
  kAll,    // every segment asks; receipts of segments 2..n name ids no ledger row has
};

struct SubmitOptions {
  std::string service_type;                     // at most 5 characters; empty: the SMSC's default
  std::optional<std::uint8_t> source_addr_ton;  // nullopt: from source_addr (sourceAddressType)
  std::optional<std::uint8_t> source_addr_npi;  // nullopt: from source_addr (sourceAddressType)
  std::string source_addr;
  std::uint8_t dest_addr_ton = 1;  // international
  std::uint8_t dest_addr_npi = 1;  // E.164
  Concatenation concatenation = Concatenation::kUdh;
  ReceiptRequest receipts = ReceiptRequest::kFirst;
  std::uint8_t priority_flag = 0;  // 0-3
  std::string validity_period;     // SMPP time format (validityPeriodError), empty: the SMSC's default
};

// TON and NPI values (SMPP 3.4 section 5.2.5, 5.2.6).
namespace ton {
inline constexpr std::uint8_t kUnknown = 0;
inline constexpr std::uint8_t kInternational = 1;
inline constexpr std::uint8_t kNational = 2;
inline constexpr std::uint8_t kNetworkSpecific = 3;
inline constexpr std::uint8_t kAlphanumeric = 5;
inline constexpr std::uint8_t kMax = 6;  // abbreviated
}  // namespace ton
namespace npi {
inline constexpr std::uint8_t kUnknown = 0;
inline constexpr std::uint8_t kE164 = 1;
}  // namespace npi
// Whether `v` is one of the NPI values SMPP 3.4 defines (0, 1, 3, 4, 6, 8, 9, 10, 14, 18).
bool isDefinedNpi(std::uint8_t v) noexcept;

struct AddressType {
  std::uint8_t ton = 0;
  std::uint8_t npi = 0;
  bool operator==(const AddressType&) const = default;
};
// The TON/NPI a sender address implies (docs/smpp.md "Sender address"):
// empty -> 0/0 (the SMSC fills in its default); anything but digits after an
// optional leading '+' -> alphanumeric 5/0; '+' and digits -> international
// 1/1 (the '+' is not sent); digits starting with '0' -> national 2/1; up to
// 8 digits -> a short code, network specific 3/0; 9 digits or more ->
// international 1/1 (a full number with its country code).
AddressType sourceAddressType(std::string_view source_addr) noexcept;

// Why `v` cannot be a submit_sm's validity_period (a few words, e.g. "not
// 15 digits and R"); nullptr when it can.
// Accepted: empty (the SMSC's default) or SMPP's relative time
// "YYMMDDhhmmss000R" (years, months, days, hours, minutes, seconds from
// now; months 0-11, days 0-30, hours 0-23, minutes and seconds 0-59; not
// all zero). An absolute time would expire every message at one instant.
const char* validityPeriodError(std::string_view v) noexcept;

enum class BuildError {
  kNone,
  kNoRecipient,   // empty destination
  kBadRecipient,  // over 20 octets, or a NUL in it
  kInvalidUtf8,   // the text is not UTF-8
  kTooLong,       // over 255 segments
  kBadOptions,    // a source address, service type or validity period the SMSC cannot take
};
const char* buildErrorName(BuildError e) noexcept;

// Builds the submit_sm PDUs for `text` to `recipient` (a leading '+' is
// dropped: the TON says the number is international) into `out[0..count)`,
// reusing `out`'s and `scratch`'s storage. `reference` numbers the
// concatenated message (its low 8 bits with UDH, 16 bits with SAR).
// `reason` gets a human-readable cause on error.
BuildError buildSubmits(const SubmitOptions& options, std::string_view recipient, std::string_view text,
                        std::uint16_t reference, EncodedText& scratch, std::vector<Pdu>& out, std::size_t& count,
                        std::string& reason);

// Collects the answers to one message's segments. The message is delivered
// only when every segment got ESME_ROK; its provider_message_id is the first
// segment's message_id. After the first failure no further segment should be
// sent; the result waits for the segments already sent. When several
// segments fail, the message takes the gravest class: permanent, then
// throttled, then fault.
class SegmentTally {
 public:
  void begin(std::size_t segments);
  // Segment `index` answered.
  void done(std::size_t index, SendOutcome outcome, std::uint32_t status, std::string_view message_id,
            std::string_view reason);
  // A segment was sent (for finished()).
  void sent() { ++sent_; }
  // Whether the next segment may go: none has failed.
  bool mayContinue() const { return !failed_; }
  // Nothing more will come: every sent segment answered, and either all
  // were sent or one failed.
  bool finished() const { return answered_ == sent_ && (sent_ == segments_ || failed_); }
  // The message's result (call when finished()).
  SendResult result(std::uint64_t ticket) const;
  std::size_t segments() const { return segments_; }
  std::size_t sentCount() const { return sent_; }
  // Finished with part of the message accepted and every other answer a
  // throttle: sending it again from the start would deliver its accepted
  // segments twice, so its retry should send only the others (restore()).
  bool resumable() const;
  std::vector<bool> acceptedSegments() const;  // per segment: accepted
  const std::string& firstId() const { return first_id_; }
  // After begin(): these segments were accepted on an earlier attempt (the
  // first one under `first_id`); they count as sent and answered.
  void restore(const std::vector<bool>& accepted, std::string_view first_id);

 private:
  enum class SegmentState : std::uint8_t { kPending, kAccepted, kThrottled, kFailed };
  std::vector<SegmentState> state_;  // per segment; reused between messages
  std::size_t segments_ = 0;
  std::size_t sent_ = 0;
  std::size_t answered_ = 0;
  bool failed_ = false;
  SendOutcome worst_ = SendOutcome::kDelivered;
  std::uint32_t status_ = 0;
  std::string reason_;
  std::string first_id_;
};

}  // namespace pacer::smpp
