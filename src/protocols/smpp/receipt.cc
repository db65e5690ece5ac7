#include "pacer/smpp/receipt.h"

#include <cctype>
#include <cstdio>

namespace pacer::smpp {
namespace {

bool equalsNoCase(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

// Where `key` (e.g. "stat:") starts in `hay` at a word boundary, ignoring
// case; npos if nowhere.
std::size_t findKey(std::string_view hay, std::string_view key) noexcept {
  for (std::size_t i = 0; i + key.size() <= hay.size(); ++i) {
    if (i > 0 && !std::isspace(static_cast<unsigned char>(hay[i - 1]))) continue;
    if (equalsNoCase(hay.substr(i, key.size()), key)) return i;
  }
  return std::string_view::npos;
}

// The value after `key`: up to the next white space.
std::string_view fieldValue(std::string_view hay, std::string_view key) noexcept {
  const std::size_t at = findKey(hay, key);
  if (at == std::string_view::npos) return {};
  std::size_t b = at + key.size();
  while (b < hay.size() && hay[b] == ' ') ++b;
  std::size_t e = b;
  while (e < hay.size() && !std::isspace(static_cast<unsigned char>(hay[e]))) ++e;
  return hay.substr(b, e - b);
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
// well-known civil-date arithmetic, written out here).
std::int64_t daysFromCivil(std::int64_t y, unsigned m, unsigned d) noexcept {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

}  // namespace

ReceiptStatus receiptStatusFromStat(std::string_view stat) noexcept {
  if (equalsNoCase(stat, "DELIVRD")) return ReceiptStatus::kDelivered;
  if (equalsNoCase(stat, "UNDELIV") || equalsNoCase(stat, "DELETED")) return ReceiptStatus::kUndelivered;
  if (equalsNoCase(stat, "EXPIRED")) return ReceiptStatus::kExpired;
  if (equalsNoCase(stat, "REJECTD")) return ReceiptStatus::kRejected;
  return ReceiptStatus::kUnknown;
}

ReceiptStatus receiptStatusFromState(std::uint8_t s) noexcept {
  switch (s) {
    case state::kDelivered: return ReceiptStatus::kDelivered;
    case state::kUndeliverable:
    case state::kDeleted: return ReceiptStatus::kUndelivered;
    case state::kExpired: return ReceiptStatus::kExpired;
    case state::kRejected: return ReceiptStatus::kRejected;
    default: return ReceiptStatus::kUnknown;
  }
}

const char* statWordOfState(std::uint8_t s) noexcept {
  switch (s) {
    case state::kEnroute: return "ENROUTE";
    case state::kDelivered: return "DELIVRD";
    case state::kExpired: return "EXPIRED";
    case state::kDeleted: return "DELETED";
    case state::kUndeliverable: return "UNDELIV";
    case state::kAccepted: return "ACCEPTD";
    case state::kRejected: return "REJECTD";
    default: return "UNKNOWN";
  }
}

std::int64_t receiptDateToUnixMs(std::string_view date) noexcept {
  if (date.size() != 10 && date.size() != 12) return 0;
  int v[6] = {0, 0, 0, 0, 0, 0};
  for (std::size_t i = 0; i < date.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(date[i]))) return 0;
    v[i / 2] = v[i / 2] * 10 + (date[i] - '0');
  }
  const int month = v[1], day = v[2], hour = v[3], minute = v[4], second = v[5];
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 59) return 0;
  const std::int64_t days = daysFromCivil(2000 + v[0], static_cast<unsigned>(month), static_cast<unsigned>(day));
  return ((days * 24 + hour) * 60 + minute) * 60000 + std::int64_t{second} * 1000;
}

std::optional<ParsedReceipt> parseReceipt(const Pdu& p) {
  if (!isReceipt(p)) return std::nullopt;
  ParsedReceipt r;
  r.text = !p.short_message.empty() ? p.short_message : p.message_payload.value_or(std::string());
  // Fields are looked for before "text:" only: the original text quoted
  // there may itself contain "stat:" or "id:".
  std::string_view fields = r.text;
  const std::size_t text_at = findKey(fields, "text:");
  if (text_at != std::string_view::npos) fields = fields.substr(0, text_at);

  r.message_id = p.receipted_message_id ? *p.receipted_message_id : std::string(fieldValue(fields, "id:"));
  if (r.message_id.empty()) return std::nullopt;
  r.stat = upper(fieldValue(fields, "stat:"));
  if (p.message_state) {
    r.status = receiptStatusFromState(*p.message_state);
    r.stat = statWordOfState(*p.message_state);
  } else {
    r.status = receiptStatusFromStat(r.stat);
  }
  r.error_code = std::string(fieldValue(fields, "err:"));
  if (r.error_code.empty() && p.network_error_code && p.network_error_code->size() == 3) {
    const auto& n = *p.network_error_code;
    char buf[16];
    std::snprintf(buf, sizeof buf, "%u:%u", static_cast<unsigned char>(n[0]),
                  (static_cast<unsigned char>(n[1]) << 8) | static_cast<unsigned char>(n[2]));
    r.error_code = buf;
  }
  r.submit_date = std::string(fieldValue(fields, "submit date:"));
  r.done_date = std::string(fieldValue(fields, "done date:"));
  r.done_at_ms = receiptDateToUnixMs(r.done_date);
  return r;
}

}  // namespace pacer::smpp
