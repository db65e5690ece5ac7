#include "pacer/console/console_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "pacer/campaign_state.h"
#include "pacer/validation.h"

namespace pacer::console {
namespace {

template <typename T>
Json orNull(const std::optional<T>& v) {
  if constexpr (std::is_floating_point_v<T>) {
    // NaN or Infinity (a row written past the checks) by name: null would read as unlimited.
    if (v && !std::isfinite(*v)) return Json(validation::numberText(*v));
  }
  return v ? Json(*v) : Json(nullptr);
}

Json textOrNull(const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); }

// The rate a provider's campaigns share now: the shared effective rate, else
// this worker's view of it, else the configured one.
std::optional<double> providerRateNow(const ProviderView& p) {
  if (p.shared_effective) return p.shared_effective;
  if (p.worker && p.worker->effective) return p.worker->effective;
  return p.row.limit.rate;
}

bool providerPaused(const ProviderView& p) { return p.shared_paused_s > 0 || (p.worker && p.worker->paused); }

bool circuitOpen(const ProviderView& p) { return p.worker && p.worker->circuit_open; }

bool validText(std::string_view s) {
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f) return false;
  return true;
}

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

LimitedBy limitedBy(const CampaignView& c, const ProviderView* p, double provider_achieved) {
  // Failed over (docs/routes.md): where its traffic goes, and why, says more than any rate.
  if (c.worker && !c.worker->route_reason.empty())
    return control::failoverLimit(c.worker->route, c.worker->route_reason);
  const control::TopFigures fig = control::figuresOf(c.top);
  control::LimitFacts f;
  f.paused = c.row.state == campaignStateName(CampaignState::kPaused);
  f.own_rate = c.row.limit.rate;
  f.achieved = c.top.achieved;
  f.backlog = fig.backlog.messages;
  f.backlog_lower_bound = fig.backlog.lower_bound;
  if (p) {
    f.provider = p->row.id;
    f.provider_rate = providerRateNow(*p);
    f.provider_configured = p->row.limit.rate;
    f.provider_paused = providerPaused(*p);
    f.provider_circuit_open = circuitOpen(*p);
    f.provider_achieved = provider_achieved;
  }
  return control::limitedByOf(f);
}

std::string countField(std::string_view kind, std::string_view id) {
  std::string out(kind);
  out += ':';
  out += id;
  return out;
}

CountFields CountDeltas::pending(const CountFields& now) const {
  CountFields out;
  for (const auto& [field, value] : now) {
    const auto it = base_.find(field);
    const std::uint64_t before = it == base_.end() || it->second > value ? 0 : it->second;
    if (value > before) out[field] = value - before;
  }
  return out;
}

void CountDeltas::acknowledge(const CountFields& now) {
  for (const auto& [field, value] : now) base_[field] = value;
}

// --- histories ------------------------------------------------------------------

void Series::add(double t, std::optional<double> v) {
  if (!std::isfinite(t) || (!buckets_.empty() && t < last_t_)) return;
  last_t_ = t;
  const double value = v.value_or(std::nan(""));
  const auto index = static_cast<std::int64_t>(std::floor(t / kStepS));
  if (buckets_.empty() || buckets_.back().index != index) buckets_.push_back(Bucket{index, 0, 0});
  if (std::isfinite(value)) {  // unknown, NaN or infinite: a gap
    buckets_.back().sum += value;
    ++buckets_.back().n;
  }
  const auto oldest = index - static_cast<std::int64_t>(kSpanS / kStepS);
  while (!buckets_.empty() && buckets_.front().index < oldest) buckets_.pop_front();
}

std::size_t Series::points() const {
  return buckets_.empty() ? 0 : static_cast<std::size_t>(buckets_.back().index - buckets_.front().index + 1);
}

