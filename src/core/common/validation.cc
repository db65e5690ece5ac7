#include "pacer/validation.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

namespace pacer::validation {
namespace {

// The length of the UTF-8 sequence that starts with `c`, 0 for a byte that
// cannot start one (a continuation byte, an overlong or out-of-range lead).
int sequenceLength(unsigned char c) noexcept {
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) return 2;
  if ((c & 0xf0) == 0xe0) return 3;
  if (c >= 0xf0 && c <= 0xf4) return 4;
  return 0;
}

}  // namespace

bool printableUtf8(std::string_view s) noexcept {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) return false;
    const int n = sequenceLength(c);
    if (n == 0 || i + static_cast<std::size_t>(n) > s.size()) return false;
    for (int k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return false;
    // Overlong three- and four-byte forms, UTF-16 surrogates, past U+10FFFF.
    const auto c1 = static_cast<unsigned char>(n > 1 ? s[i + 1] : 0);
    if ((c == 0xe0 && c1 < 0xa0) || (c == 0xed && c1 >= 0xa0) || (c == 0xf0 && c1 < 0x90) || (c == 0xf4 && c1 >= 0x90))
      return false;
    if (c == 0xc2 && c1 < 0xa0) return false;  // C1 controls, U+0080 to U+009F
    i += static_cast<std::size_t>(n);
  }
  return true;
}

std::string shownText(std::string_view s, std::size_t max) {
  std::string out;
  const std::size_t n = std::min(s.size(), max);
  std::size_t i = 0;
  while (i < n) {
    const auto c = static_cast<unsigned char>(s[i]);
    const int len = sequenceLength(c);
    if (c >= 0x20 && c != 0x7f && c != '"' && c != '\\' && len > 0 && i + len <= s.size() &&
        printableUtf8(s.substr(i, static_cast<std::size_t>(len)))) {
      out.append(s.substr(i, static_cast<std::size_t>(len)));
      i += static_cast<std::size_t>(len);
      continue;
    }
    if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (c == '"' || c == '\\')
      out += std::string("\\") + static_cast<char>(c);
    else
      out += fmt::format("\\x{:02x}", c);
    ++i;
  }
  if (s.size() > n) out += fmt::format("... ({} bytes)", s.size());
  return out;
}

std::string numberText(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return fmt::format("{}", v);
}

std::optional<std::string> rateProblem(std::string_view field, double rate) {
  if (!std::isfinite(rate))
    return fmt::format("{} {} is not a finite number; give {} to {:.0f} per second", field, numberText(rate), kMinRate,
                       kMaxRate);
  if (rate < kMinRate)
    return fmt::format("{} {} is below the smallest rate, {} per second (pause a campaign to stop it)", field,
                       numberText(rate), kMinRate);
  if (rate > kMaxRate)
    return fmt::format("{} {} is above the largest rate, {:.0f} per second", field, numberText(rate), kMaxRate);
  return std::nullopt;
}

std::optional<std::string> burstProblem(std::string_view field, double burst) {
  if (!std::isfinite(burst) || burst < 1 || burst > kMaxBurst)
    return fmt::format("{} {} is not a number of messages from 1 to {:.0f}", field, numberText(burst), kMaxBurst);
  return std::nullopt;
}

std::optional<std::string> weightProblem(std::string_view field, double weight) {
  if (!std::isfinite(weight) || weight <= 0 || weight > kMaxWeight)
    return fmt::format("{} {} is not a number above 0 and at most {:.0f}", field, numberText(weight), kMaxWeight);
  return std::nullopt;
}

std::optional<std::string> idProblem(std::string_view field, std::string_view id) {
  if (id.empty()) return fmt::format("{}: empty; give 1 to {} bytes of text", field, kMaxIdBytes);
  if (id.size() > kMaxIdBytes)
    return fmt::format("{}: {} bytes; at most {} are allowed", field, id.size(), kMaxIdBytes);
  if (!printableUtf8(id))
    return fmt::format("{}: must be 1 to {} bytes of UTF-8 text without control characters (newline, tab, ...)", field,
                       kMaxIdBytes);
  return std::nullopt;
}

std::optional<std::string> nameProblem(std::string_view field, std::string_view name) {
  if (name.size() > kMaxNameBytes)
    return fmt::format("{}: {} bytes; at most {} are allowed", field, name.size(), kMaxNameBytes);
  if (!printableUtf8(name))
    return fmt::format("{}: must be at most {} bytes of UTF-8 text without control characters (newline, tab, ...)",
                       field, kMaxNameBytes);
  return std::nullopt;
}

std::optional<std::string> failoverProblem(std::string_view field, std::string_view provider,
                                           const std::vector<std::string>& failover) {
  if (failover.empty()) return std::nullopt;
  if (provider.empty()) return fmt::format("{}: a failover list needs a provider to fail over from", field);
  if (failover.size() > kMaxFailoverProviders)
    return fmt::format("{}: {} providers, more than {}", field, failover.size(), kMaxFailoverProviders);
  for (std::size_t i = 0; i < failover.size(); ++i) {
    const std::string& id = failover[i];
    if (auto why = idProblem(field, id)) return why;
    if (id.find(',') != std::string::npos) return fmt::format("{}: provider id '{}' contains ','", field, id);
    if (id == provider) return fmt::format("{}: '{}' is the campaign's own provider", field, id);
    for (std::size_t j = 0; j < i; ++j)
      if (failover[j] == id) return fmt::format("{}: '{}' is named twice", field, id);
  }
  return std::nullopt;
}

std::optional<std::string> callbackUrlProblem(std::string_view field, std::string_view url) {
  if (url.size() > kMaxCallbackUrlBytes)
    return fmt::format("{}: {} bytes, more than {}", field, url.size(), kMaxCallbackUrlBytes);
  for (char c : url)
    if (static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7f)
      return fmt::format("{}: '{}' has a space, a control character or a byte outside ASCII", field, url);
  std::string lower(url.substr(0, std::min<std::size_t>(url.size(), 8)));
  std::transform(lower.begin(), lower.end(), lower.begin(), [](char c) { return std::tolower(c); });
  std::size_t scheme = 0;
  if (lower.starts_with("http://"))
    scheme = 7;
  else if (lower.starts_with("https://"))
    scheme = 8;
  else
    return fmt::format("{}: '{}' is not an http:// or https:// URL", field, url);
  const std::size_t host_end = std::min(url.find_first_of("/?#", scheme), url.size());
  if (host_end == scheme) return fmt::format("{}: '{}' names no host", field, url);
  return std::nullopt;
}

std::optional<std::string> ttlProblem(std::string_view field, std::int64_t ttl_ms) {
  if (ttl_ms < kMinTtlMs)
    return fmt::format("{} {} ms is below the shortest lifetime, {} ms (1 second)", field, ttl_ms, kMinTtlMs);
  if (ttl_ms > kMaxTtlMs)
    return fmt::format("{} {} ms is above the longest lifetime, {} ms (30 days)", field, ttl_ms, kMaxTtlMs);
  return std::nullopt;
}

}  // namespace pacer::validation
