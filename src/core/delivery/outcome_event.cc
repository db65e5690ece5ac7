#include "pacer/outcome_event.h"

#include <algorithm>

namespace pacer {
namespace {

// The length of the valid UTF-8 sequence at s[i], or 0 if there is none.
std::size_t utf8Length(std::string_view s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  std::size_t n = 0;
  unsigned min = 0;
  if (c >= 0xc2 && c <= 0xdf) n = 2, min = 0x80;
  else if (c >= 0xe0 && c <= 0xef) n = 3, min = 0x800;
  else if (c >= 0xf0 && c <= 0xf4) n = 4, min = 0x10000;
  else return 0;
  if (i + n > s.size()) return 0;
  unsigned cp = c & (n == 2 ? 0x1f : n == 3 ? 0x0f : 0x07);
  for (std::size_t k = 1; k < n; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

void appendString(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const std::size_t n = utf8Length(s, i);
      if (n == 0) {
        out += "\xef\xbf\xbd";  // U+FFFD
        ++i;
      } else {
        out.append(s.substr(i, n));
        i += n;
      }
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 15];
        } else {
          out += static_cast<char>(c);
        }
    }
    ++i;
  }
  out += '"';
}

void field(std::string& out, std::string_view name, std::string_view value) {
  out += ",\"";
  out += name;
  out += "\":";
  appendString(out, value);
}

void field(std::string& out, std::string_view name, std::int64_t value) {
  out += ",\"";
  out += name;
  out += "\":";
  out += std::to_string(value);
}

}  // namespace

std::string encodeOutcomeEvent(const OutcomeEvent& e) {
  std::string out;
  out.reserve(192 + e.reason.size() + e.message_id.size());
  out += "{\"event_id\":";
  out += std::to_string(e.id);
  field(out, "kind", e.kind);
  field(out, "message_id", e.message_id);
  field(out, "campaign", e.campaign);
  field(out, "status", e.status);
  field(out, "reason", e.reason);
  field(out, "provider", e.provider);
  field(out, "provider_message_id", e.provider_message_id);
  field(out, "attempts", static_cast<std::int64_t>(e.attempts));
  field(out, "recorded_at_ms", e.recorded_at_ms);
  if (e.done_at_ms != 0) field(out, "done_at_ms", e.done_at_ms);
  out += '}';
  return out;
}

void OutboxBatch::start(const std::vector<std::int64_t>& ids) {
  states_.clear();
  states_.reserve(ids.size());
  failed_ = 0;
  for (std::int64_t id : ids) states_.emplace(id, State::kPending);
  pending_ = states_.size();
}

bool OutboxBatch::report(std::int64_t id, bool acknowledged) {
  auto it = states_.find(id);
  if (it == states_.end() || it->second != State::kPending) return false;
  it->second = acknowledged ? State::kAcked : State::kFailed;
  --pending_;
  if (!acknowledged) ++failed_;
  return true;
}

std::vector<std::int64_t> OutboxBatch::acknowledged() const {
  std::vector<std::int64_t> out;
  out.reserve(states_.size());
  for (const auto& [id, state] : states_)
    if (state == State::kAcked) out.push_back(id);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace pacer
