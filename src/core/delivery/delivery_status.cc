#include "pacer/ledger.h"

namespace pacer {

std::string_view deliveryStatusName(DeliveryStatus s) noexcept {
  switch (s) {
    case DeliveryStatus::kSent: return "sent";
    case DeliveryStatus::kFailed: return "failed";
    case DeliveryStatus::kRejected: return "rejected";
    case DeliveryStatus::kInvalidToken: return "invalid_token";
    case DeliveryStatus::kSuppressed: return "suppressed";
    case DeliveryStatus::kExpired: return "expired";
  }
  return "unknown";
}

std::string reusedIdKey(const DeliveryRecord& r) {
  return r.message_id + "@" + r.topic + "/" + std::to_string(r.partition) + "/" + std::to_string(r.offset);
}

}  // namespace pacer