Json Series::json(std::size_t merge) const {
  merge = std::max<std::size_t>(merge, 1);
  const auto m = static_cast<std::int64_t>(merge);
  const auto floorDiv = [](std::int64_t a, std::int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0)); };
  Json v = Json::array();
  if (buckets_.empty()) return Json{{"t0", nullptr}, {"step", kStepS * static_cast<double>(merge)}, {"v", v}};
  const std::int64_t first = floorDiv(buckets_.front().index, m);
  const std::int64_t last = floorDiv(buckets_.back().index, m);
  std::vector<std::pair<double, int>> groups(static_cast<std::size_t>(last - first + 1));
  for (const Bucket& b : buckets_) {
    auto& g = groups[static_cast<std::size_t>(floorDiv(b.index, m) - first)];
    g.first += b.sum;
    g.second += b.n;
  }
  for (const auto& [sum, n] : groups) v.push_back(n > 0 ? Json(std::round(sum / n * 100) / 100) : Json(nullptr));
  return Json{{"t0", static_cast<double>(first * m) * kStepS},
              {"step", kStepS * static_cast<double>(merge)},
              {"v", std::move(v)}};
}

void Histories::add(double t, const std::vector<CampaignView>& campaigns, const std::vector<ProviderView>& providers) {
  for (const CampaignView& c : campaigns) {
    CampaignSeries& s = campaigns_[c.row.id];
    s.send_rate.add(t, c.row.limit.rate);
    s.achieved.add(t, c.top.achieved);
    s.last_seen = t;
  }
  for (const ProviderView& p : providers) {
    ProviderSeries& s = providers_[p.row.id];
    const double dt = s.last_seen > 0 ? t - s.last_seen : 0;
    s.rate.add(t, p.row.limit.rate);
    s.effective.add(t, providerRateNow(p));
    s.paused.add(t, providerPaused(p) ? 1.0 : 0.0);
    // This worker's answers per second since the previous sample; a smaller
    // count means pacerd restarted: counted from 0.
    const auto perSecond = [&](std::optional<std::uint64_t>& last, std::uint64_t now) -> std::optional<double> {
      const std::optional<std::uint64_t> before = last;
      last = now;
      if (!before || !(dt > 0)) return std::nullopt;
      return static_cast<double>(now >= *before ? now - *before : now) / dt;
    };
    if (p.worker) {
      s.throttled.add(t, perSecond(s.last_throttled, p.worker->throttled));
      s.server_errors.add(t, perSecond(s.last_server_errors, p.worker->server_errors));
    } else {
      s.throttled.add(t, std::nullopt);
      s.server_errors.add(t, std::nullopt);
    }
    s.last_seen = t;
  }
  std::erase_if(campaigns_, [&](const auto& kv) { return kv.second.last_seen < t - Series::kSpanS; });
  std::erase_if(providers_, [&](const auto& kv) { return kv.second.last_seen < t - Series::kSpanS; });
}

