#include "pacer/message.h"

#include <fmt/format.h>

namespace pacer {
namespace {

constexpr std::size_t kMaxIdBytes = 256;
constexpr std::size_t kMaxZoneBytes = 64;  // the longest IANA name is 32 bytes

}  // namespace

bool usableText(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) return false;
    int extra = 0;
    if (c < 0x80) {
      extra = 0;
    } else if ((c & 0xe0) == 0xc0 && c >= 0xc2) {
      extra = 1;
    } else if ((c & 0xf0) == 0xe0) {
      extra = 2;
    } else if ((c & 0xf8) == 0xf0 && c <= 0xf4) {
      extra = 3;
    } else {
      return false;
    }
    for (int k = 1; k <= extra; ++k) {
      if (i + k >= s.size() || (static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return false;
    }
    i += 1 + extra;
  }
  return true;
}

namespace {

Decoded reject(std::string reason) { return Decoded{std::nullopt, std::move(reason), {}}; }

}  // namespace

std::string positionId(const Position& p) { return fmt::format("{}:{}:{}", p.topic, p.partition, p.offset); }

namespace {

// The id a rejected message is recorded under: its message-id header when
// that is usable, else its position.
std::string rejectedId(const RawMessage& raw) {
  for (const auto& [name, value] : raw.headers) {
    if (name != "message-id") continue;
    if (value && !value->empty() && value->size() <= kMaxIdBytes && usableText(*value)) return *value;
    break;
  }
  return positionId(raw.position);
}

// Why `raw` cannot be used, or empty when it can. Reads only.
std::string problem(const RawMessage& raw, const DecodeOptions& options) {
  std::size_t bytes = raw.value.size() + (raw.key ? raw.key->size() : 0);
  for (const auto& [name, value] : raw.headers) bytes += name.size() + (value ? value->size() : 0);
  if (bytes > options.max_message_bytes)
    return fmt::format("message of {} bytes is over max_message_bytes ({})", bytes, options.max_message_bytes);
  if (!raw.key || raw.key->empty()) return "no campaign: the Kafka key (campaign id) is empty";
  if (raw.key->size() > kMaxIdBytes || !usableText(*raw.key))
    return "undecodable campaign id: the Kafka key must be UTF-8 text without control characters, at most 256 bytes";
  bool have_id = false;
  for (const auto& [name, value] : raw.headers) {
    if (name == "message-id" && !have_id) {
      if (!value || value->empty() || value->size() > kMaxIdBytes || !usableText(*value))
        return "undecodable message-id header: it must be UTF-8 text without control characters, 1 to 256 bytes";
      have_id = true;
    } else if (name == "recipient" && value && !usableText(*value)) {
      return "undecodable recipient header: it must be UTF-8 text without control characters";
    } else if (name == "tz" && value && (value->size() > kMaxZoneBytes || !usableText(*value))) {
      return "undecodable tz header: it must be an IANA time zone name, UTF-8 text without control characters, "
             "at most 64 bytes";
    } else if (name == kExpiresAtHeader) {
      std::string why;
      if (!value)
        why = "it has no value";
      else if (value->size() > 64)
        why = "longer than 64 bytes";
      else if (parseDeadline(*value, why))
        why.clear();
      if (!why.empty()) return fmt::format("undecodable {} header: {}", kExpiresAtHeader, why);
    }
  }
  return {};
}

}  // namespace

Decoded decodeMessage(RawMessage raw, const DecodeOptions& options) {
  std::string why = problem(raw, options);
  if (!why.empty()) {
    Decoded d = reject(std::move(why));
    d.id = rejectedId(raw);
    return d;
  }
  Message m;
  m.position = std::move(raw.position);
  m.campaign = std::move(*raw.key);
  bool have_id = false;
  for (auto& [name, value] : raw.headers) {
    if (name == "message-id" && !have_id) {
      m.id = std::move(*value);
      have_id = true;
    } else if (name == "recipient" && value) {
      m.recipient = std::move(*value);
    } else if (name == "tz" && value) {
      m.time_zone = std::move(*value);
    } else if (name == kExpiresAtHeader && value) {
      std::string why;
      const std::int64_t at = parseDeadline(*value, why).value_or(0);          // checked by problem()
      if (m.expires_at_ms == 0 || at < m.expires_at_ms) m.expires_at_ms = at;  // the earliest of several
    }
  }
  if (!have_id) m.id = positionId(m.position);
  m.payload = std::move(raw.value);
  m.fingerprint = contentFingerprint(m);
  return Decoded{std::move(m), {}, {}};
}

std::uint64_t contentFingerprint(const Message& m) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  const auto mix = [&](std::string_view part) {
    for (unsigned char ch : part) h = (h ^ ch) * 0x100000001b3ULL;
    h = (h ^ 0xffu) * 0x100000001b3ULL;  // a separator no UTF-8 text contains
  };
  mix(m.campaign);
  mix(m.recipient);
  mix(m.payload);
  // Never 0: the ledger stores 0 for "not known" (rows from before fingerprints).
  return h == 0 ? 1 : h;
}

}  // namespace pacer
