// Reason text for classified answers (private to pacer::push).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "pacer/sink.h"
#include "pacer/time.h"

namespace pacer::push {

// "<provider> <status> <reason>", or the body's first bytes when the answer
// named no reason; bounded and printable, so it can go into logs and the
// ledger.
std::string answerReason(std::string_view provider, int status, std::string_view reason, std::string_view body);

// The outcome of an answer no provider-specific rule claimed, by HTTP class
// as for every provider: 429, and 503 with Retry-After, throttle (pausing for
// Retry-After); other 4xx but 408 permanent; the rest a fault.
void httpClassOutcome(int status, std::optional<Nanos> retry_after, SendResult& r);

}  // namespace pacer::push
