#include "pacer/admin/admin_server.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace pacer::admin {

// --- AdminState ---------------------------------------------------------------

void AdminState::publish(std::shared_ptr<const MetricsSnapshot> snapshot) {
  std::shared_ptr<const MetricsSnapshot> old;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    old = std::move(snapshot_);
    snapshot_ = std::move(snapshot);
  }
  // `old` is freed here, outside the lock (a scrape may still hold it).
}

std::shared_ptr<const MetricsSnapshot> AdminState::snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return snapshot_;
}

std::optional<MonoTime> AdminState::lastTurn() const noexcept {
  const Nanos::rep t = last_turn_.load(std::memory_order_relaxed);
  if (t == kNoTurn) return std::nullopt;
  return MonoTime{Nanos{t}};
}

// --- tokens -------------------------------------------------------------------

bool constantTimeEquals(std::string_view given, std::string_view expected) noexcept {
  if (expected.empty()) return given.empty();
  // Every byte of `given` is compared with a byte of `expected` (wrapping), so
  // the time depends on given.size() only, never on where a difference is.
  volatile unsigned char diff = given.size() == expected.size() ? 0 : 1;
  for (std::size_t i = 0; i < given.size(); ++i)
    diff = diff | static_cast<unsigned char>(given[i] ^ expected[i % expected.size()]);
  return diff == 0;
}

TokenCheck checkBearer(std::optional<std::string_view> authorization, std::string_view token) noexcept {
  if (token.empty()) return TokenCheck::kDisabled;
  if (!authorization) return TokenCheck::kMissing;
  std::string_view v = *authorization;
  while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
  constexpr std::string_view kScheme = "bearer ";
  if (v.size() < kScheme.size()) return TokenCheck::kMissing;
  for (std::size_t i = 0; i < kScheme.size(); ++i) {
    const char ch = v[i] >= 'A' && v[i] <= 'Z' ? static_cast<char>(v[i] - 'A' + 'a') : v[i];
    if (ch != kScheme[i]) return TokenCheck::kMissing;  // another scheme (Basic ...)
  }
  v.remove_prefix(kScheme.size());
  while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  if (v.empty()) return TokenCheck::kMissing;
  return constantTimeEquals(v, token) ? TokenCheck::kOk : TokenCheck::kWrong;
}

bool hostAllowed(std::optional<std::string_view> host, const std::vector<std::string>& allowed) {
  if (!host) return true;
  std::string_view h = *host;
  if (h.starts_with('[')) return h.find(']') != std::string_view::npos;  // an IPv6 literal
  if (const auto colon = h.rfind(':'); colon != std::string_view::npos) h = h.substr(0, colon);
  std::string name(h);
  for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (name.empty()) return false;
  if (name == "localhost") return true;
  // An IPv4 literal: a rebinding page has a name, never the address itself.
  if (name.find_first_not_of("0123456789.") == std::string::npos && std::count(name.begin(), name.end(), '.') == 3)
    return true;
  for (const std::string& a : allowed) {
    if (a == "*") return true;
    if (a.size() == name.size() && std::equal(a.begin(), a.end(), name.begin(), [](char x, char y) {
          return std::tolower(static_cast<unsigned char>(x)) == y;
        }))
      return true;
  }
  return false;
}

bool acceptsGzip(std::string_view value) {
  const auto trim = [](std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
  };
  const auto lower = [](std::string_view s) {
    std::string out(s);
    for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return out;
  };
  while (!value.empty()) {
    const std::size_t comma = value.find(',');
    std::string_view item = value.substr(0, comma);
    value = comma == std::string_view::npos ? std::string_view{} : value.substr(comma + 1);
    const std::size_t semi = item.find(';');
    const std::string coding = lower(trim(item.substr(0, semi)));
    if (coding != "gzip" && coding != "*") continue;
    if (semi == std::string_view::npos) return true;
    const std::string param = lower(trim(item.substr(semi + 1)));
    if (param.rfind("q=", 0) != 0) return true;
    const std::string q = param.substr(2);
    // q=0, q=0.0, q=0.000: refused; anything else accepts.
    if (q.find_first_not_of("0.") != std::string::npos || q.empty()) return true;
  }
  return false;
}

bool isGuardedRead(std::string_view method, std::string_view path) noexcept {
  if (method != "GET" && method != "HEAD") return false;
  return path == "/metrics" || path.starts_with("/api/");
}

// --- decisions ----------------------------------------------------------------

std::optional<std::string> notReadyReason(const Readiness& r) {
  std::string why;
  const auto add = [&](std::string_view s) {
    if (!why.empty()) why += "; ";
    why += s;
  };
  if (!r.joined) add("not in the consumer group yet (no partition assignment)");
  if (r.store_failing) add("ledger not writable (the last write failed; retrying)");
  if (r.quota && r.providers > 0 && r.degraded_providers == r.providers)
    add("global quota degraded for every provider (Redis not answering)");
  if (why.empty()) return std::nullopt;
  return why;
}

