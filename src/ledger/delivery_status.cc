#include "pacer/ledger.h"

namespace pacer {

std::string_view deliveryStatusName(DeliveryStatus s) noexcept {
  switch (s) {
    case DeliveryStatus::kSent: return "sent";
    case DeliveryStatus::kFailed: return "failed";
    case DeliveryStatus::kRejected: return "rejected";
  }
  return "unknown";
}

}  // namespace pacer