Json Histories::json() const {
  // The most recently seen campaigns, up to kMaxCampaigns.
  std::vector<std::pair<double, const std::string*>> seen;
  for (const auto& [id, s] : campaigns_) seen.emplace_back(s.last_seen, &id);
  std::sort(seen.begin(), seen.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  const std::size_t kept = std::min(seen.size(), kMaxCampaigns);
  const std::size_t series = kept * 2 + providers_.size() * 5;
  // Buckets per point so that every series together stays within kMaxValues.
  std::size_t merge = 1;
  while (series * ((Series::kMaxPoints + merge - 1) / merge + 1) > kMaxValues && merge < Series::kMaxPoints) ++merge;
  Json cs = Json::object(), ps = Json::object();
  for (std::size_t i = 0; i < kept; ++i) {
    const CampaignSeries& s = campaigns_.at(*seen[i].second);
    cs[*seen[i].second] = Json{{"send_rate", s.send_rate.json(merge)}, {"achieved_rate", s.achieved.json(merge)}};
  }
  for (const auto& [id, s] : providers_)
    ps[id] = Json{{"rate", s.rate.json(merge)},
                  {"effective_rate", s.effective.json(merge)},
                  {"paused", s.paused.json(merge)},
                  {"throttled_per_s", s.throttled.json(merge)},
                  {"server_errors_per_s", s.server_errors.json(merge)}};
  return Json{{"span_s", Series::kSpanS},
              {"step_s", Series::kStepS * static_cast<double>(merge)},
              {"campaigns", std::move(cs)},
              {"providers", std::move(ps)},
              {"campaigns_left_out", seen.size() - kept}};
}

// --- documents ------------------------------------------------------------------

namespace {

Json campaignStateJson(const CampaignView& c, const LimitedBy& why) {
  const control::TopFigures f = control::figuresOf(c.top);
  Json j{{"id", c.row.id},
         {"name", c.row.name},
         {"state", c.row.state},
         {"priority", textOrNull(c.row.priority_class)},
         {"provider", textOrNull(c.row.provider)},
         {"send_rate", orNull(c.row.limit.rate)},
         {"burst", c.row.limit.burst},
         {"weight", c.row.weight},
         {"total", orNull(c.row.total)},
         {"sent", c.top.sent},
         {"failed", c.top.failed},
         {"rejected", c.top.rejected},
         {"invalid_token", c.top.invalid_token},
         {"suppressed", c.top.suppressed},
         {"parked", c.top.parked},
         {"achieved_rate", orNull(c.top.achieved)},
         {"backlog", f.backlog.messages},
         {"backlog_lower_bound", f.backlog.lower_bound},
         {"progress", orNull(f.progress)},
         {"eta_s", orNull(f.eta_s)},
         {"limited_by", Json{{"code", why.code}, {"text", why.text}}}};
  j["failed_pct"] = orNull(control::failedPercentOf(c.top));
  j["receipts"] = c.top.has_receipts ? Json{{"delivered", c.top.delivered},
                                            {"undelivered", c.top.undelivered},
                                            {"pending", c.top.receipts_pending}}
                                     : Json(nullptr);
  j["retries_total"] = orNull(c.cluster_retries);
  j["worker"] = c.worker ? Json{{"backlog", c.worker->backlog},
                                {"in_flight", c.worker->in_flight},
                                {"retries_total", c.worker->retries},
                                {"achieved_rate", c.worker->achieved_rate},
                                {"route", textOrNull(c.worker->route)},
                                {"route_reason", textOrNull(c.worker->route_reason)}}
                         : Json(nullptr);
  return j;
}

Json providerStateJson(const ProviderView& p, double achieved) {
  std::string effective_from = "configured";
  if (p.shared_effective)
    effective_from = "redis";
  else if (p.worker && p.worker->effective)
    effective_from = "worker";
  const std::optional<double> rate = providerRateNow(p);
  std::string paused_from;
  if (p.shared_paused_s > 0)
    paused_from = "redis";
  else if (p.worker && p.worker->paused)
    paused_from = "worker";
  Json j{{"id", p.row.id},
         {"rate", orNull(p.row.limit.rate)},
         {"burst", p.row.limit.burst},
         {"campaigns", p.row.campaigns},
         {"effective_rate", orNull(rate)},
         {"effective_from", rate ? Json(effective_from) : Json(nullptr)},
         {"achieved_rate", achieved},
         {"paused", !paused_from.empty()},
         {"paused_s", p.shared_paused_s},
         {"paused_from", textOrNull(paused_from)},
         // The breaker lives in the worker (or in Redis, heard through the
         // worker's leases): only its snapshot knows the state.
         {"circuit", p.worker ? Json(p.worker->circuit_open ? "open" : "closed") : Json(nullptr)},
         // Every worker's answers since the counts began, restarts included.
         {"cluster",
          p.cluster ? Json{{"throttled_total", p.cluster->throttled}, {"server_errors_total", p.cluster->server_errors}}
                    : Json(nullptr)}};
  j["worker"] = p.worker ? Json{{"effective_rate", orNull(p.worker->effective)},
                                {"paused", p.worker->paused},
                                {"degraded", p.worker->degraded},
                                {"throttled_total", p.worker->throttled},
                                {"server_errors_total", p.worker->server_errors},
                                {"circuit_open", p.worker->circuit_open}}
                         : Json(nullptr);
  return j;
}

}  // namespace

Json classesStateJson(const std::vector<std::pair<std::string, std::uint64_t>>& class_queued) {
  Json a = Json::array();
  for (const auto& [name, queued] : class_queued)
    a.push_back(Json{{"class", name == "default" ? Json(nullptr) : Json(name)}, {"worker", {{"queued", queued}}}});
  return a;
}

Json stateJson(const std::string& at_utc, double at_epoch_s, double window_s,
               const std::vector<CampaignView>& campaigns, const std::vector<ProviderView>& providers,
               const Sources& sources) {
  std::map<std::string, double> achieved_by_provider;
  for (const CampaignView& c : campaigns)
    if (!c.row.provider.empty()) achieved_by_provider[c.row.provider] += c.top.achieved.value_or(0);
  std::map<std::string, const ProviderView*> by_id;
  for (const ProviderView& p : providers) by_id[p.row.id] = &p;
  Json cs = Json::array(), ps = Json::array();
  double achieved = 0;
  std::int64_t sent = 0, failed = 0, backlog = 0;
  bool lower_bound = false;
  for (const CampaignView& c : campaigns) {
    const auto it = by_id.find(c.row.provider);
    const ProviderView* p = it == by_id.end() ? nullptr : it->second;
    cs.push_back(campaignStateJson(c, limitedBy(c, p, p ? achieved_by_provider[p->row.id] : 0)));
    const control::TopFigures f = control::figuresOf(c.top);
    achieved += c.top.achieved.value_or(0);
    sent += c.top.sent;
    failed += c.top.failed;
    backlog += f.backlog.messages;
    lower_bound = lower_bound || f.backlog.lower_bound;
  }
  for (const ProviderView& p : providers) ps.push_back(providerStateJson(p, achieved_by_provider[p.row.id]));
  return Json{{"at", at_utc},
              {"at_epoch_s", at_epoch_s},
              {"window_s", window_s},
              {"sources",
               {{"postgres", sources.postgres},
                {"redis", sources.redis},
                {"worker", sources.worker},
                {"version", sources.version},
                {"controls", sources.controls}}},
              {"totals",
               {{"campaigns", campaigns.size()},
                {"achieved_rate", achieved},
                {"sent", sent},
                {"failed", failed},
                {"backlog", backlog},
                {"backlog_lower_bound", lower_bound}}},
              {"campaigns", std::move(cs)},
              {"providers", std::move(ps)}};
}

std::string sseFrame(std::string_view name, std::string_view data) {
  std::string out = fmt::format("event: {}\n", name);
  out.reserve(out.size() + data.size() + 16);
  std::size_t from = 0;
  while (true) {
    const std::size_t nl = data.find('\n', from);
    out += "data: ";
    out += data.substr(from, nl == std::string_view::npos ? std::string_view::npos : nl - from);
    out += '\n';
    if (nl == std::string_view::npos) break;
    from = nl + 1;
  }
  return out + "\n";
}

namespace {

// The bytes `text` stands for, or nullopt for a malformed escape.
std::optional<std::string> decodeEscapes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 2 >= text.size()) return std::nullopt;
    const int hi = hexValue(text[i + 1]), lo = hexValue(text[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

}  // namespace

std::optional<std::string> percentDecode(std::string_view text) {
  std::optional<std::string> out = decodeEscapes(text);
  if (!out || !validText(*out)) return std::nullopt;
  return out;
}

Route parseRoute(std::string_view method, std::string_view path) {
  const bool read = method == "GET" || method == "HEAD";
  Route r;
  const auto is = [&](Route::Kind k, const char* allow, bool ok) {
    r.kind = k;
    r.allow = allow;
    r.method_ok = ok;
    return r;
  };
  if (path == "/" || path == "/console") return is(Route::Kind::kRedirect, "GET, HEAD", read);
  if (path.starts_with("/console/")) {
    std::string_view name = path.substr(9);
    if (name.empty()) name = "index.html";
    if (name.find('/') != std::string_view::npos) return is(Route::Kind::kNotFound, "GET, HEAD", true);
    r.name = std::string(name);
    return is(Route::Kind::kAsset, "GET, HEAD", read);
  }
  constexpr std::string_view kApi = "/api/v1/";
  if (!path.starts_with("/api/")) return r;
  if (!path.starts_with(kApi)) return is(Route::Kind::kNotFound, "GET, HEAD", true);
  const std::string_view rest = path.substr(kApi.size());
  static const std::pair<std::string_view, Route::Kind> kReads[] = {
      {"meta", Route::Kind::kMeta},    {"state", Route::Kind::kState},         {"history", Route::Kind::kHistory},
      {"top", Route::Kind::kTop},      {"campaigns", Route::Kind::kCampaigns}, {"providers", Route::Kind::kProviders},
      {"events", Route::Kind::kEvents}};
  for (const auto& [name, kind] : kReads)
    if (rest == name) return is(kind, "GET, HEAD", read);
  const auto withId = [&](std::string_view prefix, bool provider) -> Route {
    const std::string_view tail = rest.substr(prefix.size());
    const std::size_t slash = tail.find('/');
    // Any bytes: a control's id is checked with pacerctl's rules (a 400 naming
    // the bound), a read's is simply not found.
    const std::optional<std::string> id = decodeEscapes(tail.substr(0, slash));
    if (!id || id->empty()) return is(Route::Kind::kNotFound, "GET, HEAD", true);
    r.id = *id;
    if (slash == std::string_view::npos) {
      if (provider) return is(Route::Kind::kNotFound, "GET, HEAD", true);
      return is(Route::Kind::kCampaign, "GET, HEAD", read);
    }
    const std::string_view action = tail.substr(slash + 1);
    const bool known = provider ? action == "rate"
                                : (action == "pause" || action == "resume" || action == "cancel" || action == "rate");
    if (!known) return is(Route::Kind::kNotFound, "POST", true);
    r.action = std::string(action);
    return is(provider ? Route::Kind::kProviderRate : Route::Kind::kCampaignAction, "POST", method == "POST");
  };
  if (rest.starts_with("campaigns/")) return withId("campaigns/", false);
  if (rest.starts_with("providers/")) return withId("providers/", true);
  return is(Route::Kind::kNotFound, "GET, HEAD", true);
}

namespace {

// The body as JSON; a number too large for a double (1e400) is named with its
// field instead of being called "not a JSON object". Discarded when malformed.
Json parseBody(std::string_view body) {
  std::string field;
  const Json::parser_callback_t note_key = [&field](int, Json::parse_event_t event, Json& parsed) {
    if (event == Json::parse_event_t::key) field = parsed.get<std::string>();
    return true;
  };
  try {
    return Json::parse(body.begin(), body.end(), note_key);
  } catch (const Json::out_of_range&) {
    throw control::InvalidValueError(
        fmt::format("{}: the number is out of range; give messages per second (0 to 10000000) or \"unlimited\"",
                    field.empty() ? "body" : field));
  } catch (const Json::exception&) {
    return Json(Json::value_t::discarded);
  }
}

}  // namespace

control::Limit parseLimitBody(std::string_view body) {
  const Json j = parseBody(body);
  if (j.is_discarded() || !j.is_object())
    throw control::InvalidValueError(
        "body: expected a JSON object {\"rate\": messages per second or \"unlimited\", \"burst\": optional}");
  for (const auto& [key, value] : j.items())
    if (key != "rate" && key != "burst")
      throw control::InvalidValueError(fmt::format("body: unknown field '{}'; give rate and, optionally, burst", key));
  const auto text = [](const Json& v, const char* field) -> std::string {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_number()) return fmt::format("{}", v.get<double>());
    throw control::InvalidValueError(fmt::format("{}: expected a number", field));
  };
  if (!j.contains("rate"))
    throw control::InvalidValueError("rate: missing; give messages per second (0.001 to 10000000) or \"unlimited\"");
  const Json& rate = j.at("rate");
  const std::optional<double> r = rate.is_null() ? std::nullopt : control::parseRate(text(rate, "rate"), "rate");
  std::optional<double> burst;
  if (j.contains("burst") && !j.at("burst").is_null())
    burst = control::parseBurst(text(j.at("burst"), "burst"), "burst");
  return control::makeLimit(r, burst);
}

std::string errorJson(std::string_view text) { return Json{{"error", text}}.dump(); }

}  // namespace pacer::console
