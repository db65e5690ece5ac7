// A message on its way through a WorkerCore, with what the worker knows of
// it so far. Private to src/core/delivery.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "pacer/message.h"
#include "pacer/offset_tracker.h"
#include "pacer/time.h"
#include "pacer/wall_time.h"

namespace pacer::delivery_detail {

struct Item {
  Message msg;
  int attempts = 0;                                      // attempts so far, of every kind
  int faults = 0;                                        // of them, answered kFault
  int throttled = 0;                                     // of them, answered kThrottled
  bool tracked = true;                                   // its offset is in the tracker (false: it came from parking)
  std::uint64_t read_after = 0;                          // Impl::revokes when it was read (staleAfterRevoke)
  std::uint32_t cost = 1;                                // quota units (MessageCostInterface; SMS segments)
  std::optional<MonoTime> first_attempt = std::nullopt;  // when the first attempt was handed to the sink
  // Recipient rules: caps_counted bit i = counted under the campaign's cap i
  // at counted_at[i] (a reservation, given back if the message fails for
  // good); not_before = when it may go (parked with it); waiting_quiet = it
  // waits for quiet hours (else for a deferred cap).
  std::uint8_t caps_counted = 0;
  std::uint8_t caps_gen = 0;  // the campaign's caps_gen when counted: which list bit i names
  bool waiting_quiet = false;
  bool park_in_doubt = false;  // back from a park batch that failed: its row may be durable all the same
  std::array<WallTime, 2> counted_at{};
  WallTime not_before{};
  std::size_t bytes() const {
    return sizeof(Item) + msg.id.size() + msg.campaign.size() + msg.recipient.size() + msg.payload.size() +
           msg.position.topic.size() + msg.time_zone.size();
  }
};

inline bool samePartition(const Position& p, const TopicPartition& tp) {
  return p.partition == tp.partition && p.topic == tp.topic;
}

}  // namespace pacer::delivery_detail
