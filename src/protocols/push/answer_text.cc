#include "answer_text.h"

namespace pacer::push {
namespace {

constexpr std::size_t kMaxShown = 200;

void appendPrintable(std::string& out, std::string_view s) {
  for (char c : s.substr(0, kMaxShown)) {
    const auto u = static_cast<unsigned char>(c);
    out.push_back(u >= 0x20 && u < 0x7f ? c : '?');
  }
}

}  // namespace

std::string answerReason(std::string_view provider, int status, std::string_view reason, std::string_view body) {
  std::string out(provider);
  out += ' ';
  out += std::to_string(status);
  const std::string_view shown = reason.empty() ? body : reason;
  if (!shown.empty()) {
    out += ' ';
    appendPrintable(out, shown);
  }
  return out;
}

}  // namespace pacer::push
