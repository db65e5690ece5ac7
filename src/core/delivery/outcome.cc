#include <fmt/format.h>

#include "pacer/sink.h"

namespace pacer {
namespace {

// Length of the valid UTF-8 sequence starting at s[i] (>= 2 bytes), or 0.
std::size_t utf8Sequence(const std::string& s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  std::size_t n = 0;
  if (c >= 0xc2 && c <= 0xdf)
    n = 2;
  else if ((c & 0xf0) == 0xe0)
    n = 3;
  else if (c >= 0xf0 && c <= 0xf4)
    n = 4;
  if (n == 0 || i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return 0;
  return n;
}

}  // namespace

const char* outcomeName(SendOutcome outcome) noexcept {
  switch (outcome) {
    case SendOutcome::kDelivered: return "delivered";
    case SendOutcome::kThrottled: return "throttled";
    case SendOutcome::kFault: return "fault";
    case SendOutcome::kPermanent: return "permanent";
    case SendOutcome::kInvalidToken: return "invalid_token";
  }
  return "unknown";
}

const char* receiptStatusName(ReceiptStatus status) noexcept {
  switch (status) {
    case ReceiptStatus::kDelivered: return "delivered";
    case ReceiptStatus::kUndelivered: return "undelivered";
    case ReceiptStatus::kExpired: return "expired";
    case ReceiptStatus::kRejected: return "rejected";
    case ReceiptStatus::kUnknown: return "unknown";
  }
  return "unknown";
}

std::string escapeForLine(const std::string& bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (std::size_t i = 0; i < bytes.size();) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else if (const std::size_t n = c >= 0x80 ? utf8Sequence(bytes, i) : 0; n > 0) {
      out.append(bytes, i, n);
      i += n;
      continue;
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
    ++i;
  }
  return out;
}

}  // namespace pacer
