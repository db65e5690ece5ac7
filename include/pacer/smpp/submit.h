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

// SMPP 3.4 section 7.1.1 absolute time of `epoch_ms`, in UTC:
// "YYMMDDhhmmsst00+" (t = tenths of a second, 00 quarter hours from UTC).
// Years 2000 to 2099 only; outside them, empty (the SMSC's default).
std::string absoluteTime(std::int64_t epoch_ms);
// Milliseconds of a relative time validityPeriodError() accepts (a year
// counted as 365 days, a month as 30); 0 for empty.
std::int64_t relativeMillis(std::string_view v) noexcept;
// The validity_period of a message sent at `now_ms` whose deadline is
// `expires_at_ms` (0: none): the deadline in absolute time when it ends
// before `configured` (a relative time, or empty) would, else `configured`.
std::string validityFor(std::string_view configured, std::int64_t expires_at_ms, std::int64_t now_ms);

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

// Collects the answers to one message's segments and says which segment may
// go next. Segments go one at a time, in order: segment k+1 only after
// segment k was answered ESME_ROK, so a failed segment never has a later one
// of its message at the SMSC (other messages fill the window meanwhile). The
// message is delivered only when every segment got ESME_ROK; its
// provider_message_id is the first segment's message_id. A failure stops the
// message; the result waits for any segment still out. When several segments
// fail, the message takes the gravest class: permanent, then throttled, then
// fault. A failed result's reason names the segments the SMSC holds, with
// their ids (they reach the handset whatever happens next), and its
// provider_message_id is the first segment's when the SMSC holds that one.
class SegmentTally {
 public:
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);

  void begin(std::size_t segments);
  // After begin(): the segments the SMSC accepted on an earlier attempt,
  // per segment its message_id (empty: not accepted). They count as sent
  // and answered, and are not sent again.
  void restore(const std::vector<std::string>& accepted_ids);
  // The segment that may be sent now, or kNone: one is out and unanswered,
  // one failed, or every one was sent.
  std::size_t next() const;
  // Segment `index` (from next()) was sent.
  void sent(std::size_t index);
  // Segment `index` answered (or failed without an answer: timeout, lost
  // connection, encode error, bind gone).
  void done(std::size_t index, SendOutcome outcome, std::uint32_t status, std::string_view message_id,
            std::string_view reason);
  // Whether no further segment may go: one failed.
  bool failed() const { return failed_; }
  // Nothing more will come: no segment out, and either every segment was
  // accepted or one failed.
  bool finished() const { return out_ == 0 && (failed_ || accepted_ == segments_); }
  // The message's result (call when finished()).
  SendResult result(std::uint64_t ticket) const;
  std::size_t segments() const { return segments_; }
  std::size_t acceptedCount() const { return accepted_; }
  SendOutcome outcome() const { return worst_; }  // so far: kDelivered until a segment fails
  // Finished, failed, and a retry may still deliver it (no segment refused
  // for good), with more than one segment: the retry should send only the
  // segments not accepted (restore(acceptedIds())) under the same
  // concatenation reference, so the handset joins them. Also with none
  // accepted: an unanswered segment may be at the SMSC all the same.
  bool resumable() const;
  // Per segment: the message_id it was accepted under, empty if not accepted.
  const std::vector<std::string>& acceptedIds() const { return ids_; }

 private:
  enum class SegmentState : std::uint8_t { kPending, kOut, kAccepted, kFailed, kRefused };
  std::vector<SegmentState> state_;  // per segment; reused between messages
  std::vector<std::string> ids_;     // per segment; reused between messages
  std::size_t segments_ = 0;
  std::size_t cursor_ = 0;  // segments before it are accepted
  std::size_t out_ = 0;     // sent, not answered
  std::size_t accepted_ = 0;
  bool failed_ = false;
  bool refused_ = false;  // a segment was refused for good
  SendOutcome worst_ = SendOutcome::kDelivered;
  std::uint32_t status_ = 0;
  std::string reason_;
};

// "segments 1,2 of 3 accepted, ids a,b" ("segment 1 of 3 accepted, id a");
// empty when none is. For reasons: what of a failed message reached the SMSC.
std::string acceptedSummary(const std::vector<std::string>& accepted_ids);

}  // namespace pacer::smpp
