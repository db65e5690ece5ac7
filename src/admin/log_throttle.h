// At most one log line per kind per interval: the admin listener's refused
// requests (a flood of bad tokens) must not write one line each. Pure: time
// is an argument.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "pacer/time.h"

namespace pacer::admin {

class LogThrottle {
 public:
  explicit LogThrottle(Nanos interval = std::chrono::seconds(1)) : interval_(interval) {}
  // Whether a line of `kind` may be written at `now`. When it may, the value
  // is how many lines of that kind were left out since the last one written
  // (0: none), for that line to say; nullopt: leave this one out (it is
  // counted). A `now` earlier than the last line's admits nothing new.
  // Not thread-safe (the listener's one thread owns it).
  std::optional<std::uint64_t> admit(std::string_view kind, MonoTime now);

 private:
  struct Entry {
    MonoTime last{};
    std::uint64_t suppressed = 0;
  };
  Nanos interval_;
  std::map<std::string, Entry, std::less<>> kinds_;
};

}  // namespace pacer::admin
