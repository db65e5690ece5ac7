// Test helper: one lease request through a backend's batch interface.
#pragma once

#include <span>

#include "pacer/quota.h"

namespace pacer::testing {

inline LeaseReply acquireOne(QuotaBackend& backend, const LeaseRequest& request, MonoTime now = MonoTime{}) {
  LeaseReply reply;
  backend.acquire(std::span<const LeaseRequest>(&request, 1), now, std::span<LeaseReply>(&reply, 1));
  return reply;
}

}  // namespace pacer::testing
