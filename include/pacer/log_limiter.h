// At most one log line per key per interval, with the count of the lines it
// held back: for warnings that can repeat per event (a refused admin token,
// a provider's rate moving, a store that keeps failing), so that a flood of
// events is a line per interval, not a line per event. Pure: `now` is an
// argument. Not thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "pacer/time.h"

namespace pacer {

class LogLimiter {
 public:
  explicit LogLimiter(Nanos interval = std::chrono::seconds(10)) noexcept : interval_(interval) {}

  // Whether a line for `key` may be written at `now`. When it may, the value
  // is the number of lines held back for the key since the last one written
  // (0 for the first); when it may not, nullopt, and the line is counted.
  std::optional<std::uint64_t> admit(std::string_view key, MonoTime now);

  // Forgets keys not written for `idle` (keeps the map small when keys come
  // and go, such as campaign ids).
  void forgetIdle(MonoTime now, Nanos idle);

  Nanos interval() const noexcept { return interval_; }

 private:
  struct Entry {
    MonoTime last{};
    std::uint64_t held = 0;
  };
  Nanos interval_;
  std::unordered_map<std::string, Entry> entries_;
};

}  // namespace pacer
