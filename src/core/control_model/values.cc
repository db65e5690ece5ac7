#include "pacer/control/values.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>

#include "pacer/campaign_rules.h"
#include "pacer/campaign_state.h"
#include "pacer/message.h"
#include "pacer/quiet_hours.h"
#include "pacer/rate_limiter.h"
#include "pacer/validation.h"

namespace pacer::control {
namespace {

// The whole of `text` as a number, or nullopt ("12x", "", " 1" are not numbers).
std::optional<double> number(std::string_view text) {
  double v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return v;
}

}  // namespace

std::optional<double> parseRate(std::string_view text, std::string_view flag) {
  if (text == "unlimited") return std::nullopt;
  const auto refuse = [&](std::string_view why) {
    return InvalidValueError(
        fmt::format("{} '{}': {}; give messages per second from {} to {:.0f} (100, 100/s, "
                    "6000/min, 100k/h) or unlimited",
                    flag, text, why, validation::kMinRate, validation::kMaxRate));
  };
  // A unit: /s (the default), /min or /h; a multiplier: k or M.
  std::string_view number_part = text;
  double per = 1.0;
  if (const std::size_t slash = text.rfind('/'); slash != std::string_view::npos) {
    const std::string_view unit = text.substr(slash + 1);
    if (unit == "s" || unit == "sec")
      per = 1.0;
    else if (unit == "min" || unit == "m")
      per = 60.0;
    else if (unit == "h" || unit == "hour")
      per = 3600.0;
    else
      throw refuse(fmt::format("unknown unit '/{}' (use /s, /min or /h)", unit));
    number_part = text.substr(0, slash);
  }
  double scale = 1.0;
  if (!number_part.empty() && (number_part.back() == 'k' || number_part.back() == 'K')) {
    scale = 1e3;
    number_part.remove_suffix(1);
  } else if (!number_part.empty() && number_part.back() == 'M') {
    scale = 1e6;
    number_part.remove_suffix(1);
  }
  const std::optional<double> n = number(number_part);
  if (!n) throw refuse("not a number");
  if (!std::isfinite(*n)) throw refuse("not a finite number");
  if (*n < 0) throw refuse("a rate cannot be negative");
  const double v = *n * scale / per;
  if (v == 0) throw refuse("a rate of 0 sends nothing (pause the campaign instead)");
  if (auto why = validation::rateProblem("rate", v)) throw refuse(*why);
  return v;
}

std::int64_t parseCount(std::string_view text, std::string_view flag, std::int64_t min, std::string_view what) {
  std::int64_t v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  const bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
  if (!digits || ec != std::errc() || ptr != end || v < min || v > kMaxCount)
    throw InvalidValueError(
        fmt::format("{} '{}': {} is a whole number of messages, {} to {}", flag, text, what, min, kMaxCount));
  return v;
}

double parseBurst(std::string_view text, std::string_view flag) {
  const std::optional<double> v = number(text);
  if (!v || validation::burstProblem(flag, *v))
    throw InvalidValueError(fmt::format(
        "{} '{}': a burst is a number of messages, at least 1 and at most {:.0f} (messages that may go at once)", flag,
        text, validation::kMaxBurst));
  return *v;
}

double parseWeight(std::string_view text, std::string_view flag) {
  const std::optional<double> v = number(text);
  if (!v || validation::weightProblem(flag, *v))
    throw InvalidValueError(fmt::format(
        "{} '{}': a weight is a number above 0 and at most 1000000 (the campaign's share of the sink; 1 is even)", flag,
        text));
  return *v;
}

double defaultBurst(std::optional<double> rate) {
  if (!rate) return 1;
  return std::ceil(*rate / 100.0) + 1;
}

Limit makeLimit(std::optional<double> rate, std::optional<double> burst) {
  if (!rate && burst)
    throw InvalidValueError("--burst: an unlimited rate has no burst; give a rate with --burst, or leave --burst out");
  return Limit{rate, burst.value_or(defaultBurst(rate))};
}

void checkId(std::string_view id, std::string_view what) {
  if (auto why = validation::idProblem(fmt::format("{} id", what), id)) throw InvalidValueError(*why);
}

void checkName(std::string_view name) {
  if (auto why = validation::nameProblem("--name", name)) throw InvalidValueError(*why);
}

std::string_view actionName(CampaignAction a) noexcept {
  switch (a) {
    case CampaignAction::kPause: return "pause";
    case CampaignAction::kResume: return "resume";
    case CampaignAction::kCancel: return "cancel";
    case CampaignAction::kSetRate: return "set-rate";
    case CampaignAction::kSetRules: return "set-rules";
  }
  return "?";
}

Transition decideTransition(CampaignAction action, std::string_view state, std::string_view id) {
  using K = Transition::Kind;
  using S = CampaignState;
  const std::optional<S> now = parseCampaignState(state);
  if (!now)
    return {K::kRefused, "",
            fmt::format("campaign '{}' is in state '{}', which this pacerctl does not know", id, state)};
  const auto to = [](S s) { return std::string(campaignStateName(s)); };
  switch (action) {
    case CampaignAction::kPause:
      if (*now == S::kPaused) return {K::kAlready, to(S::kPaused), ""};
      if (*now == S::kActive) return {K::kChange, to(S::kPaused), ""};
      return {K::kRefused, "", fmt::format("campaign '{}' is {}: there is nothing to pause", id, state)};
    case CampaignAction::kResume:
      if (*now == S::kActive) return {K::kAlready, to(S::kActive), ""};
      if (*now == S::kPaused) return {K::kChange, to(S::kActive), ""};
      return {K::kRefused, "",
              fmt::format("campaign '{}' is {} and cannot be resumed; create a new campaign to send again", id, state)};
    case CampaignAction::kCancel:
      if (*now == S::kCancelled) return {K::kAlready, to(S::kCancelled), ""};
      if (isLive(*now)) return {K::kChange, to(S::kCancelled), ""};
      return {K::kRefused, "", fmt::format("campaign '{}' is completed: there is nothing to cancel", id)};
    case CampaignAction::kSetRate:
    case CampaignAction::kSetRules:
      if (isLive(*now)) return {K::kChange, std::string(state), ""};
      return {K::kRefused, "",
              fmt::format("campaign '{}' is {}: {} no longer applies to it; create a new campaign to send again", id,
                          state, action == CampaignAction::kSetRate ? "a rate" : "a rule")};
  }
  return {K::kRefused, "", "unknown action"};
}

std::string notifyPayload(std::string_view kind, std::string_view id, std::string_view change) {
  nlohmann::ordered_json j;
  j["kind"] = kind;
  j["id"] = id;
  j["change"] = change;
  return j.dump();
}

std::optional<ControlNotice> parseNotifyPayload(std::string_view payload) noexcept {
  try {
    const auto j = nlohmann::json::parse(payload, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) return std::nullopt;
    const auto text = [&](const char* key) -> std::optional<std::string> {
      const auto it = j.find(key);
      if (it == j.end() || !it->is_string()) return std::nullopt;
      return it->get<std::string>();
    };
    auto kind = text("kind");
    auto id = text("id");
    auto change = text("change");
    if (!kind || !id || !change || id->empty()) return std::nullopt;
    if (*kind != "campaign" && *kind != "provider") return std::nullopt;
    return ControlNotice{std::move(*kind), std::move(*id), std::move(*change)};
  } catch (const std::exception&) {  // bad_alloc; parse errors do not throw here
    return std::nullopt;
  }
}

}  // namespace pacer::control

