// The checks pacerd's configuration keys share (config_keys.h): a value as
// a string, a number in range, a choice, a list, a map, a host:port, a
// secret read from a file.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "config_keys.h"

namespace pacer::config::detail {

[[noreturn]] void fail(const Raw& r, std::string_view expected) {
  std::string got;
  if (r.secret)
    got = "";  // never the value of a secret
  else if (r.shape == Shape::kList)
    got = ", got a list";
  else if (r.shape == Shape::kMap)
    got = ", got a map";
  else
    got = fmt::format(", got \"{}\"", r.scalar);
  throw ConfigError(fmt::format("{}: {}: expected {}{}", r.origin, r.path, expected, got));
}

std::string trim(std::string s) {
  const auto notSpace = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), notSpace));
  s.erase(std::find_if(s.rbegin(), s.rend(), notSpace).base(), s.end());
  return s;
}

std::vector<std::string> splitCommas(const std::string& s) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(s);
  while (std::getline(in, item, ','))
    if (auto t = trim(item); !t.empty()) out.push_back(std::move(t));
  return out;
}

std::string asString(const Raw& r) {
  if (r.shape != Shape::kScalar) fail(r, "a string");
  return r.scalar;
}

std::string asNonEmpty(const Raw& r) {
  if (r.shape != Shape::kScalar || r.scalar.empty()) fail(r, "a non-empty string");
  return r.scalar;
}

long long asInt(const Raw& r, long long min, long long max) {
  const std::string expected = fmt::format("an integer >= {}", min);
  if (r.shape != Shape::kScalar) fail(r, expected);
  const std::string s = trim(r.scalar);
  if (s.empty()) fail(r, expected);
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (*end != '\0' || errno == ERANGE) fail(r, expected);
  if (v < min) fail(r, expected);
  if (v > max) fail(r, fmt::format("an integer from {} to {}", min, max));
  return v;
}

double asDouble(const Raw& r, bool (*ok)(double), std::string_view expected) {
  if (r.shape != Shape::kScalar) fail(r, expected);
  const std::string s = trim(r.scalar);
  char* end = nullptr;
  const double v = s.empty() ? std::nan("") : std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || !std::isfinite(v) || !ok(v)) fail(r, expected);
  return v;
}

bool asBool(const Raw& r, std::string_view expected) {
  if (r.shape == Shape::kScalar) {
    std::string s = trim(r.scalar);
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    if (s == "true" || s == "yes" || s == "on" || s == "1") return true;
    if (s == "false" || s == "no" || s == "off" || s == "0") return false;
  }
  fail(r, expected);
}

std::string asChoice(const Raw& r, std::initializer_list<const char*> choices) {
  std::string expected = "one of ";
  for (const char* c : choices) expected += fmt::format("{}{}", expected.size() > 7 ? ", " : "", c);
  if (r.shape == Shape::kScalar)
    for (const char* c : choices)
      if (r.scalar == c) return r.scalar;
  fail(r, expected);
}

// A list: a YAML sequence, or one string of comma-separated items.
std::vector<std::string> asList(const Raw& r) {
  if (r.shape == Shape::kList) {
    std::vector<std::string> out;
    for (const std::string& s : r.list)
      for (std::string& item : splitCommas(s)) out.push_back(std::move(item));
    return out;
  }
  if (r.shape == Shape::kScalar) return splitCommas(r.scalar);
  fail(r, "a list of strings");
}

const std::vector<std::pair<std::string, std::string>>& asMap(const Raw& r) {
  if (r.shape != Shape::kMap) fail(r, "a map of NAME: VALUE");
  return r.map;
}

// HOST:PORT with a port in 1..65535.
void checkHostPort(const Raw& r, const std::string& node, int min_port) {
  const std::size_t colon = node.rfind(':');
  bool ok = colon != std::string::npos && colon > 0 && colon + 1 < node.size();
  if (ok) {
    const std::string port = node.substr(colon + 1);
    ok = port.size() <= 5 && std::all_of(port.begin(), port.end(), [](unsigned char c) { return std::isdigit(c); });
    if (ok) ok = std::stoi(port) >= min_port && std::stoi(port) <= 65535;
  }
  if (!ok) {
    Raw one = r;
    one.shape = Shape::kScalar;
    one.scalar = node;
    fail(one, "HOST:PORT");
  }
}

// The whole file, or why not (a directory opens but does not read).
std::optional<std::string> readTextFile(const std::string& path, std::string& why) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    why = "is a directory, not a file";
    return std::nullopt;
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    why = std::strerror(errno);
    return std::nullopt;
  }
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) {
    why = "read error";
    return std::nullopt;
  }
  return text;
}

std::string readSecretFile(const Raw& r, const std::string& path) {
  std::string why;
  std::optional<std::string> text = readTextFile(path, why);
  if (!text) throw ConfigError(fmt::format("{}: {}: cannot read \"{}\": {}", r.origin, r.path, path, why));
  std::string s = std::move(*text);
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

// libpq: a password added to a keyword conninfo (quoted) or a URL (a query
// parameter, percent-encoded); either overrides one already in it.
std::string withPassword(const std::string& conninfo, const std::string& password) {
  if (conninfo.rfind("postgresql://", 0) == 0 || conninfo.rfind("postgres://", 0) == 0) {
    std::string enc;
    for (unsigned char c : password) {
      if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~')
        enc += static_cast<char>(c);
      else
        enc += fmt::format("%{:02X}", c);
    }
    return conninfo + (conninfo.find('?') == std::string::npos ? "?" : "&") + "password=" + enc;
  }
  std::string quoted;
  for (char c : password) {
    if (c == '\\' || c == '\'') quoted += '\\';
    quoted += c;
  }
  return conninfo + (conninfo.empty() ? "" : " ") + "password='" + quoted + "'";
}

}  // namespace pacer::config::detail
