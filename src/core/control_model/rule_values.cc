// The recipient rules as an operator types them (pacerctl campaign create and
// set-rules): checked and normalised before anything is written, so a row
// pacerctl writes passes campaignInfoOf's checks.
#include <fmt/format.h>

#include <algorithm>

#include "pacer/campaign_rules.h"
#include "pacer/control/values.h"
#include "pacer/quiet_hours.h"
#include "pacer/validation.h"

namespace pacer::control {
namespace {

constexpr std::size_t kMaxClassBytes = 64;
constexpr std::size_t kMaxZoneBytes = 64;

bool onlyOf(std::string_view text, std::string_view extra) {
  return std::all_of(text.begin(), text.end(), [&](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           extra.find(c) != std::string_view::npos;
  });
}

}  // namespace

std::string parseClassName(std::string_view text, std::string_view flag) {
  if (text == "default") return "";
  if (text.empty() || text.size() > kMaxClassBytes || !onlyOf(text, "_-."))
    throw InvalidValueError(fmt::format(
        "{} '{}': a priority class is 1 to 64 letters, digits, '_', '-' or '.' (one of pacerd's priority.classes), "
        "or default",
        flag, text));
  return std::string(text);
}

std::string parseQuietHoursText(std::string_view text, std::string_view flag) {
  if (text == "none") return "";
  // parseQuietWindow takes "" as no window; a flag given empty is a mistake ($UNSET).
  const QuietWindowParse q = text.empty() ? QuietWindowParse{} : parseQuietWindow(text);
  if (!q.window)
    throw InvalidValueError(fmt::format("{}: {}; give HH:MM-HH:MM in the recipient's local time (21:00-08:00) or none",
                                        flag, text.empty() ? std::string("empty") : q.error));
  return q.window->none() ? std::string() : formatQuietWindow(*q.window);
}

std::string parseTimeZoneText(std::string_view text, std::string_view flag) {
  if (text == "none") return "";
  if (text.empty() || text.size() > kMaxZoneBytes || !onlyOf(text, "/_-+"))
    throw InvalidValueError(
        fmt::format("{} '{}': give an IANA time zone name (Europe/London, America/New_York, UTC) or none", flag, text));
  return std::string(text);
}

std::string parseFrequencyCapText(std::string_view text, std::string_view flag) {
  if (text == "none") return "";
  std::string error;
  const std::optional<FrequencyCapRule> rule = parseFrequencyCap(text, &error);
  if (!rule)
    throw InvalidValueError(fmt::format(
        "{}: {}; give LIMIT/WINDOW, at most LIMIT messages per recipient in any WINDOW (3/24h, 1/30m, 10/7d), or "
        "none",
        flag, error));
  // Kept as typed: formatFrequencyCap would show 3/24h as 3/1d.
  return std::string(text);
}

std::string parseCapPolicyText(std::string_view text, std::string_view flag) {
  const std::optional<CapPolicy> p = parseCapPolicy(text);
  if (!p)
    throw InvalidValueError(fmt::format(
        "{} '{}': give suppress (a capped message gets a suppressed ledger row) or defer (it waits until the cap "
        "allows it)",
        flag, text));
  return std::string(capPolicyName(*p));
}

std::int64_t parseTtlText(std::string_view text, std::string_view flag) {
  if (text == "none" || text == "0") return 0;
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  const std::string_view unit = text.substr(digits);
  std::int64_t per = 0;
  if (unit.empty() || unit == "s")
    per = 1000;
  else if (unit == "m")
    per = 60'000;
  else if (unit == "h")
    per = 3'600'000;
  else if (unit == "d")
    per = 86'400'000;
  if (digits == 0 || digits > 9 || per == 0)
    throw InvalidValueError(fmt::format(
        "{} '{}': give a lifetime in whole seconds (300) or with a unit (90s, 5m, 2h, 1d), or none", flag, text));
  const std::int64_t ms = std::stoll(std::string(text.substr(0, digits))) * per;
  if (auto why = validation::ttlProblem(flag, ms)) throw InvalidValueError(*why);
  return ms;
}

std::vector<std::string> parseFailoverText(std::string_view text, std::string_view flag) {
  std::vector<std::string> out;
  if (text == "none" || text.empty()) return out;
  for (std::size_t at = 0; at <= text.size();) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    out.emplace_back(text.substr(at, comma - at));
    at = comma + 1;
  }
  // The provider itself is checked where the campaign's provider is known.
  if (auto why = validation::failoverProblem(flag, "\n", out)) throw InvalidValueError(*why);
  return out;
}

std::vector<PrefixRoute> parseRoutesText(std::string_view text, std::string_view flag) {
  std::vector<PrefixRoute> out;
  if (text == "none" || text.empty()) return out;
  for (std::size_t at = 0; at <= text.size();) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    std::string why;
    std::optional<PrefixRoute> r = parsePrefixRoute(flag, text.substr(at, comma - at), &why);
    if (!r) throw InvalidValueError(why);
    out.push_back(std::move(*r));
    at = comma + 1;
  }
  // The campaign's provider is checked where it is known.
  if (auto why = prefixRoutesProblem(flag, "\n", out)) throw InvalidValueError(*why);
  return out;
}

std::string formatRoutes(const std::vector<PrefixRoute>& routes) {
  std::string out;
  for (const PrefixRoute& r : routes) out += (out.empty() ? "" : ",") + formatPrefixRoute(r);
  return out.empty() ? "none" : out;
}

std::string formatFailover(const std::vector<std::string>& failover) {
  std::string out;
  for (const std::string& id : failover) out += (out.empty() ? "" : ",") + id;
  return out.empty() ? "none" : out;
}

std::string parseCallbackUrlText(std::string_view text, std::string_view flag) {
  if (text == "none" || text.empty()) return {};
  if (auto why = validation::callbackUrlProblem(flag, text)) throw InvalidValueError(*why);
  return std::string(text);
}

std::string formatTtl(std::int64_t ms) {
  if (ms <= 0) return "none";
  static constexpr std::pair<std::int64_t, const char*> kUnits[] = {
      {86'400'000, "d"}, {3'600'000, "h"}, {60'000, "m"}, {1000, "s"}};
  for (const auto& [per, unit] : kUnits)
    if (ms % per == 0) return fmt::format("{}{}", ms / per, unit);
  return fmt::format("{}ms", ms);
}

}  // namespace pacer::control
