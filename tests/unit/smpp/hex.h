// Test helper: "00 1b 65" -> bytes, and bytes -> "00 1b 65".
#pragma once

#include <cctype>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>

namespace pacer::smpp::testing {

inline std::string hex(std::string_view spaced) {
  std::string out;
  int nibble = -1;
  for (char c : spaced) {
    if (std::isspace(static_cast<unsigned char>(c))) continue;
    if (!std::isxdigit(static_cast<unsigned char>(c))) throw std::invalid_argument("bad hex");
    const int v = std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : (std::tolower(c) - 'a' + 10);
    if (nibble < 0) {
      nibble = v;
    } else {
      out.push_back(static_cast<char>(nibble * 16 + v));
      nibble = -1;
    }
  }
  if (nibble >= 0) throw std::invalid_argument("odd hex");
  return out;
}

inline std::string toHex(std::string_view bytes) {
  std::string out;
  char buf[4];
  for (unsigned char c : bytes) {
    std::snprintf(buf, sizeof buf, "%02x ", c);
    out += buf;
  }
  if (!out.empty()) out.pop_back();
  return out;
}

}  // namespace pacer::smpp::testing
