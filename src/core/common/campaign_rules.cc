#include "pacer/campaign_rules.h"

#include <fmt/format.h>

#include <array>
#include <charconv>

namespace pacer {
namespace {

struct Unit {
  char suffix;
  std::chrono::milliseconds length;
};
// Largest first: formatFrequencyCap picks the first that divides the window.
constexpr std::array<Unit, 4> kUnits{{
    {'d', std::chrono::hours(24)},
    {'h', std::chrono::hours(1)},
    {'m', std::chrono::minutes(1)},
    {'s', std::chrono::seconds(1)},
}};

constexpr std::uint32_t kMaxLimit = 1000;
constexpr std::chrono::milliseconds kMaxWindow = std::chrono::hours(24 * 366);

bool parseCount(std::string_view s, std::uint64_t& out) {
  if (s.empty() || s.size() > 9) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && end == s.data() + s.size();
}

}  // namespace

std::string_view capPolicyName(CapPolicy p) noexcept { return p == CapPolicy::kDefer ? "defer" : "suppress"; }

std::optional<CapPolicy> parseCapPolicy(std::string_view text) noexcept {
  if (text == "suppress") return CapPolicy::kSuppress;
  if (text == "defer") return CapPolicy::kDefer;
  return std::nullopt;
}

std::optional<FrequencyCapRule> parseFrequencyCap(std::string_view text, std::string* error) {
  auto fail = [&](std::string_view why) -> std::optional<FrequencyCapRule> {
    if (error) *error = fmt::format("frequency cap '{}': {}", text, why);
    return std::nullopt;
  };
  const auto slash = text.find('/');
  if (slash == std::string_view::npos || slash + 2 > text.size())
    return fail("expected LIMIT/WINDOW with a unit s, m, h or d, e.g. 3/24h");
  std::uint64_t limit = 0, count = 0;
  if (!parseCount(text.substr(0, slash), limit) || limit < 1 || limit > kMaxLimit)
    return fail(fmt::format("the limit must be a whole number from 1 to {}", kMaxLimit));
  const std::string_view window = text.substr(slash + 1);
  const char unit = window.back();
  const Unit* u = nullptr;
  for (const Unit& k : kUnits)
    if (k.suffix == unit) u = &k;
  if (u == nullptr) return fail("the window needs a unit: s, m, h or d (e.g. 24h)");
  if (!parseCount(window.substr(0, window.size() - 1), count) || count < 1)
    return fail("the window must be a whole number of s, m, h or d above 0");
  const auto length = u->length * static_cast<std::int64_t>(count);
  if (length > kMaxWindow) return fail("the window is at most 366d");
  return FrequencyCapRule{static_cast<std::uint32_t>(limit), length};
}

std::string formatFrequencyCap(const FrequencyCapRule& rule) {
  for (const Unit& u : kUnits)
    if (rule.window.count() > 0 && rule.window % u.length == std::chrono::milliseconds{0})
      return fmt::format("{}/{}{}", rule.limit, rule.window / u.length, u.suffix);
  return fmt::format("{}/{}ms", rule.limit, rule.window.count());
}

}  // namespace pacer
