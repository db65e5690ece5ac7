#include "pacer/control/why.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace pacer::control {
namespace {

std::string countsText(const HealthFacts& f) {
  std::string out;
  if (f.throttled_total) out += fmt::format("{} 429/503", *f.throttled_total);
  if (f.server_errors_total) out += fmt::format("{}{} 5xx", out.empty() ? "" : ", ", *f.server_errors_total);
  return out.empty() ? "" : fmt::format(" ({} in all)", out);
}

bool lowered(const std::optional<double>& effective, const std::optional<double>& configured) {
  return effective && configured && *effective < 0.99 * *configured;
}

}  // namespace

ProviderHealth healthOf(const HealthFacts& f) {
  const std::string counts = countsText(f);
  if (f.circuit_open)
    return {"breaker_open", fmt::format("breaker open: provider {} failed repeatedly; it pauses for the cooldown, "
                                        "then sends slower{}",
                                        f.provider, counts)};
  if (f.degraded)
    return {"degraded",
            fmt::format("degraded: the global quota (Redis) does not answer for {}; each worker sends at its safe "
                        "share{}",
                        f.provider, counts)};
  if (f.paused) return {"throttled", fmt::format("throttled: paused after a 429/503{}", counts)};
  if (lowered(f.effective, f.configured))
    return {"throttled", fmt::format("throttled: effective rate {:.0f}/s, below the configured {:g}/s{}",
                                     *f.effective, *f.configured, counts)};
  if (f.server_errors_per_s && *f.server_errors_per_s > 0)
    return {"failing", fmt::format("failing: {:.1f} 5xx answers/s now{}", *f.server_errors_per_s, counts)};
  if (!f.known) return {"unknown", "unknown: no worker has reported on it yet"};
  return {"ok", fmt::format("ok{}", counts)};
}

LimitedBy limitedByOf(const LimitFacts& f) {
  if (f.paused) return {"paused", "paused by an operator"};
  if (!f.backlog_lower_bound && f.backlog == 0) return {"done", "nothing left to send (sent + failed = total)"};
  // Before the pause: an open breaker pauses its provider too, and is the cause.
  if (f.provider_circuit_open)
    return {"provider_breaker",
            fmt::format("provider {}'s circuit breaker is open after sustained faults: it pauses for the "
                        "cooldown, then sends slower",
                        f.provider)};
  if (f.provider_paused) return {"provider_paused", fmt::format("provider {} paused after a 429/503", f.provider)};
  if (f.own_rate && *f.own_rate <= 0) return {"campaign_rate", "its send_rate is 0"};
  if (f.achieved && f.own_rate && *f.achieved >= 0.9 * *f.own_rate)
    return {"campaign_rate", fmt::format("at its send_rate ({:g}/s)", *f.own_rate)};
  if (f.achieved && !f.provider.empty() && f.provider_rate && *f.provider_rate > 0 &&
      f.provider_achieved >= 0.9 * *f.provider_rate) {
    return {"provider_rate",
            lowered(f.provider_rate, f.provider_configured)
                ? fmt::format("provider {} at its effective rate {:.0f}/s (configured {:g}/s, lowered after "
                              "throttling)",
                              f.provider, *f.provider_rate, *f.provider_configured)
                : fmt::format("provider {} at its rate {:g}/s, shared by its campaigns", f.provider,
                              *f.provider_rate)};
  }
  if ((f.retry_waiting.value_or(0) > 0 || f.retries_per_s.value_or(0) > 0) &&
      f.provider_server_errors_per_s.value_or(0) > 0) {
    const std::string retrying = f.retry_waiting.value_or(0) > 0
                                     ? fmt::format("{} waiting for a retry", *f.retry_waiting)
                                     : fmt::format("{:.1f} retries/s", *f.retries_per_s);
    return {"server_errors", fmt::format("retrying after 5xx answers from provider {} ({:.1f}/s now): {}{}", f.provider,
                                         *f.provider_server_errors_per_s, retrying,
                                         f.retries_total ? fmt::format(", {} retries in all", *f.retries_total) : "")};
  }
  // A worker's memory and the parked rows: one message is in one of them at a time.
  const auto waiting = [](std::optional<std::uint64_t> in_memory, std::int64_t parked) {
    return in_memory.value_or(0) + static_cast<std::uint64_t>(std::max<std::int64_t>(0, parked));
  };
  const auto ofThem = [](std::int64_t parked) {
    return parked > 0 ? fmt::format(" ({} of them parked)", parked) : std::string();
  };
  if (const std::uint64_t n = waiting(f.quiet_waiting, f.parked_quiet); n > 0)
    return {"quiet_hours",
            fmt::format("{} waiting for their recipients' quiet hours to end{}", n, ofThem(f.parked_quiet))};
  if (const std::uint64_t n = waiting(f.cap_waiting, f.parked_capped); n > 0)
    return {"frequency_cap", fmt::format("{} waiting for a frequency cap (recipients reached their limit for now){}", n,
                                         ofThem(f.parked_capped))};
  if (!f.achieved) return {"unknown", "no achieved rate yet"};
  if (f.backlog_lower_bound && f.backlog == 0)
    return {"no_input", "no messages waiting that the database knows of (total unknown, none parked)"};
  return {"below_limits", "below every configured limit: the sink, the workers or the input"};
}

std::optional<LimitedBy> failoverLimit(const std::string& route, const std::string& reason,
                                       const std::vector<RouteStatus>& routes) {
  std::string text;
  if (!reason.empty()) text = fmt::format("via {}: {}", route, reason);
  for (const RouteStatus& r : routes) {
    if (r.prefixes.empty() || r.reason.empty()) continue;
    if (!text.empty()) text += " | ";
    text += fmt::format("route {} -> {}; failover to {}: {}", fmt::join(r.prefixes, ","), r.provider, r.via, r.reason);
  }
  if (text.empty()) return std::nullopt;
  return LimitedBy{"failover", std::move(text)};
}

std::string shortWord(const std::string& code) {
  static const std::pair<const char*, const char*> kWords[] = {
      {"campaign_rate", "own rate"},    {"provider_rate", "provider"},     {"provider_paused", "prov paused"},
      {"provider_breaker", "breaker"},  {"server_errors", "5xx retries"},  {"quiet_hours", "quiet hours"},
      {"frequency_cap", "freq cap"},    {"no_input", "no input"},          {"below_limits", "nothing"},
      {"breaker_open", "breaker open"}, {"unknown", "-"},                  {"", "-"}};
  for (const auto& [c, word] : kWords)
    if (code == c) return word;
  return code;  // paused, done, ok, throttled, failing, degraded
}

}  // namespace pacer::control
