#include "pacer/conninfo.h"

#include <fmt/format.h>

#include <cctype>
#include <vector>

namespace pacer {
namespace {

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

bool equalsNoCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

constexpr std::string_view kHidden = "(connection string hidden: it could not be parsed)";

bool isUri(std::string_view s) { return s.starts_with("postgresql://") || s.starts_with("postgres://"); }

// postgresql://user:secret@host:5432/db?password=secret -> the secrets as
// ***; each secret as written goes to `secrets`.
std::string redactUri(std::string_view s, std::vector<std::string_view>& secrets) {
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
    if (colon != std::string_view::npos) secrets.push_back(user_info.substr(colon + 1));
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
    if (eq != std::string_view::npos && equalsNoCase(param.substr(0, eq), "password")) {
      out += fmt::format("{}=***", param.substr(0, eq));
      secrets.push_back(param.substr(eq + 1));
    } else
      out += param;
    if (amp == std::string_view::npos) break;
    rest = rest.substr(amp + 1);
  }
  return out;
}

// key=value key = 'quoted \' value' ... with password's value as ***; the
// value as written goes to `secrets`, and without its quotes.
std::string redactKeywords(std::string_view s, std::vector<std::string_view>& secrets) {
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
    const std::string_view value = s.substr(value_start, i - value_start);
    if (equalsNoCase(key, "password")) {
      out += "***";
      secrets.push_back(value);
      if (value.size() >= 2 && value.front() == '\'') secrets.push_back(value.substr(1, value.size() - 2));
    } else {
      out += value;
    }
  }
  return out;
}

}  // namespace

std::string redactConninfo(std::string_view conninfo) {
  std::vector<std::string_view> secrets;
  return isUri(conninfo) ? redactUri(conninfo, secrets) : redactKeywords(conninfo, secrets);
}

std::string hidePasswords(std::string text, std::string_view conninfo) {
  std::vector<std::string_view> secrets;
  const std::string shown = isUri(conninfo) ? redactUri(conninfo, secrets) : redactKeywords(conninfo, secrets);
  if (shown == kHidden) return "(message hidden: the connection string could not be parsed)";
  for (std::string_view secret : secrets) {
    if (secret.empty()) continue;
    for (std::size_t at = text.find(secret); at != std::string::npos; at = text.find(secret, at + 3))
      text.replace(at, secret.size(), "***");
  }
  return text;
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

}  // namespace pacer
