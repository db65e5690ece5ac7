#include "pacer/sim/report.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>

namespace pacer::sim {
namespace {

template <typename T>
void writeArray(std::FILE* out, const std::vector<T>& v) {
  std::fputc('[', out);
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) std::fputc(',', out);
    fmt::print(out, "{}", v[i]);
  }
  std::fputc(']', out);
}

// The recipient rules' fields of a campaign (only those it has).
void writeRules(std::FILE* out, const RuleResult& r) {
  fmt::print(out, ", \"class\": {}", nlohmann::json(r.priority_class).dump());
  if (r.waits) {
    fmt::print(out, ", \"waits\": {{\"count\": {}, \"p50_ms\": {}, \"p99_ms\": {}, \"max_ms\": {}}}", r.waits->count,
               r.waits->p50_ms, r.waits->p99_ms, r.waits->max_ms);
  }
  if (r.capped) {
    fmt::print(out, ", \"cap\": {{\"suppressed\": {}, \"deferred\": {}, \"recipients_over_cap\": {}}}", r.suppressed,
               r.deferred, r.recipients_over_cap);
  }
  if (r.quiet) {
    fmt::print(out, ", \"quiet_hours\": {{\"waited\": {}, \"sent_in_quiet_window\": {}}}", r.quiet_held,
               r.sent_in_quiet_window);
  }
  if (r.capped || r.quiet) fmt::print(out, ", \"waiting_at_end\": {}", r.waiting);
  if (r.lifetime_s) fmt::print(out, ", \"lifetime_s\": {}, \"expired\": {}", *r.lifetime_s, r.expired);
}

// What each provider of a failover list carried.
void writeRoutes(std::FILE* out, const SeriesResult& r) {
  if (r.by_provider.empty()) return;
  std::fputs(", \"by_provider\": {", out);
  for (std::size_t i = 0; i < r.by_provider.size(); ++i)
    fmt::print(out, "{}{}: {}", i ? ", " : "", nlohmann::json(r.by_provider[i].first).dump(), r.by_provider[i].second);
  std::fputc('}', out);
}

// A modelled provider's answers and controller (SeriesResult::Answers).
void writeAnswers(std::FILE* out, const SeriesResult::Answers& a) {
  fmt::print(out,
             ", \"would_accept_per_s\": {}, \"attempts\": {}, \"throttled\": {}, \"faults\": {}, "
             "\"capacity_cuts\": {}, \"noise_verdicts\": {}, \"noise\": {:.4f}, \"throttled_per_s\": ",
             a.would_accept, a.attempts, a.throttled, a.faults, a.capacity_cuts, a.noise_verdicts, a.noise);
  writeArray(out, a.throttled_per_s);
  std::fputs(", \"effective_per_s\": [", out);
  for (std::size_t i = 0; i < a.effective_per_s.size(); ++i) fmt::print(out, "{}{:.2f}", i ? "," : "", a.effective_per_s[i]);
  std::fputc(']', out);
}

void writeSeries(std::FILE* out, const std::vector<SeriesResult>& all, bool bins, bool campaigns) {
  std::fputc('{', out);
  for (std::size_t i = 0; i < all.size(); ++i) {
    const SeriesResult& r = all[i];
    fmt::print(out, "{}\n  {}: {{\"sent\": {}", i ? "," : "", nlohmann::json(r.id).dump(), r.sent);
    if (campaigns) {
      if (r.finished_s) {
        fmt::print(out, ", \"finished_s\": {}", *r.finished_s);
      } else {
        std::fputs(", \"finished_s\": null", out);
      }
      writeRules(out, r.rules);
      writeRoutes(out, r);
    }
    if (r.rate) {
      fmt::print(out, ", \"rate\": {}, \"burst\": {}", *r.rate, r.burst);
    } else {
      std::fputs(", \"rate\": null, \"burst\": null", out);
    }
    std::fputs(", \"per_s\": ", out);
    writeArray(out, r.per_s);
    std::fputs(", \"bins\": ", out);
    if (bins) {
      writeArray(out, r.bins);
    } else {
      std::fputs("[]", out);
    }
    if (r.answers) writeAnswers(out, *r.answers);
    std::fputc('}', out);
  }
  std::fputc('}', out);
}

