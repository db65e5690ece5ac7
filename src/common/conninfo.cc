#include "pacer/conninfo.h"

#include <fmt/format.h>

#include <cctype>

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

}  // namespace pacer
