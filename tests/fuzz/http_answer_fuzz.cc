// libFuzzer target for the provider-answer classifier: any status, any
// Retry-After and any body give one of the outcomes, a retry_after that is
// never negative, and a reason for every refusal.
#include <cstdlib>

#include "fuzz_input.h"
#include "pacer/sinks/http_sink.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  pacer::fuzz::Input in(data, size);
  const int status = static_cast<int>(in.number(2) % 1000);
  const std::string retry_after = in.text(64);
  const std::int64_t now = static_cast<std::int64_t>(in.number(5));
  const std::string body = in.rest();
  const pacer::SendResult r = pacer::sink::classifyHttpAnswer(status, retry_after, body, now);
  if (r.retry_after.count() < 0) std::abort();
  if (r.outcome != pacer::SendOutcome::kDelivered && r.reason.empty()) std::abort();
  return 0;
}