namespace pacer::control {
namespace {

// The row's priority and recipient rules into `ci`, or why they cannot be used.
std::optional<std::string> rulesOf(const CampaignRow& row, CampaignInfo& ci) {
  ci.priority_class = row.priority_class;
  ci.time_zone = row.time_zone;
  if (!row.frequency_cap.empty()) {
    std::string error;
    ci.frequency_cap = parseFrequencyCap(row.frequency_cap, &error);
    if (!ci.frequency_cap) return fmt::format("frequency_cap: {}", error);
  }
  const std::optional<CapPolicy> policy = parseCapPolicy(row.cap_policy);
  if (!policy) return fmt::format("unknown cap_policy '{}' (suppress or defer)", row.cap_policy);
  ci.cap_policy = *policy;
  if (!row.quiet_hours.empty()) {
    const QuietWindowParse q = parseQuietWindow(row.quiet_hours);
    if (!q.window) return fmt::format("quiet_hours: {}", q.error);
    if (!q.window->none()) ci.quiet_hours = formatQuietWindow(*q.window);
  }
  if (!ci.quiet_hours.empty() && ci.time_zone.empty())
    return fmt::format("quiet_hours {} without a time_zone (the zone of messages that carry no tz header)",
                       ci.quiet_hours);
  return std::nullopt;
}

}  // namespace

std::optional<CampaignInfo> campaignInfoOf(const CampaignRow& row, std::string* problem) {
  const std::optional<CampaignState> state = parseCampaignState(row.state);
  if (!state) {
    if (problem) *problem = fmt::format("unknown state '{}'", row.state);
    return std::nullopt;
  }
  for (auto why : {validation::idProblem("id", row.id), validation::nameProblem("name", row.name)}) {
    if (!why) continue;
    if (problem) *problem = *why;
    return std::nullopt;
  }
  CampaignInfo ci;
  ci.id = row.id;
  if (row.limit.rate) ci.limit = RateLimit{*row.limit.rate, row.limit.burst};
  ci.weight = row.weight;
  ci.provider = row.provider;
  ci.state = *state;
  ci.default_ttl_ms = row.default_ttl_ms;
  ci.failover = row.failover;
  ci.routes = row.routes;
  ci.has_callback = !row.callback_url.empty();
  for (auto why :
       {validation::failoverProblem("failover", ci.provider, ci.failover),
        prefixRoutesProblem("routes", ci.provider, ci.routes),
        row.limit.rate ? laneBurstProblem("routes", row.limit.burst, 1 + routeProviders(ci.provider, ci.routes).size())
                       : std::nullopt}) {
    if (!why) continue;
    if (problem) *problem = *why;
    return std::nullopt;
  }
  if (auto why =
          row.callback_url.empty() ? std::nullopt : validation::callbackUrlProblem("callback_url", row.callback_url)) {
    if (problem) *problem = *why;
    return std::nullopt;
  }
  if (auto why = rulesOf(row, ci)) {
    if (problem) *problem = *why;
    return std::nullopt;
  }
  if (auto why = rowProblem(ci)) {
    if (problem) *problem = *why;
    return std::nullopt;
  }
  return ci;
}

std::optional<ProviderInfo> providerInfoOf(const ProviderRow& row, std::string* problem) {
  if (auto why = validation::idProblem("id", row.id)) {
    if (problem) *problem = *why;
    return std::nullopt;
  }
  ProviderInfo p{row.id, std::nullopt};
  if (row.limit.rate) p.limit = RateLimit{*row.limit.rate, row.limit.burst};
  if (auto why = rowProblem(p)) {
    if (problem) *problem = *why;
    return std::nullopt;
  }
  return p;
}

}  // namespace pacer::control
