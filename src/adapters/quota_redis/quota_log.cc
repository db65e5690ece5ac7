#include "pacer/quota_log.h"

#include <spdlog/spdlog.h>

namespace pacer {
namespace {

class LogQuotaObserver final : public QuotaObserver {
 public:
  void onDegraded(std::string_view provider, DegradedMode mode, bool entered) noexcept override {
    try {
      const char* what = mode == DegradedMode::kStop ? "stop sending" : "local share";
      if (entered)
        spdlog::warn("pacer quota: provider '{}' entered degraded mode ({}): global quota unavailable", provider, what);
      else
        spdlog::info("pacer quota: provider '{}' left degraded mode: global quota back", provider);
    } catch (...) {  // logging must never take the worker down
    }
  }
};

}  // namespace

QuotaObserverPtr makeLogQuotaObserver() { return std::make_unique<LogQuotaObserver>(); }

}  // namespace pacer
