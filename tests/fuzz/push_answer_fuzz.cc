// libFuzzer target for the APNs and FCM answer classifiers and the FCM
// token endpoint's answer: any status and any body (JSON or not, any depth)
// give an outcome, never a negative pause, a reason for every refusal, and
// a token cache that stays consistent.
#include <cstdlib>

#include "fuzz_input.h"
#include "pacer/push/apns.h"
#include "pacer/push/fcm.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  pacer::fuzz::Input in(data, size);
  const int status = static_cast<int>(in.number(2) % 1000);
  const std::uint8_t which = in.byte();
  std::optional<pacer::Nanos> retry_after;
  if (which & 2) retry_after = std::chrono::seconds(in.number(2));
  const std::string apns_id = in.text(64);
  const std::string body = in.rest();
  const pacer::push::PushVerdict v = (which & 1) != 0 ? pacer::push::classifyApnsAnswer(status, body, retry_after, apns_id)
                                                      : pacer::push::classifyFcmAnswer(status, body, retry_after);
  if (v.result.retry_after.count() < 0) std::abort();
  if (v.result.outcome != pacer::SendOutcome::kDelivered && v.result.reason.empty()) std::abort();
  if (v.result.outcome == pacer::SendOutcome::kDelivered && (v.refresh_credential || v.credential_failure)) std::abort();
  return 0;
}
