// The HTTP callbacks' bounded queue and retry policy (docs/callbacks.md):
// the events read from the callbacks' outbox and not yet finished, when each
// may be POSTed again, and which may leave the outbox. Pure: no I/O, no
// clock; the callback worker feeds it what it read, what it sent, each
// answer and `now`.
//
// The queue holds at most `capacity` events, counting the finished ones
// whose delete has not happened yet: when it is full the worker reads no
// more, so the rest wait in the outbox (nothing is dropped to make room).
// Reads move a cursor (after()) past what is held; rewind() goes back to the
// oldest row once nothing is held, which also finds a row that committed
// after a higher id was read.
//
// An answer is 2xx (done), retryable (no answer, 408, 429, 5xx: retried
// after min(max_backoff, first_backoff * 2^(n-1)), at most max_attempts
// POSTs in all) or refused (any other status: given up at once). An event
// given up on is finished too (its row is deleted): it is counted per
// campaign for the worker to log, never dropped silently.
//
// Thread-safety: none; one owner thread (the callback worker's).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "pacer/time.h"

namespace pacer {

enum class CallbackAnswer : std::uint8_t { kAccepted, kRetry, kRefused };

// An HTTP status as the callbacks read it; 0 means no answer (refused
// connection, timeout, broken transfer).
CallbackAnswer classifyCallbackStatus(long http_status) noexcept;

struct CallbackPolicy {
  std::size_t capacity = 1000;  // events held (read, not yet deleted) at most; 0 counts as 1
  int max_attempts = 5;         // POSTs per event, the first included, before giving up; < 1 counts as 1
  Nanos first_backoff = std::chrono::seconds(1);  // before the second POST; doubles each time
  Nanos max_backoff = std::chrono::seconds(60);
};

struct CallbackGiveUps {
  std::string campaign;
  std::uint64_t count = 0;  // events given up on since the last takeGiveUps()
  long last_status = 0;     // the last answer of the last of them (0: none)
};

class CallbackQueue {
 public:
  enum class Verdict : std::uint8_t { kDone, kRetry, kGaveUp, kUnknown };

  explicit CallbackQueue(CallbackPolicy policy);

  // How many more events admit() takes now.
  std::size_t room() const noexcept;
  // The next read takes rows with an id above this (0: from the oldest row).
  std::int64_t after() const noexcept { return after_; }
  // An event just read, due at once. Ignored (false) when the queue is full
  // or the id is held already.
  bool admit(std::int64_t id, std::string campaign, MonoTime now);
  // Up to `max` events due at `now`, those waiting longest first (ids
  // ascending among equals); each is in flight until its answer.
  std::vector<std::int64_t> takeDue(MonoTime now, std::size_t max);
  // The answer to an event in flight (its HTTP status, 0: none). kUnknown:
  // the id is not in flight (ignored).
  Verdict answer(std::int64_t id, long http_status, MonoTime now);

  // The finished ids (done or given up), ascending, for their delete; the
  // queue forgets them. Hand them back with giveBack() if it did not happen.
  std::vector<std::int64_t> takeFinished();
  void giveBack(const std::vector<std::int64_t>& ids);
  // The campaigns that had events given up on since the last call.
  std::vector<CallbackGiveUps> takeGiveUps();

  // When the earliest waiting event is due; nullopt: none waits.
  std::optional<MonoTime> nextDue() const;
  std::size_t held() const noexcept { return events_.size() + finished_.size(); }
  std::size_t inFlight() const noexcept { return in_flight_; }
  // Back to the oldest row. Only when nothing is held; otherwise false.
  bool rewind() noexcept;

  std::uint64_t accepted() const noexcept { return accepted_; }
  std::uint64_t retried() const noexcept { return retried_; }
  std::uint64_t gaveUp() const noexcept { return gave_up_; }

 private:
  struct Event {
    std::string campaign;
    int attempts = 0;  // POSTs answered so far
    bool in_flight = false;
    MonoTime due{};
  };
  Nanos backoff(int attempts) const noexcept;

  CallbackPolicy policy_;
  std::int64_t after_ = 0;
  std::unordered_map<std::int64_t, Event> events_;
  std::multimap<MonoTime, std::int64_t> waiting_;  // by due time; ids ascending among equals (admitted in order)
  std::vector<std::int64_t> finished_;
  std::map<std::string, CallbackGiveUps> give_ups_;
  std::size_t in_flight_ = 0;
  std::uint64_t accepted_ = 0, retried_ = 0, gave_up_ = 0;
};

}  // namespace pacer
