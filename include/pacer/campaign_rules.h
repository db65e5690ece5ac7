// A campaign's rules about priority and about the person at the other end
// (docs/recipient-rules.md): its priority class, its quiet hours in the
// recipient's time zone, and its per-recipient frequency cap. The values as
// configured (the campaigns table, pacerctl, pacer-sim); the engines that
// apply them are pacer::rules (quiet_hours.h, frequency_cap.h), the worker
// core and the quota (priority).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace pacer {

// What happens to a message a frequency cap refuses: a `suppressed` ledger
// row ("suppressed: frequency cap ..."), or a wait until the cap allows it.
enum class CapPolicy : std::uint8_t { kSuppress, kDefer };
// "suppress", "defer".
std::string_view capPolicyName(CapPolicy p) noexcept;
std::optional<CapPolicy> parseCapPolicy(std::string_view text) noexcept;

// At most `limit` messages per recipient in any rolling `window`.
struct FrequencyCapRule {
  std::uint32_t limit = 0;
  std::chrono::milliseconds window{0};
  friend bool operator==(const FrequencyCapRule&, const FrequencyCapRule&) = default;
};
// "3/24h", "1/30m", "10/7d", "5/90s": limit 1..1000, window 1 s..366 d.
// nullopt with *error set (why, naming the text) for anything else.
std::optional<FrequencyCapRule> parseFrequencyCap(std::string_view text, std::string* error);
// The same form back ("3/24h"; the largest unit that divides the window).
std::string formatFrequencyCap(const FrequencyCapRule& rule);

}  // namespace pacer
