// Wrong tokens per client address, for the admin listener: a token bucket
// per address in a table of fixed size. Each wrong token takes one; while
// the address has one the answer is 401, after that 429 with Retry-After
// until the bucket refills. A right token never reaches here. Each 429 in a
// row also earns a longer delay before it is answered (`delay_first`,
// doubling, at most `delay_max`), so a guesser that ignores the 429 is
// slowed all the same; the row ends once the address has stayed away long
// enough for its bucket to be full again. Pure: the listener gives the time;
// memory is bounded by `slots` (when full, the address that failed longest
// ago makes room).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "pacer/time.h"

namespace pacer::admin {

class TokenGuard {
 public:
  TokenGuard(std::size_t burst, Nanos refill_every, Nanos delay_first = Nanos::zero(), Nanos delay_max = Nanos::zero(),
             std::size_t slots = 1024)
      : burst_(static_cast<double>(burst)),
        refill_every_(refill_every),
        delay_first_(delay_first),
        delay_max_(std::max(delay_max, delay_first)),
        slots_(std::max<std::size_t>(slots, 1)) {}

  struct Verdict {
    std::uint32_t retry_after_s = 0;  // 0: answer 401; else 429 with this Retry-After
    Nanos delay{0};                   // how long to hold the 429 before it is answered
  };

  // A wrong token from `address` (addressKey) at `now`.
  Verdict fail(std::string_view address, MonoTime now) {
    if (burst_ <= 0 || refill_every_ <= Nanos::zero()) return {};  // off
    Entry& e = find(address, now);
    const double refilled = static_cast<double>((now - e.last).count()) / static_cast<double>(refill_every_.count());
    e.tokens = std::min(burst_, e.tokens + std::max(0.0, refilled));
    e.last = now;
    if (e.tokens >= burst_) e.strikes = 0;  // stayed away long enough: a new row
    if (e.tokens >= 1.0) {
      e.tokens -= 1.0;
      return {};
    }
    const double wait_s = (1.0 - e.tokens) * std::chrono::duration<double>(refill_every_).count();
    Verdict v{static_cast<std::uint32_t>(std::max(1.0, std::ceil(wait_s))), Nanos::zero()};
    if (delay_first_ > Nanos::zero()) {
      // delay_first * 2^strikes, at most delay_max.
      Nanos d = delay_first_;
      for (std::uint32_t i = 0; i < e.strikes && d < delay_max_; ++i) d = d > delay_max_ / 2 ? delay_max_ : d * 2;
      v.delay = std::min(d, delay_max_);
    }
    if (e.strikes < 64) ++e.strikes;
    return v;
  }

  std::size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    std::string address;
    double tokens;
    MonoTime last;
    std::uint32_t strikes = 0;  // 429s since the bucket was last full
  };

  Entry& find(std::string_view address, MonoTime now) {
    for (Entry& e : entries_)
      if (e.address == address) return e;
    if (entries_.size() < slots_) return entries_.emplace_back(Entry{std::string(address), burst_, now, 0});
    Entry& oldest = *std::min_element(entries_.begin(), entries_.end(),
                                      [](const Entry& a, const Entry& b) { return a.last < b.last; });
    oldest = Entry{std::string(address), burst_, now, 0};
    return oldest;
  }

  double burst_;
  Nanos refill_every_;
  Nanos delay_first_, delay_max_;
  std::size_t slots_;
  std::vector<Entry> entries_;
};

}  // namespace pacer::admin
