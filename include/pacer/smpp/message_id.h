// Message ids an SMSC writes one way in submit_sm_resp and another in its
// delivery receipts (hex in one, decimal in the other): the receipt's id is
// rewritten into the form submit_sm_resp used, which is the one the ledger
// holds (deliveries.provider_message_id), so the two meet. Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pacer::smpp {

enum class IdConvention {
  kAsIs,            // both forms the same: ids pass through untouched (the default)
  kHexThenDecimal,  // submit_sm_resp in hex, receipts in decimal
  kDecimalThenHex,  // submit_sm_resp in decimal, receipts in hex
  kAuto,            // decided from the first receipt whose id matches a recent submit_sm_resp id in one form
};
// "as-is", "hex-decimal", "decimal-hex", "auto".
const char* idConventionName(IdConvention c) noexcept;
// The inverse of idConventionName; nullopt for anything else.
std::optional<IdConvention> parseIdConvention(std::string_view name) noexcept;

// `digits` (hex digits of either case, or decimal digits) in base `from`
// written in base `to` (10 or 16; hex in upper case) without leading zeros
// ("0" for zero), into `out`. Any length (ids may exceed 64 bits). False,
// leaving `out` unspecified, when `digits` is empty or holds a character
// that is not a digit of `from`.
bool convertBase(std::string_view digits, int from, int to, std::string& out);

// Rewrites receipt ids into the submit_sm_resp form of one SMSC. It learns
// that form (upper or lower case hex letters, zero padding to a fixed width)
// from the submit_sm_resp ids it is shown, so "000000001a" in submit_sm_resp
// and "id:26" in a receipt meet as "000000001a". kAuto counts, per
// receipt, which conventions would match one of the last kAutoRecent submit
// ids, and settles on one once it leads the others by 8 receipts; until then
// receipt ids pass through as received. Not thread-safe.
class ReceiptIdMatcher {
 public:
  static constexpr std::size_t kAutoRecent = 1024;  // submit ids kAuto compares receipts with

  explicit ReceiptIdMatcher(IdConvention convention = IdConvention::kAsIs) : convention_(convention) {}

  // An accepted submit_sm's id (submit_sm_resp message_id).
  void submitted(std::string_view id);
  // A receipt's id, rewritten in place into the submit_sm_resp form. An id
  // that is not a number in the receipts' base stays as it is.
  void toSubmitForm(std::string& receipt_id);
  // The convention in force: kAuto until it has decided.
  IdConvention convention() const noexcept { return convention_; }

 private:
  void decide(std::string_view receipt_id);
  void shape(std::string& digits, bool hex) const;

  IdConvention convention_;
  bool lower_ = false;               // the last hex submit id with a letter had lower-case letters
  std::size_t width_ = 0;            // zero-padded submit ids: their length; 0: no padding seen
  std::vector<std::string> recent_;  // kAuto: canonical (upper case, no leading zeros) submit ids, a ring
  std::size_t next_ = 0;
  int votes_[3] = {0, 0, 0};  // kAuto: receipts matching as-is, hex-decimal, decimal-hex
  std::string scratch_;
};

}  // namespace pacer::smpp