AdminHandler::AdminHandler(AdminState& state, const TimeSource& clock, std::string token, Nanos max_turn_age)
    : state_(state), clock_(clock), token_(std::move(token)), max_turn_age_(max_turn_age) {}

AdminResponse AdminHandler::handle(const AdminRequest& r) const {
  const bool read = r.method == "GET" || r.method == "HEAD";
  const auto notAllowed = [](const char* allow) {
    AdminResponse a{405, "text/plain; charset=utf-8", fmt::format("method not allowed; use {}\n", allow), allow};
    return a;
  };
  if (r.path == "/metrics" || r.path == "/healthz" || r.path == "/readyz") {
    if (!read) return notAllowed("GET, HEAD");
    if (r.path == "/metrics") return metrics();
    return r.path == "/healthz" ? healthz() : readyz();
  }
  if (r.path == "/admin/drain" || r.path == "/admin/reload") {
    if (r.method != "POST") return notAllowed("POST");
    if (auto no = refuse(r)) return *no;
    if (r.path == "/admin/drain") {
      state_.requestDrain();
      return AdminResponse{200, "text/plain; charset=utf-8", "draining: pacerd stops as on SIGTERM\n", {}};
    }
    state_.requestReload();
    return AdminResponse{200, "text/plain; charset=utf-8",
                         "reload requested: pacerd re-reads its configuration as on SIGHUP (see its log)\n", {}};
  }
  return AdminResponse{404, "text/plain; charset=utf-8",
                       "not found; try /metrics, /healthz, /readyz, POST /admin/drain or POST /admin/reload\n", {}};
}

AdminResponse AdminHandler::healthz() const {
  if (state_.isStopping()) return AdminResponse{200, "text/plain; charset=utf-8", "stopping\n", {}};
  const std::optional<MonoTime> last = state_.lastTurn();
  if (!last) return AdminResponse{503, "text/plain; charset=utf-8", "starting: the loop has not turned yet\n", {}};
  const Nanos age = clock_.now() - *last;
  if (age > max_turn_age_)
    return AdminResponse{503, "text/plain; charset=utf-8",
                         fmt::format("loop stalled: last turn {:.1f} s ago\n", std::chrono::duration<double>(age).count()),
                         {}};
  return AdminResponse{200, "text/plain; charset=utf-8", "ok\n", {}};
}

AdminResponse AdminHandler::readyz() const {
  if (state_.isStopping())
    return AdminResponse{503, "text/plain; charset=utf-8", "stopping: finishing in-flight work\n", {}};
  const auto snapshot = state_.snapshot();
  if (!snapshot) return AdminResponse{503, "text/plain; charset=utf-8", "starting\n", {}};
  if (auto why = notReadyReason(snapshot->readiness))
    return AdminResponse{503, "text/plain; charset=utf-8", *why + "\n", {}};
  return AdminResponse{200, "text/plain; charset=utf-8", "ready\n", {}};
}

AdminResponse AdminHandler::metrics() const {
  const auto snapshot = state_.snapshot();
  if (!snapshot) return AdminResponse{503, "text/plain; charset=utf-8", "starting: no metrics yet\n", {}};
  return AdminResponse{200, "text/plain; version=0.0.4; charset=utf-8", renderMetrics(*snapshot), {}};
}

std::optional<AdminResponse> AdminHandler::refuse(const AdminRequest& r) const {
  switch (checkBearer(r.authorization, token_)) {
    case TokenCheck::kDisabled:
      return AdminResponse{403, "text/plain; charset=utf-8",
                           "state changes are disabled: start pacerd with --admin-token (or PACER_ADMIN_TOKEN)\n", {}};
    case TokenCheck::kMissing:
    case TokenCheck::kWrong: {
      AdminResponse a{401, "text/plain; charset=utf-8", "unauthorized: send Authorization: Bearer <token>\n", {}};
      a.www_authenticate = true;
      return a;
    }
    case TokenCheck::kOk: break;
  }
  return std::nullopt;
}

// --- addresses ----------------------------------------------------------------

ListenAddress parseListenAddress(std::string_view text) {
  const auto bad = [&](std::string_view why) {
    return AdminAddressError(fmt::format("--admin-listen '{}': {}; expected HOST:PORT (e.g. 127.0.0.1:9464), "
                                         "[::1]:PORT, or off",
                                         text, why));
  };
  const std::size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) throw bad("no port");
  std::string_view host = text.substr(0, colon);
  const std::string_view port = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    throw bad("an IPv6 address goes in brackets");
  }
  if (host.empty()) throw bad("no host");
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string_view::npos)
    throw bad("the port is not a number");
  const int p = std::stoi(std::string(port));
  if (p > 65535) throw bad("the port is above 65535");
  return ListenAddress{std::string(host), p};
}

}  // namespace pacer::admin
