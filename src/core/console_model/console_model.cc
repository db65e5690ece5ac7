#include "pacer/console/console_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "provider_now.h"

namespace pacer::console {

using detail::providerPaused;
using detail::providerRateNow;

namespace {

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

std::optional<double> Series::latest() const {
  if (buckets_.empty() || buckets_.back().n == 0) return std::nullopt;
  return buckets_.back().sum / buckets_.back().n;
}

std::optional<double> Histories::serverErrorsPerS(const std::string& provider) const {
  const auto it = providers_.find(provider);
  return it == providers_.end() ? std::nullopt : it->second.server_errors.latest();
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
