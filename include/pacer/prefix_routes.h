// Prefix routes (docs/routes.md): an SMS campaign may send recipients whose
// number starts with a country code (or any longer prefix) through another
// provider than its own. The longest matching prefix wins; a number that
// matches none goes to the campaign's own provider (the default route).
// Pure: no I/O, no clock; thread-safe.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pacer {

struct PrefixRoute {
  std::string prefix;    // 1 to kMaxPrefixDigits digits, no '+'
  std::string provider;  // a provider id
  bool operator==(const PrefixRoute&) const = default;
};

inline constexpr std::size_t kMaxPrefixRoutes = 32;
inline constexpr std::size_t kMaxPrefixDigits = 15;  // an E.164 number's length

// "44=sms-uk" or "+44=sms-uk" as a route ({"44", "sms-uk"}); nullopt, with
// `problem` set (naming `field`), when it is not one.
std::optional<PrefixRoute> parsePrefixRoute(std::string_view field, std::string_view entry, std::string* problem);
// "44=sms-uk"
std::string formatPrefixRoute(const PrefixRoute& r);

// Why a campaign on `provider` cannot have these routes: more than
// kMaxPrefixRoutes, a prefix that is not 1 to kMaxPrefixDigits digits, a
// prefix twice, a provider id that is not one (or holds ','), or routes
// without a campaign provider for the numbers no prefix matches.
std::optional<std::string> prefixRoutesProblem(std::string_view field, std::string_view provider,
                                               const std::vector<PrefixRoute>& routes);

// The providers that carry a routed campaign's messages besides its own
// `provider` (its lanes after the first), each once, in the order the
// routes first name them. Empty without routes.
std::vector<std::string> routeProviders(std::string_view provider, const std::vector<PrefixRoute>& routes);
// Why a burst of `burst` cannot be split evenly among `lanes` lanes (each
// needs at least one message); nullopt when it can.
std::optional<std::string> laneBurstProblem(std::string_view field, double burst, std::size_t lanes);

// The digits a recipient's number is matched by: a leading '+' dropped.
std::string_view routedDigits(std::string_view recipient) noexcept;

// The route with the longest prefix that `recipient` starts with (after
// routedDigits); nullptr when none does (the default route). Does not
// allocate.
const PrefixRoute* matchPrefixRoute(const std::vector<PrefixRoute>& routes, std::string_view recipient) noexcept;

}  // namespace pacer
