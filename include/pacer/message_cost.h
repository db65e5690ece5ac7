// What one message costs in quota units. Every limiter, lease and grant
// counts units; without a cost model a message is 1 unit. An SMPP provider
// sells throughput in segments, so its messages cost their segment count
// (pacerd's SegmentCost, src/programs/daemon): each segment takes a token of
// the campaign's and of the provider's quota, and a message goes only when
// all of them are granted.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "pacer/message.h"

namespace pacer {

struct MessageCost {
  std::uint32_t units = 1;  // 0: the provider cannot take this message at all
  std::string error;        // units 0: why (the ledger row's reason)
};

// Pure and thread-compatible: called on the loop's thread for every message
// as it is read (and as it comes back from parking).
class MessageCostInterface {
 public:
  virtual ~MessageCostInterface() = default;
  // `provider` is the campaign's provider id (empty: none).
  virtual MessageCost cost(const Message& message, std::string_view provider) const = 0;
};

}  // namespace pacer
