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

void httpClassOutcome(int status, std::optional<Nanos> retry_after, SendResult& r) {
  if (status == 429 || (status == 503 && retry_after)) {
    r.outcome = SendOutcome::kThrottled;
    r.retry_after = retry_after.value_or(Nanos{0});
  } else if (status >= 400 && status < 500 && status != 408) {
    r.outcome = SendOutcome::kPermanent;
  } else {
    r.outcome = SendOutcome::kFault;
  }
}

}  // namespace pacer::push
