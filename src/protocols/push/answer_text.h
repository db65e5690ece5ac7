// Reason text for classified answers (private to pacer::push).
#pragma once

#include <string>
#include <string_view>

namespace pacer::push {

// "<provider> <status> <reason>", or the body's first bytes when the answer
// named no reason; bounded and printable, so it can go into logs and the
// ledger.
std::string answerReason(std::string_view provider, int status, std::string_view reason, std::string_view body);

}  // namespace pacer::push
