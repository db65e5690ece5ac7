#include <cstdio>

#include "push_handler.h"

namespace pacer::fake {

Verdict PushPolicy::decide(std::string_view token, MonoTime now) {
  if (o_.invalid_tokens.find(token) != o_.invalid_tokens.end()) return Verdict::kUnregistered;
  if (o_.fault_rate > 0 && std::uniform_real_distribution<double>(0, 1)(rng_) < o_.fault_rate)
    return (rng_() & 1) ? Verdict::kFault503 : Verdict::kFault500;
  if (o_.throttle_rate > 0 && std::uniform_real_distribution<double>(0, 1)(rng_) < o_.throttle_rate)
    return Verdict::kThrottleNoise;
  if (!o_.hot_token.empty() && token == o_.hot_token && !hot_window_.tryAdmit(now)) return Verdict::kThrottleToken;
  return window_.tryAdmit(now) ? Verdict::kAccept : Verdict::kThrottle;
}

std::string PushPolicy::randomId(bool uuid) {
  const std::uint64_t hi = rng_(), lo = rng_();
  char buf[40];
  if (uuid) {
    // Version 4, variant 10xx, upper case like APNs.
    std::snprintf(buf, sizeof buf, "%08X-%04X-4%03X-%04X-%012llX", static_cast<unsigned>(hi >> 32),
                  static_cast<unsigned>((hi >> 16) & 0xffff), static_cast<unsigned>(hi & 0xfff),
                  static_cast<unsigned>(0x8000 | ((lo >> 48) & 0x3fff)),
                  static_cast<unsigned long long>(lo & 0xffffffffffffULL));
  } else {
    std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(hi),
                  static_cast<unsigned long long>(lo));
  }
  return buf;
}

std::string jsonString(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back('"');
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char esc[8];
          std::snprintf(esc, sizeof esc, "\\u%04x", static_cast<unsigned>(c));
          out += esc;
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
  return out;
}

}  // namespace pacer::fake
