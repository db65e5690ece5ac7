#include "pacer/sim/report.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

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
  return t + rulesTable(s, result);
}

}  // namespace pacer::sim
