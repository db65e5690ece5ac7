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
  return t;
}

}  // namespace pacer::sim
