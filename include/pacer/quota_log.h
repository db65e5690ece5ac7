// A QuotaObserver that writes one log line (spdlog, stderr) per degraded-mode
// transition. Lives in pacer::quota_redis, beside the other I/O; the core
// only knows the QuotaObserver interface.
#pragma once

#include <memory>

#include "pacer/quota_lease.h"

namespace pacer {

using QuotaObserverPtr = std::unique_ptr<QuotaObserver>;

// Logs "pacer quota: provider 'X' entered degraded mode (local share)" at
// warn and "... left degraded mode" at info. Thread-safe (spdlog's default
// logger is).
QuotaObserverPtr makeLogQuotaObserver();

}  // namespace pacer
