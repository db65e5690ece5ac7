#include "pacer/control/top.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <type_traits>

#include "pacer/campaign_state.h"
#include "pacer/control/table.h"
#include "pacer/validation.h"

namespace pacer::control {
namespace {

using Json = nlohmann::ordered_json;

// A configured rate as top shows it; a stored NaN or Infinity (a row written
// past the checks) is marked, never "nan/s".
std::string rateCell(const std::optional<double>& r) {
  if (!r) return "unlimited";
  return std::isfinite(*r) ? fmt::format("{:g}/s", *r) : fmt::format("invalid ({})", validation::numberText(*r));
}

template <typename T>
Json orNull(const std::optional<T>& v) {
  if constexpr (std::is_floating_point_v<T>) {
    // NaN or Infinity (a row written past the checks) by name: null would read as unlimited.
    if (v && !std::isfinite(*v)) return Json(validation::numberText(*v));
  }
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

std::optional<double> failedPercentOf(const TopRow& row) noexcept {
  const std::int64_t failed = row.failed + row.rejected + row.invalid_token;
  const std::int64_t finished = failed + row.sent + row.suppressed;
  if (finished <= 0) return std::nullopt;
  return std::round(1000.0 * static_cast<double>(failed) / static_cast<double>(finished)) / 10;
}

TopFigures figuresOf(const TopRow& row) noexcept {
  TopFigures f;
  const std::int64_t finished = row.sent + row.failed + row.rejected + row.invalid_token + row.suppressed;
  f.backlog = backlogOf(row.total, finished, row.parked);
  f.progress = progressOf(row.total, finished);
  f.eta_s = etaSeconds(f.backlog, row.achieved);
  return f;
}

namespace {

struct Totals {
  std::int64_t active = 0, paused = 0, sent = 0, failed = 0, suppressed = 0, backlog = 0;
  bool backlog_lower_bound = false;
  double achieved = 0;
};

Totals totalsOf(const TopFrame& frame) {
  Totals t;
  for (const TopRow& r : frame.rows) {
    (r.state == campaignStateName(CampaignState::kPaused) ? t.paused : t.active) += 1;
    t.sent += r.sent;
    t.failed += r.failed;
    t.suppressed += r.suppressed;
    const Backlog b = figuresOf(r).backlog;
    t.backlog += b.messages;
    t.backlog_lower_bound = t.backlog_lower_bound || b.lower_bound;
    t.achieved += r.achieved.value_or(0);
  }
  return t;
}

}  // namespace

namespace {

HealthFacts healthFactsOf(const TopProviderRow& p) {
  HealthFacts h;
  h.provider = p.id;
  h.known = p.reported;
  h.circuit_open = p.circuit_open.value_or(false);
  h.degraded = p.degraded.value_or(false);
  h.paused = p.paused.value_or(false);
  h.configured = p.rate;
  h.effective = p.effective;
  h.server_errors_per_s = p.server_errors_per_s;
  h.throttled_total = p.throttled;
  h.server_errors_total = p.server_errors;
  return h;
}

}  // namespace

void fillLimitedBy(TopFrame& frame) {
  for (TopProviderRow& p : frame.providers) {
    const ProviderHealth h = healthOf(healthFactsOf(p));
    p.health_code = h.code;
    p.health_text = h.text;
  }
  for (TopRow& r : frame.rows) {
    const TopFigures fig = figuresOf(r);
    LimitFacts f;
    f.paused = r.state == campaignStateName(CampaignState::kPaused);
    f.own_rate = r.send_rate;
    f.achieved = r.achieved;
    f.backlog = fig.backlog.messages;
    f.backlog_lower_bound = fig.backlog.lower_bound;
    f.provider = r.provider;
    f.retry_waiting = r.retry_waiting;
    f.quiet_waiting = r.quiet_waiting;
    f.cap_waiting = r.cap_waiting;
    f.retries_total = r.retries_total;
    f.retries_per_s = r.retries_per_s;
    f.parked_quiet = r.parked_quiet;
    f.parked_capped = r.parked_capped;
    for (const TopProviderRow& p : frame.providers) {
      if (p.id != r.provider) continue;
      f.provider_rate = p.effective ? p.effective : p.rate;
      f.provider_configured = p.rate;
      f.provider_paused = p.paused.value_or(false);
      f.provider_circuit_open = p.circuit_open.value_or(false);
      f.provider_achieved = p.achieved;
      f.provider_server_errors_per_s = p.server_errors_per_s;
    }
    const LimitedBy l = limitedByOf(f);
    r.limited_code = l.code;
    r.limited_text = l.text;
  }
}

namespace {

// A table whose columns can be dropped to fit a width: each column has a
// rank (lower goes first).
struct Column {
  const char* header;
  bool right;
  int rank;
};

std::string renderFitting(const std::vector<Column>& cols, const std::vector<std::vector<std::string>>& rows,
                          std::size_t width) {
  std::vector<bool> keep(cols.size(), true);
  for (;;) {
    std::vector<std::string> headers;
    std::vector<bool> right;
    for (std::size_t c = 0; c < cols.size(); ++c)
      if (keep[c]) headers.emplace_back(cols[c].header), right.push_back(cols[c].right);
    Table t(headers, right);
    for (const auto& row : rows) {
      std::vector<std::string> cells;
      for (std::size_t c = 0; c < cols.size(); ++c)
        if (keep[c]) cells.push_back(row[c]);
      t.add(std::move(cells));
    }
    const std::string text = t.render();
    std::size_t widest = 0, start = 0;
    while (start < text.size()) {
      const std::size_t end = text.find('\n', start);
      widest = std::max(widest, textWidth(text.substr(start, end - start)));
      start = end + 1;
    }
    // The lowest-ranked column still shown goes next (the first column stays).
    std::size_t drop = cols.size();
    for (std::size_t c = 1; c < cols.size(); ++c)
      if (keep[c] && (drop == cols.size() || cols[c].rank < cols[drop].rank)) drop = c;
    if (widest <= width || drop == cols.size()) return text;
    keep[drop] = false;
  }
}

std::string countOrDash(bool known, std::int64_t n) { return known ? std::to_string(n) : "-"; }

std::string campaignTable(const TopFrame& frame, std::size_t width) {
  bool receipts = false, classes = false, suppressed = false, failures = false;
  for (const TopRow& r : frame.rows) {
    receipts = receipts || r.has_receipts;
    classes = classes || !r.priority_class.empty();
    suppressed = suppressed || r.suppressed > 0;
    failures = failures || r.failed + r.rejected + r.invalid_token > 0;
  }
  // Dropped first: SUPPR, FAILED, PROVIDER, CLASS, STATE ("LIMITED BY" says paused), ETA.
  std::vector<Column> cols = {{"ID", false, 100},      {"STATE", false, 40},     {"CLASS", false, 35},
                              {"PROVIDER", false, 30}, {"RATE", true, 80},       {"ACHIEVED", true, 90},
                              {"SENT", true, 70},      {"FAILED", true, 20},     {"FAIL%", true, 22},
                              {"SUPPR", true, 15},     {"BACKLOG", true, 85},    {"PROGRESS", false, 60},
                              {"ETA", true, 50},       {"LIMITED BY", false, 75}};
  if (receipts) cols.insert(cols.end(), {{"DLVRD", true, 65}, {"UNDLV", true, 25}, {"PEND", true, 35}});
  std::vector<std::vector<std::string>> rows;
  for (const TopRow& r : frame.rows) {
    const TopFigures f = figuresOf(r);
    std::string eta = formatDuration(f.eta_s);
    if (f.backlog.lower_bound && f.eta_s) eta = ">=" + eta;
    std::vector<std::string> cells = {r.id,
                                      r.state,
                                      r.priority_class.empty() ? "default" : r.priority_class,
                                      r.provider.empty() ? "-" : r.provider,
                                      rateCell(r.send_rate),
                                      rateText(r.achieved),
                                      std::to_string(r.sent),
                                      std::to_string(r.failed),
                                      failedPercentOf(r) ? fmt::format("{:.1f}%", *failedPercentOf(r)) : "-",
                                      std::to_string(r.suppressed),
                                      boundText(f.backlog.messages, f.backlog.lower_bound),
                                      progressBar(f.progress, 10),
                                      eta,
                                      r.limited_code == "failover" ? r.limited_text : shortWord(r.limited_code)};
    if (receipts) {
      cells.push_back(countOrDash(r.has_receipts, r.delivered));
      cells.push_back(countOrDash(r.has_receipts, r.undelivered));
      cells.push_back(countOrDash(r.has_receipts, r.receipts_pending));
    }
    rows.push_back(std::move(cells));
  }
  // Columns with nothing to say are left out (a frame without classes or caps looks as before).
  for (const char* unused : {classes ? "" : "CLASS", suppressed ? "" : "SUPPR", failures ? "" : "FAIL%"}) {
    const auto it =
        std::find_if(cols.begin(), cols.end(), [&](const Column& c) { return c.header == std::string_view(unused); });
    if (it == cols.end()) continue;
    const auto at = static_cast<std::size_t>(it - cols.begin());
    cols.erase(it);
    for (auto& row : rows) row.erase(row.begin() + static_cast<std::ptrdiff_t>(at));
  }
  return renderFitting(cols, rows, width);
}

std::string providerTable(const TopFrame& frame, std::size_t width) {
  const std::vector<Column> cols = {{"PROVIDER", false, 100}, {"QUOTA", true, 90},    {"EFFECTIVE", true, 80},
                                    {"ACHIEVED", true, 85},   {"PAUSED", false, 70},  {"429s", true, 60},
                                    {"5XX", true, 55},        {"CAMPAIGNS", true, 50},
                                    {"HEALTH", false, 95}};
  std::vector<std::vector<std::string>> rows;
  const auto count = [](const std::optional<std::uint64_t>& n) { return n ? std::to_string(*n) : "-"; };
  for (const TopProviderRow& p : frame.providers) {
    rows.push_back({p.id, rateCell(p.rate), p.effective ? fmt::format("{:.1f}/s", *p.effective) : "-",
                    fmt::format("{:.1f}/s", p.achieved), p.paused ? (*p.paused ? "yes" : "no") : "-",
                    count(p.throttled), count(p.server_errors), std::to_string(p.campaigns), shortWord(p.health_code)});
  }
  return renderFitting(cols, rows, width);
}

}  // namespace

std::string renderTopText(const TopFrame& frame, int width) {
  const std::size_t w = static_cast<std::size_t>(std::max(width, 40));
  const Totals t = totalsOf(frame);
  std::string out = fmt::format("pacer top  {}  {:.1f}/s over {:g}s\n", frame.at_utc, t.achieved, frame.window_s);
  out +=
      fmt::format("campaigns {}: {} active, {} paused  sent {}  failed {}{}  backlog {}\n", frame.rows.size(), t.active,
                  t.paused, t.sent, t.failed, t.suppressed > 0 ? fmt::format("  suppressed {}", t.suppressed) : "",
                  boundText(t.backlog, t.backlog_lower_bound));
  const std::vector<TopClass> classes = classesOf(frame);
  if (classes.size() > 1 || (classes.size() == 1 && !classes[0].name.empty()))
    for (const TopClass& c : classes)
      out += fmt::format("class {}: {} campaign{}, backlog {}, {:.1f}/s{}\n", c.name.empty() ? "default" : c.name,
                         c.campaigns, c.campaigns == 1 ? "" : "s", boundText(c.backlog, c.backlog_lower_bound),
                         c.achieved, c.queued ? fmt::format(", queued {} in the worker", *c.queued) : "");
  out += "\n";
  if (frame.rows.empty())
    out += "no active or paused campaigns\n";
  else
    out += campaignTable(frame, w);
  if (!frame.providers.empty()) out += "\n" + providerTable(frame, w);
  return out;
}

std::vector<TopClass> classesOf(const TopFrame& frame) {
  std::vector<TopClass> out;
  for (const TopRow& r : frame.rows) {
    auto it = std::find_if(out.begin(), out.end(), [&](const TopClass& c) { return c.name == r.priority_class; });
    if (it == out.end()) {
      it = out.emplace(out.end());
      it->name = r.priority_class;
    }
    const Backlog b = figuresOf(r).backlog;
    it->campaigns += 1;
    it->backlog += b.messages;
    it->backlog_lower_bound = it->backlog_lower_bound || b.lower_bound;
    it->achieved += r.achieved.value_or(0);
  }
  for (TopClass& c : out)
    if (const auto q = frame.worker_class_queued.find(c.name); q != frame.worker_class_queued.end())
      c.queued = q->second;
  std::sort(out.begin(), out.end(), [](const TopClass& a, const TopClass& b) { return a.name < b.name; });
  return out;
}

namespace {

Json classesJson(const TopFrame& frame) {
  Json a = Json::array();
  for (const TopClass& c : classesOf(frame))
    a.push_back(Json{{"class", c.name.empty() ? Json(nullptr) : Json(c.name)},
                     {"campaigns", c.campaigns},
                     {"backlog", c.backlog},
                     {"backlog_lower_bound", c.backlog_lower_bound},
                     {"achieved_rate", c.achieved},
                     {"worker_queued", orNull(c.queued)}});
  return a;
}

}  // namespace

std::string renderTopJson(const TopFrame& frame) {
  const Totals t = totalsOf(frame);
  Json rows = Json::array();
  for (const TopRow& r : frame.rows) {
    const TopFigures f = figuresOf(r);
    rows.push_back(
        Json{{"id", r.id},
             {"state", r.state},
             {"priority_class", r.priority_class.empty() ? Json(nullptr) : Json(r.priority_class)},
             {"provider", r.provider.empty() ? Json(nullptr) : Json(r.provider)},
             {"send_rate", orNull(r.send_rate)},
             {"achieved_rate", orNull(r.achieved)},
             {"total", orNull(r.total)},
             {"sent", r.sent},
             {"failed", r.failed},
             {"failed_pct", orNull(failedPercentOf(r))},
             {"rejected", r.rejected},
             {"invalid_token", r.invalid_token},
             {"suppressed", r.suppressed},
             {"parked", r.parked},
             {"backlog", f.backlog.messages},
             {"backlog_lower_bound", f.backlog.lower_bound},
             {"progress", orNull(f.progress)},
             {"eta_s", orNull(f.eta_s)},
             {"limited_by",
              r.limited_code.empty() ? Json(nullptr) : Json{{"code", r.limited_code}, {"text", r.limited_text}}},
             {"receipts",
              r.has_receipts
                  ? Json{{"delivered", r.delivered}, {"undelivered", r.undelivered}, {"pending", r.receipts_pending}}
                  : Json(nullptr)}});
  }
  Json providers = Json::array();
  for (const TopProviderRow& p : frame.providers)
    providers.push_back(Json{
        {"id", p.id},
        {"rate", orNull(p.rate)},
        {"campaigns", p.campaigns},
        {"achieved_rate", p.achieved},
        {"effective_rate", orNull(p.effective)},
        {"paused", orNull(p.paused)},
        {"throttled_total", orNull(p.throttled)},
        {"server_errors_total", orNull(p.server_errors)},
        {"counts_from", p.throttled || p.server_errors ? Json(p.cluster_counts ? "cluster" : "worker") : Json(nullptr)},
        {"circuit", p.circuit_open ? Json(*p.circuit_open ? "open" : "closed") : Json(nullptr)},
        {"health", p.health_code.empty() ? Json(nullptr) : Json{{"code", p.health_code}, {"text", p.health_text}}}});
  const Json j{{"at", frame.at_utc},
               {"window_s", frame.window_s},
               {"totals",
                {{"campaigns", frame.rows.size()},
                 {"active", t.active},
                 {"paused", t.paused},
                 {"achieved_rate", t.achieved},
                 {"sent", t.sent},
                 {"failed", t.failed},
                 {"suppressed", t.suppressed},
                 {"backlog", t.backlog},
                 {"backlog_lower_bound", t.backlog_lower_bound}}},
               {"classes", classesJson(frame)},
               {"campaigns", rows},
               {"providers", providers}};
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
