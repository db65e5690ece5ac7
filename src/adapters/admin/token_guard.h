// Wrong tokens per client address, for the admin listener: a token bucket
// per address in a table of fixed size. Each wrong token takes one; while
// the address has one the answer is 401, after that 429 with Retry-After
// until the bucket refills. A right token never reaches here. Pure: the
// listener gives the time; memory is bounded by `slots` (when full, the
// address that failed longest ago makes room).
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
  TokenGuard(std::size_t burst, Nanos refill_every, std::size_t slots = 1024)
      : burst_(static_cast<double>(burst)), refill_every_(refill_every), slots_(std::max<std::size_t>(slots, 1)) {}

  // A wrong token from `address` (addressKey) at `now`: 0 if it is answered
  // 401, else the whole seconds until the next 401 (answer 429 meanwhile).
  std::uint32_t fail(std::string_view address, MonoTime now) {
    if (burst_ <= 0 || refill_every_ <= Nanos::zero()) return 0;  // off
    Entry& e = find(address, now);
    const double refilled = static_cast<double>((now - e.last).count()) / static_cast<double>(refill_every_.count());
    e.tokens = std::min(burst_, e.tokens + std::max(0.0, refilled));
    e.last = now;
    if (e.tokens >= 1.0) {
      e.tokens -= 1.0;
      return 0;
    }
    const double wait_s = (1.0 - e.tokens) * std::chrono::duration<double>(refill_every_).count();
    return static_cast<std::uint32_t>(std::max(1.0, std::ceil(wait_s)));
  }

  std::size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    std::string address;
    double tokens;
    MonoTime last;
  };

  Entry& find(std::string_view address, MonoTime now) {
    for (Entry& e : entries_)
      if (e.address == address) return e;
    if (entries_.size() < slots_) return entries_.emplace_back(Entry{std::string(address), burst_, now});
    Entry& oldest = *std::min_element(entries_.begin(), entries_.end(),
                                      [](const Entry& a, const Entry& b) { return a.last < b.last; });
    oldest = Entry{std::string(address), burst_, now};
    return oldest;
  }

  double burst_;
  Nanos refill_every_;
  std::size_t slots_;
  std::vector<Entry> entries_;
};

}  // namespace pacer::admin