// One line per rule a campaign has: its class (when not the only one), the
// waits of its arrivals, its cap, its quiet hours, with the independent checks.
std::string rulesTable(const Scenario& s, const SimResult& result) {
  std::string t;
  bool mixed = false;  // campaigns of more than one class
  for (const CampaignScenario& c : s.campaigns) mixed = mixed || c.priority != s.campaigns.front().priority;
  for (std::size_t i = 0; i < result.campaigns.size(); ++i) {
    const CampaignScenario& c = s.campaigns[i];
    const RuleResult& r = result.campaigns[i].rules;
    const std::string who = fmt::format("{:<10} {:<16}", "campaign", c.id);
    if (r.waits) {
      t += fmt::format("{} class {} (rank {}): {} arrived at {:g}/s, wait p50 {:.0f} ms, p99 {:.0f} ms, max {:.0f} ms\n",
                       who, r.priority_class, c.priority, r.waits->count, *c.arrival_per_s, r.waits->p50_ms,
                       r.waits->p99_ms, r.waits->max_ms);
    } else if (mixed) {
      t += fmt::format("{} class {} (rank {})\n", who, r.priority_class, c.priority);
    }
    if (r.capped) {
      t += fmt::format("{} cap {} ({}) over {} recipients: suppressed {}, deferred {}, recipients over cap: {}\n", who,
                       formatFrequencyCap(*c.cap), capPolicyName(c.cap_policy), c.recipients, r.suppressed,
                       r.deferred, r.recipients_over_cap);
    }
    if (r.quiet) {
      t += fmt::format("{} quiet hours {} in {} zones: waited for quiet hours {}, sent inside quiet window: {}\n", who,
                       formatQuietWindow(*c.quiet_hours), c.time_zones.size(), r.quiet_held, r.sent_in_quiet_window);
    }
    if (r.capped || r.quiet) t += fmt::format("{} still waiting at the end: {}\n", who, r.waiting);
    if (r.lifetime_s) {
      const std::uint64_t offered = result.campaigns[i].sent + r.expired;
      t += fmt::format("{} lifetime {:g} s: expired {} of {} sent or expired ({:.1f}%), never sent, no token spent\n",
                       who, *r.lifetime_s, r.expired, offered,
                       offered > 0 ? 100.0 * static_cast<double>(r.expired) / static_cast<double>(offered) : 0.0);
    }
    if (!result.campaigns[i].by_provider.empty()) {
      std::string routes;
      for (const auto& [name, n] : result.campaigns[i].by_provider)
        routes += fmt::format("{}{} {}", routes.empty() ? "" : ", ", name, n);
      t += fmt::format("{} carried by (in failover order): {}\n", who, routes);
    }
  }
  return t;
}

// One line per modelled provider: what it took against what it would take,
// after the first 10 s (or the whole run when shorter), its refusals and
// the controller's moves.
std::string answersTable(const Scenario& s, const SimResult& result) {
  std::string t;
  for (const SeriesResult& p : result.providers) {
    if (!p.answers) continue;
    const SeriesResult::Answers& a = *p.answers;
    const std::size_t from = p.per_s.size() > 20 ? 10 : 0;
    std::uint64_t accepted = 0, throttled = 0;
    for (std::size_t i = from; i < p.per_s.size(); ++i) {
      accepted += p.per_s[i];
      throttled += a.throttled_per_s[i];
    }
    const double span = std::max(1e-9, std::min(s.duration_s, static_cast<double>(p.per_s.size())) -
                                            static_cast<double>(from));
    const double per_s = static_cast<double>(accepted) / span;
    t += fmt::format(
        "{:<10} {:<16} from {} s: accepted {:.1f}/s of the {:.1f}/s it would take ({:.1f}%), {:.1f} throttles/min; "
        "in all {} throttled, {} faults, {} cuts, {} taken back, noise {:.3f}\n",
        "answers", p.id, from, per_s, a.would_accept, a.would_accept > 0 ? 100 * per_s / a.would_accept : 0.0,
        60 * static_cast<double>(throttled) / span, a.throttled, a.faults, a.capacity_cuts, a.noise_verdicts, a.noise);
  }
  return t;
}

}  // namespace

void writeJson(std::FILE* out, const SimResult& result, bool bins, double wall_ms) {
  fmt::print(out, "{{\"tick_ms\": {},\n \"campaigns\": ", result.tick_ms);
  writeSeries(out, result.campaigns, bins, true);
  std::fputs(",\n \"providers\": ", out);
  writeSeries(out, result.providers, bins, false);
  fmt::print(out, ",\n \"wall_ms\": {:.1f}}}\n", wall_ms);
}

std::string summaryTable(const Scenario& s, const SimResult& result) {
  std::string t = fmt::format("{:<10} {:<16} {:>12} {:>14} {:>10} {:>12}\n", "kind", "id", "rate/s", "achieved/s",
                              "sent", "finished_s");
  auto row = [&](const char* kind, const SeriesResult& r, double active_s, bool finite) {
    const std::string rate = r.rate ? fmt::format("{:g}", *r.rate) : "unlimited";
    const double achieved = active_s > 0 ? static_cast<double>(r.sent) / active_s : 0.0;
    const std::string fin = r.finished_s ? fmt::format("{:.2f}", *r.finished_s) : (finite ? "not yet" : "-");
    t += fmt::format("{:<10} {:<16} {:>12} {:>14.1f} {:>10} {:>12}\n", kind, r.id, rate, achieved, r.sent, fin);
  };
  for (std::size_t i = 0; i < result.campaigns.size(); ++i) {
    const CampaignScenario& c = s.campaigns[i];
    const SeriesResult& r = result.campaigns[i];
    // Achieved rate over the time the campaign had work.
    const double end = r.finished_s ? *r.finished_s + result.tick_ms / 1000.0 : s.duration_s;
    row("campaign", r, end - c.start_s, c.messages.has_value());
  }
  for (const SeriesResult& p : result.providers) row("provider", p, s.duration_s, false);
  return t + answersTable(s, result) + rulesTable(s, result);
}

}  // namespace pacer::sim
