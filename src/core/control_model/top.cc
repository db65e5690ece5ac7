#include "pacer/control/top.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "pacer/campaign_state.h"
#include "pacer/control/table.h"

namespace pacer::control {
namespace {

using Json = nlohmann::ordered_json;

template <typename T>
Json orNull(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

std::string rateText(std::optional<double> r) { return r ? fmt::format("{:.1f}/s", *r) : "-"; }

std::string boundText(std::int64_t n, bool lower_bound) {
  return lower_bound ? fmt::format(">={}", n) : std::to_string(n);
}

}  // namespace

std::optional<double> achievedRate(const RateSample& older, const RateSample& newer) noexcept {
  const double span = newer.at_s - older.at_s;
  if (!(span > 0) || newer.sent < older.sent) return std::nullopt;
  return static_cast<double>(newer.sent - older.sent) / span;
}

Backlog backlogOf(std::optional<std::int64_t> total, std::int64_t done, std::int64_t parked) noexcept {
  if (total) return Backlog{std::max<std::int64_t>(0, *total - done), false};
  return Backlog{std::max<std::int64_t>(0, parked), true};
}

std::optional<double> progressOf(std::optional<std::int64_t> total, std::int64_t done) noexcept {
  if (!total) return std::nullopt;
  if (*total <= 0) return 1.0;
  return std::clamp(static_cast<double>(done) / static_cast<double>(*total), 0.0, 1.0);
}

std::optional<double> etaSeconds(const Backlog& backlog, std::optional<double> rate) noexcept {
  if (backlog.messages <= 0) return backlog.lower_bound ? std::nullopt : std::optional<double>(0.0);
  if (!rate || !(*rate > 0) || !std::isfinite(*rate)) return std::nullopt;
  return static_cast<double>(backlog.messages) / *rate;
}

std::string progressBar(std::optional<double> fraction, int width) {
  if (!fraction || std::isnan(*fraction)) return "-";
  const double f = std::clamp(*fraction, 0.0, 1.0);
  width = std::max(width, 1);
  const int filled = std::min(width, static_cast<int>(std::floor(f * width)));
  const int percent = std::min(100, static_cast<int>(std::floor(f * 100)));
  return fmt::format("[{}{}] {:>3}%", std::string(static_cast<std::size_t>(filled), '#'),
                     std::string(static_cast<std::size_t>(width - filled), '.'), percent);
}

std::string formatDuration(std::optional<double> seconds) {
  if (!seconds || std::isnan(*seconds) || *seconds < 0) return "-";
  if (*seconds >= 100 * 3600.0) return ">99h";
  const auto s = static_cast<std::int64_t>(std::ceil(*seconds));
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
}

TopFigures figuresOf(const TopRow& row) noexcept {
  TopFigures f;
  f.backlog = backlogOf(row.total, row.sent + row.failed + row.rejected, row.parked);
  f.progress = progressOf(row.total, row.sent + row.failed + row.rejected);
  f.eta_s = etaSeconds(f.backlog, row.achieved);
  return f;
}

namespace {

struct Totals {
  std::int64_t active = 0, paused = 0, sent = 0, failed = 0, backlog = 0;
  bool backlog_lower_bound = false;
  double achieved = 0;
};

Totals totalsOf(const TopFrame& frame) {
  Totals t;
  for (const TopRow& r : frame.rows) {
    (r.state == campaignStateName(CampaignState::kPaused) ? t.paused : t.active) += 1;
    t.sent += r.sent;
    t.failed += r.failed;
    const Backlog b = figuresOf(r).backlog;
    t.backlog += b.messages;
    t.backlog_lower_bound = t.backlog_lower_bound || b.lower_bound;
    t.achieved += r.achieved.value_or(0);
  }
  return t;
}

}  // namespace

std::string renderTopText(const TopFrame& frame, int bar_width) {
  const Totals t = totalsOf(frame);
  std::string out = fmt::format(
      "pacer top  {}  campaigns {}: {} active, {} paused  sent {}  failed {}  backlog {}  achieved {:.1f}/s over "
      "{:g}s\n\n",
      frame.at_utc, frame.rows.size(), t.active, t.paused, t.sent, t.failed,
      boundText(t.backlog, t.backlog_lower_bound), t.achieved, frame.window_s);
  if (frame.rows.empty()) return out + "no active or paused campaigns\n";
  Table table({"ID", "STATE", "PROVIDER", "RATE", "ACHIEVED", "SENT", "FAILED", "BACKLOG", "PROGRESS", "ETA"},
              {false, false, false, true, true, true, true, true, false, true});
  for (const TopRow& r : frame.rows) {
    const TopFigures f = figuresOf(r);
    std::string eta = formatDuration(f.eta_s);
    if (f.backlog.lower_bound && f.eta_s) eta = ">=" + eta;
    table.add({r.id, r.state, r.provider.empty() ? "-" : r.provider,
               r.send_rate ? fmt::format("{:g}/s", *r.send_rate) : "unlimited", rateText(r.achieved),
               std::to_string(r.sent), std::to_string(r.failed), boundText(f.backlog.messages, f.backlog.lower_bound),
               progressBar(f.progress, bar_width), eta});
  }
  return out + table.render();
}

std::string renderTopJson(const TopFrame& frame) {
  const Totals t = totalsOf(frame);
  Json rows = Json::array();
  for (const TopRow& r : frame.rows) {
    const TopFigures f = figuresOf(r);
    rows.push_back(Json{{"id", r.id},
                        {"state", r.state},
                        {"provider", r.provider.empty() ? Json(nullptr) : Json(r.provider)},
                        {"send_rate", orNull(r.send_rate)},
                        {"achieved_rate", orNull(r.achieved)},
                        {"total", orNull(r.total)},
                        {"sent", r.sent},
                        {"failed", r.failed},
                        {"rejected", r.rejected},
                        {"parked", r.parked},
                        {"backlog", f.backlog.messages},
                        {"backlog_lower_bound", f.backlog.lower_bound},
                        {"progress", orNull(f.progress)},
                        {"eta_s", orNull(f.eta_s)}});
  }
  const Json j{{"at", frame.at_utc},
               {"window_s", frame.window_s},
               {"totals",
                {{"campaigns", frame.rows.size()},
                 {"active", t.active},
                 {"paused", t.paused},
                 {"achieved_rate", t.achieved},
                 {"sent", t.sent},
                 {"failed", t.failed},
                 {"backlog", t.backlog},
                 {"backlog_lower_bound", t.backlog_lower_bound}}},
               {"campaigns", rows}};
  return j.dump(2) + "\n";
}

std::string terminalRedraw(const std::string& frame) {
  std::string out = "\x1b[H";
  out.reserve(frame.size() + 64);
  for (char c : frame) {
    if (c == '\n') out += "\x1b[K";
    out += c;
  }
  return out + "\x1b[J";
}

double produceDueS(std::int64_t index, double rate) noexcept {
  if (!(rate > 0) || index <= 0) return 0;
  return static_cast<double>(index) / rate;
}

}  // namespace pacer::control
