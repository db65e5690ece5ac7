// Prefix routes: parsing, the one check and the longest-prefix match
// (include/pacer/prefix_routes.h).
#include "pacer/prefix_routes.h"

#include <fmt/format.h>

#include <algorithm>

#include "pacer/validation.h"

namespace pacer {
namespace {

bool allDigits(std::string_view s) noexcept {
  return std::all_of(s.begin(), s.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
}

std::optional<std::string> prefixProblem(std::string_view field, std::string_view prefix) {
  if (prefix.empty() || prefix.size() > kMaxPrefixDigits || !allDigits(prefix))
    return fmt::format("{}: prefix '{}' must be 1 to {} digits after an optional '+' (44, +1, 4420)", field, prefix,
                       kMaxPrefixDigits);
  return std::nullopt;
}

}  // namespace

std::optional<PrefixRoute> parsePrefixRoute(std::string_view field, std::string_view entry, std::string* problem) {
  const std::size_t eq = entry.find('=');
  if (eq == std::string_view::npos) {
    if (problem) *problem = fmt::format("{}: '{}' is not PREFIX=PROVIDER (44=sms-uk)", field, entry);
    return std::nullopt;
  }
  std::string_view prefix = entry.substr(0, eq);
  if (!prefix.empty() && prefix.front() == '+') prefix.remove_prefix(1);
  PrefixRoute r{std::string(prefix), std::string(entry.substr(eq + 1))};
  std::optional<std::string> why = prefixProblem(field, r.prefix);
  if (!why) why = validation::idProblem(fmt::format("{}: provider of prefix {}", field, r.prefix), r.provider);
  if (why) {
    if (problem) *problem = *why;
    return std::nullopt;
  }
  return r;
}

std::string formatPrefixRoute(const PrefixRoute& r) { return r.prefix + "=" + r.provider; }

std::optional<std::string> prefixRoutesProblem(std::string_view field, std::string_view provider,
                                               const std::vector<PrefixRoute>& routes) {
  if (routes.empty()) return std::nullopt;
  if (provider.empty())
    return fmt::format("{}: prefix routes need a campaign provider, for the numbers no prefix matches", field);
  if (routes.size() > kMaxPrefixRoutes)
    return fmt::format("{}: {} routes, more than {}", field, routes.size(), kMaxPrefixRoutes);
  for (std::size_t i = 0; i < routes.size(); ++i) {
    const PrefixRoute& r = routes[i];
    if (auto why = prefixProblem(field, r.prefix)) return why;
    if (auto why = validation::idProblem(fmt::format("{}: provider of prefix {}", field, r.prefix), r.provider))
      return why;
    if (r.provider.find(',') != std::string::npos)
      return fmt::format("{}: provider id '{}' contains ','", field, r.provider);
    for (std::size_t j = 0; j < i; ++j)
      if (routes[j].prefix == r.prefix) return fmt::format("{}: prefix {} is routed twice", field, r.prefix);
  }
  return std::nullopt;
}

std::vector<std::string> routeProviders(std::string_view provider, const std::vector<PrefixRoute>& routes) {
  std::vector<std::string> out;
  for (const PrefixRoute& r : routes)
    if (r.provider != provider && std::find(out.begin(), out.end(), r.provider) == out.end()) out.push_back(r.provider);
  return out;
}

std::optional<std::string> laneBurstProblem(std::string_view field, double burst, std::size_t lanes) {
  if (lanes <= 1 || burst >= static_cast<double>(lanes)) return std::nullopt;
  return fmt::format(
      "{}: the campaign's burst {} cannot be split among its {} providers (its own and its routes'): give a burst "
      "of at least {}",
      field, validation::numberText(burst), lanes, lanes);
}

std::string_view routedDigits(std::string_view recipient) noexcept {
  if (!recipient.empty() && recipient.front() == '+') recipient.remove_prefix(1);
  return recipient;
}

const PrefixRoute* matchPrefixRoute(const std::vector<PrefixRoute>& routes, std::string_view recipient) noexcept {
  const std::string_view digits = routedDigits(recipient);
  const PrefixRoute* best = nullptr;
  for (const PrefixRoute& r : routes)
    if (digits.starts_with(r.prefix) && (!best || r.prefix.size() > best->prefix.size())) best = &r;
  return best;
}

}  // namespace pacer
