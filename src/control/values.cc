#include "control/values.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>

#include "pacer/message.h"
#include "pacer/rate_limiter.h"

namespace pacer::control {
namespace {

constexpr std::size_t kMaxIdBytes = 256;
constexpr std::size_t kMaxNameBytes = 1024;
constexpr double kMaxWeight = 1e6;

// The whole of `text` as a number, or nullopt ("12x", "", " 1" are not numbers).
std::optional<double> number(std::string_view text) {
  double v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return v;
}

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

bool equalsNoCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

constexpr std::string_view kHidden = "(connection string hidden: it could not be parsed)";

bool isUri(std::string_view s) { return s.starts_with("postgresql://") || s.starts_with("postgres://"); }

// postgresql://user:secret@host:5432/db?password=secret -> the secrets as ***.
std::string redactUri(std::string_view s) {
  const std::size_t scheme_end = s.find("://") + 3;
  const std::size_t query = s.find('?', scheme_end);
  const std::string_view before_query = s.substr(0, query);
  std::string out;
  // The last '@' before the query ends the user info: a password with an
  // unencoded '/' or '@' in it is still hidden whole.
  const std::size_t at = before_query.rfind('@');
  if (at != std::string_view::npos && at >= scheme_end) {
    const std::string_view user_info = before_query.substr(scheme_end, at - scheme_end);
    const std::size_t colon = user_info.find(':');
    out += s.substr(0, scheme_end);
    out += colon == std::string_view::npos ? user_info : fmt::format("{}:***", user_info.substr(0, colon));
    out += before_query.substr(at);
  } else {
    out += before_query;
  }
  if (query == std::string_view::npos) return out;
  out += '?';
  std::string_view rest = s.substr(query + 1);
  bool first = true;
  while (true) {
    const std::size_t amp = rest.find('&');
    const std::string_view param = rest.substr(0, amp);
    if (!first) out += '&';
    first = false;
    const std::size_t eq = param.find('=');
    if (eq != std::string_view::npos && equalsNoCase(param.substr(0, eq), "password"))
      out += fmt::format("{}=***", param.substr(0, eq));
    else
      out += param;
    if (amp == std::string_view::npos) break;
    rest = rest.substr(amp + 1);
  }
  return out;
}

// key=value key = 'quoted \' value' ... with password's value as ***.
std::string redactKeywords(std::string_view s) {
  std::string out;
  std::size_t i = 0;
  const std::size_t n = s.size();
  while (i < n) {
    if (isSpace(s[i])) {
      out += s[i++];
      continue;
    }
    const std::size_t key_start = i;
    while (i < n && s[i] != '=' && !isSpace(s[i])) ++i;
    const std::string_view key = s.substr(key_start, i - key_start);
    while (i < n && isSpace(s[i])) ++i;
    if (i >= n || s[i] != '=' || key.empty()) return std::string(kHidden);
    ++i;
    while (i < n && isSpace(s[i])) ++i;
    const std::size_t value_start = i;
    if (i < n && s[i] == '\'') {
      ++i;
      while (i < n && s[i] != '\'') i += s[i] == '\\' ? 2 : 1;
      if (i >= n) return std::string(kHidden);  // no closing quote
      ++i;
    } else {
      while (i < n && !isSpace(s[i])) i += s[i] == '\\' ? 2 : 1;
      i = std::min(i, n);
    }
    out += s.substr(key_start, value_start - key_start);
    out += equalsNoCase(key, "password") ? std::string_view("***") : s.substr(value_start, i - value_start);
  }
  return out;
}

}  // namespace

std::optional<double> parseRate(std::string_view text, std::string_view flag) {
  if (text == "unlimited") return std::nullopt;
  const std::optional<double> v = number(text);
  const auto refuse = [&](std::string_view why) {
    return InvalidValueError(
        fmt::format("{} '{}': {}; give messages per second (0 to 10000000) or unlimited", flag, text, why));
  };
  if (!v) throw refuse("not a number");
  if (!std::isfinite(*v)) throw refuse("not a finite number");
  if (*v < 0) throw refuse("a rate cannot be negative");
  try {
    validateLimit(RateLimit{*v, 1.0}, LimiterOptions{});
  } catch (const InvalidLimitError& e) {
    throw refuse(e.what());
  }
  return *v;
}

double parseBurst(std::string_view text, std::string_view flag) {
  const std::optional<double> v = number(text);
  if (!v || !std::isfinite(*v) || *v < 1)
    throw InvalidValueError(
        fmt::format("{} '{}': a burst is a number of messages, at least 1 (messages that may go at once)", flag, text));
  return *v;
}

double parseWeight(std::string_view text, std::string_view flag) {
  const std::optional<double> v = number(text);
  if (!v || !std::isfinite(*v) || *v <= 0 || *v > kMaxWeight)
    throw InvalidValueError(fmt::format(
        "{} '{}': a weight is a number above 0 and at most 1000000 (the campaign's share of the sink; 1 is even)", flag,
        text));
  return *v;
}

double defaultBurst(std::optional<double> rate) {
  if (!rate) return 1;
  return std::ceil(*rate / 100.0) + 1;
}

Limit makeLimit(std::optional<double> rate, std::optional<double> burst) {
  if (!rate && burst)
    throw InvalidValueError("--burst: an unlimited rate has no burst; give a rate with --burst, or leave --burst out");
  return Limit{rate, burst.value_or(defaultBurst(rate))};
}

void checkId(std::string_view id, std::string_view what) {
  if (id.empty()) throw InvalidValueError(fmt::format("{} id: empty; give 1 to 256 bytes of text", what));
  if (id.size() > kMaxIdBytes)
    throw InvalidValueError(fmt::format("{} id: {} bytes; at most {} are allowed", what, id.size(), kMaxIdBytes));
  if (!usableText(id))
    throw InvalidValueError(
        fmt::format("{} id: must be UTF-8 text without control characters (the Kafka key must match it)", what));
}

void checkName(std::string_view name) {
  if (name.size() > kMaxNameBytes)
    throw InvalidValueError(fmt::format("--name: {} bytes; at most {} are allowed", name.size(), kMaxNameBytes));
  if (!usableText(name)) throw InvalidValueError("--name: must be UTF-8 text without control characters");
}

std::string_view actionName(CampaignAction a) noexcept {
  switch (a) {
    case CampaignAction::kPause: return "pause";
    case CampaignAction::kResume: return "resume";
    case CampaignAction::kCancel: return "cancel";
    case CampaignAction::kSetRate: return "set-rate";
  }
  return "?";
}

Transition decideTransition(CampaignAction action, std::string_view state, std::string_view id) {
  using K = Transition::Kind;
  const bool live = state == "active" || state == "paused";
  if (!live && state != "cancelled" && state != "completed")
    return {K::kRefused, "",
            fmt::format("campaign '{}' is in state '{}', which this pacerctl does not know", id, state)};
  switch (action) {
    case CampaignAction::kPause:
      if (state == "paused") return {K::kAlready, "paused", ""};
      if (state == "active") return {K::kChange, "paused", ""};
      return {K::kRefused, "", fmt::format("campaign '{}' is {}: there is nothing to pause", id, state)};
    case CampaignAction::kResume:
      if (state == "active") return {K::kAlready, "active", ""};
      if (state == "paused") return {K::kChange, "active", ""};
      return {K::kRefused, "",
              fmt::format("campaign '{}' is {} and cannot be resumed; create a new campaign to send again", id, state)};
    case CampaignAction::kCancel:
      if (state == "cancelled") return {K::kAlready, "cancelled", ""};
      if (live) return {K::kChange, "cancelled", ""};
      return {K::kRefused, "", fmt::format("campaign '{}' is completed: there is nothing to cancel", id)};
    case CampaignAction::kSetRate:
      if (live) return {K::kChange, std::string(state), ""};
      return {K::kRefused, "",
              fmt::format("campaign '{}' is {}: a rate no longer applies to it; create a new campaign to send again",
                          id, state)};
  }
  return {K::kRefused, "", "unknown action"};
}

std::string notifyPayload(std::string_view kind, std::string_view id, std::string_view change) {
  nlohmann::ordered_json j;
  j["kind"] = kind;
  j["id"] = id;
  j["change"] = change;
  return j.dump();
}

std::string redactConninfo(std::string_view conninfo) {
  return isUri(conninfo) ? redactUri(conninfo) : redactKeywords(conninfo);
}

bool conninfoParses(std::string_view conninfo) { return redactConninfo(conninfo) != kHidden; }

std::string withConnectTimeout(const std::string& conninfo, int seconds) {
  if (conninfo.find("connect_timeout") != std::string::npos) return conninfo;
  if (isUri(conninfo))
    return fmt::format("{}{}connect_timeout={}", conninfo, conninfo.find('?') == std::string::npos ? '?' : '&',
                       seconds);
  if (conninfo.empty()) return fmt::format("connect_timeout={}", seconds);
  return fmt::format("{} connect_timeout={}", conninfo, seconds);
}

}  // namespace pacer::control
