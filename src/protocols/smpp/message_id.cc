#include "pacer/smpp/message_id.h"

#include <algorithm>
#include <cctype>

namespace pacer::smpp {
namespace {

int digitValue(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool hasHexLetter(std::string_view s) noexcept {
  return std::any_of(s.begin(), s.end(), [](char c) { return digitValue(c) >= 10; });
}

// Upper case, without leading zeros: how ids are compared.
std::string canonical(std::string_view id) {
  std::size_t b = 0;
  while (b + 1 < id.size() && id[b] == '0') ++b;
  std::string out(id.substr(b));
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// Leads of this many receipts decide kAuto; ids that count up make a single
// receipt ambiguous ("26" in decimal is 0x1A, and 0x26 may be a recent id too).
constexpr int kAutoLead = 8;

}  // namespace

const char* idConventionName(IdConvention c) noexcept {
  switch (c) {
    case IdConvention::kAsIs: return "as-is";
    case IdConvention::kHexThenDecimal: return "hex-decimal";
    case IdConvention::kDecimalThenHex: return "decimal-hex";
    case IdConvention::kAuto: return "auto";
  }
  return "as-is";
}

std::optional<IdConvention> parseIdConvention(std::string_view name) noexcept {
  for (IdConvention c :
       {IdConvention::kAsIs, IdConvention::kHexThenDecimal, IdConvention::kDecimalThenHex, IdConvention::kAuto})
    if (name == idConventionName(c)) return c;
  return std::nullopt;
}

bool convertBase(std::string_view digits, int from, int to, std::string& out) {
  if (digits.empty()) return false;
  std::vector<int> acc;  // base `to`, least significant first
  for (char c : digits) {
    const int v = digitValue(c);
    if (v < 0 || v >= from) return false;
    int carry = v;
    for (int& a : acc) {
      const int x = a * from + carry;
      a = x % to;
      carry = x / to;
    }
    for (; carry > 0; carry /= to) acc.push_back(carry % to);
  }
  out.clear();
  if (acc.empty()) acc.push_back(0);  // the number zero
  for (auto it = acc.rbegin(); it != acc.rend(); ++it) out.push_back("0123456789ABCDEF"[*it]);
  return true;
}

void ReceiptIdMatcher::submitted(std::string_view id) {
  if (convention_ == IdConvention::kAsIs || id.empty()) return;
  for (char c : id)
    if (digitValue(c) >= 10) {
      lower_ = std::islower(static_cast<unsigned char>(c)) != 0;
      break;
    }
  if (id.size() > 1 && id.front() == '0') width_ = id.size();
  if (convention_ != IdConvention::kAuto) return;
  if (recent_.size() < kAutoRecent)
    recent_.push_back(canonical(id));
  else
    recent_[next_] = canonical(id);
  next_ = (next_ + 1) % kAutoRecent;
}

void ReceiptIdMatcher::decide(std::string_view receipt_id) {
  const auto known = [&](const std::string& c) {
    return std::find(recent_.begin(), recent_.end(), c) != recent_.end();
  };
  std::string as_hex, as_decimal;
  const bool same = known(canonical(receipt_id));
  const bool hex_decimal = convertBase(receipt_id, 10, 16, as_hex) && known(as_hex);
  const bool decimal_hex = hasHexLetter(receipt_id) && convertBase(receipt_id, 16, 10, as_decimal) && known(as_decimal);
  votes_[0] += same;
  votes_[1] += hex_decimal;
  votes_[2] += decimal_hex;
  const IdConvention by[3] = {IdConvention::kAsIs, IdConvention::kHexThenDecimal, IdConvention::kDecimalThenHex};
  for (int i = 0; i < 3; ++i)
    if (votes_[i] - std::max(votes_[(i + 1) % 3], votes_[(i + 2) % 3]) >= kAutoLead) {
      convention_ = by[i];
      recent_ = {};
    }
}

void ReceiptIdMatcher::shape(std::string& digits, bool hex) const {
  if (hex && lower_)
    for (char& c : digits) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (digits.size() < width_) digits.insert(0, width_ - digits.size(), '0');
}

void ReceiptIdMatcher::toSubmitForm(std::string& receipt_id) {
  if (convention_ == IdConvention::kAuto) decide(receipt_id);
  const bool to_hex = convention_ == IdConvention::kHexThenDecimal;
  if (!to_hex && convention_ != IdConvention::kDecimalThenHex) return;
  if (!convertBase(receipt_id, to_hex ? 10 : 16, to_hex ? 16 : 10, scratch_)) return;
  shape(scratch_, to_hex);
  receipt_id.swap(scratch_);
}

}  // namespace pacer::smpp
