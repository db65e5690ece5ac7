#include "pacer/error.h"

namespace pacer {

const char* errorKindName(ErrorKind kind) noexcept {
  switch (kind) {
    case ErrorKind::kInvalid: return "invalid";
    case ErrorKind::kUnavailable: return "unavailable";
    case ErrorKind::kRejected: return "rejected";
  }
  return "unknown";
}

}  // namespace pacer
