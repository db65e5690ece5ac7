// Reading the lease script's reply (src/quota/lease.lua), apart from the
// connection handling so that it is tested and fuzzed on its own.
#pragma once

#include <hiredis/hiredis.h>

#include "pacer/quota.h"

namespace pacer {

// Fills `out` from a well-formed reply to `request` and returns true (the
// script's typed refusal of a level it cannot hold is one: status
// kRefusedLimit, `binding` the level); returns
// false, leaving `out` untouched, for anything else (an error reply, a wrong
// shape or type, numbers out of range: a grant above what was asked, a
// binding level the request does not have). Never throws.
bool parseLeaseReply(const redisReply& reply, const LeaseRequest& request, LeaseReply& out) noexcept;

}  // namespace pacer
