// pacerctl top (the live view) and pacerctl status (the database at a glance).
#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <deque>
#include <thread>

#include "cli_parts.h"
#include "console_redis.h"
#include "pacer/conninfo.h"
#include "pacer/console/console_model.h"
#include "pacer/control/table.h"
#include "pacer/control/top.h"

namespace pacer::control::cli {
namespace {

// `pacerctl top`'s arguments.
struct TopArgs {
  int interval_ms = 1000;
  double window_s = 5;
  bool once = false;
  std::optional<std::string> admin;  // a pacerd's admin listener: the providers' live figures
  std::vector<std::string> redis;    // the quota's Redis: the cluster's counts and shared provider state
  int width = 0;                     // 0: the terminal's, else 80
};

// What that worker's state document says of each campaign: its messages
// waiting there (for a retry, quiet hours, a frequency cap) and the retries,
// then "limited by" again with them; a campaign failed over there
// (docs/routes.md) is limited by its route.
void mergeLiveCampaigns(TopFrame& f, const Json& doc) {
  const auto count = [](const Json& o, const char* key) -> std::optional<std::uint64_t> {
    const auto it = o.find(key);
    return it != o.end() && it->is_number_unsigned() ? std::optional<std::uint64_t>(it->get<std::uint64_t>())
                                                     : std::nullopt;
  };
  const auto it = doc.find("campaigns");
  const bool has = it != doc.end() && it->is_array();
  if (has)
    for (const Json& c : *it) {
      const Json* w = c.contains("worker") && c.at("worker").is_object() ? &c.at("worker") : nullptr;
      for (TopRow& r : f.rows) {
        if (r.id != c.at("id").get<std::string>()) continue;
        r.retries_total = count(c, "retries_total");
        if (!w) continue;
        r.retry_waiting = count(*w, "retrying");
        r.quiet_waiting = count(*w, "quiet_waiting");
        r.cap_waiting = count(*w, "cap_waiting");
        if (!r.retries_total) r.retries_total = count(*w, "retries_total");
      }
    }
  fillLimitedBy(f);
  if (!has) return;
  for (const Json& c : *it) {
    const Json* w = c.contains("worker") && c.at("worker").is_object() ? &c.at("worker") : nullptr;
    const std::optional<LimitedBy> l = w ? failoverLimitOfState(*w) : std::nullopt;
    if (!l) continue;
    for (TopRow& r : f.rows)
      if (r.id == c.at("id").get<std::string>()) {
        r.limited_code = l->code;
        r.limited_text = l->text;
      }
  }
}

// The providers' effective rate, pause and 429 count from a worker's state
// document (GET /api/v1/state: Redis's shared figures, that worker's count),
// and its queue per priority class, then "limited by" again with them. A worker that does not answer leaves
// those columns at "-" and says why below the frame. `token` (PACER_ADMIN_TOKEN)
// goes with the read: a worker with admin.reads_need_token answers 401 without it.
std::string mergeLive(TopFrame& f, const std::string& address, const std::string& token) {
  try {
    const Answer a = call(address, "/api/v1/state", false, token, 2000);
    if (a.status != 200) return fmt::format("live provider figures: {} answered HTTP {}", address, a.status);
    const Json doc = Json::parse(a.body);
    for (const Json& p : doc.at("providers")) {
      const std::string id = p.at("id").get<std::string>();
      for (TopProviderRow& row : f.providers) {
        if (row.id != id) continue;
        if (!p.at("effective_rate").is_null()) row.effective = p.at("effective_rate").get<double>();
        row.paused = p.at("paused").get<bool>();
        if (p.contains("worker") && p.at("worker").is_object()) {
          row.throttled = p.at("worker").at("throttled_total").get<std::uint64_t>();
          row.server_errors = p.at("worker").value("server_errors_total", std::uint64_t{0});
          row.degraded = p.at("worker").value("degraded", false);
          row.reported = true;
        }
        if (p.value("effective_from", Json()) == "redis" || p.value("paused_from", Json()) == "redis") row.reported = true;
        if (const auto e = p.find("server_errors_per_s"); e != p.end() && e->is_number())
          row.server_errors_per_s = e->get<double>();
        if (const auto c = p.find("circuit"); c != p.end() && c->is_string()) row.circuit_open = *c == "open";
        // Every worker's counts, restarts included, when the worker keeps them in Redis.
        if (const auto c = p.find("cluster"); c != p.end() && c->is_object()) {
          row.throttled = c->at("throttled_total").get<std::uint64_t>();
          row.server_errors = c->at("server_errors_total").get<std::uint64_t>();
          row.cluster_counts = true;
        }
      }
    }
    // Its messages queued per priority class (a worker before issue 16 has none).
    if (const auto it = doc.find("classes"); it != doc.end() && it->is_array())
      for (const Json& c : *it)
        f.worker_class_queued[c.at("class").is_null() ? "" : c.at("class").get<std::string>()] =
            c.at("worker").at("queued").get<std::uint64_t>();
    mergeLiveCampaigns(f, doc);
    return "";
  } catch (const UnreachableError& e) {
    return std::string("live provider figures: ") + e.what();
  } catch (const Json::exception& e) {
    return fmt::format("live provider figures: {} sent a state document pacerctl cannot read ({})", address, e.what());
  }
}

// The cluster's figures in Redis (--redis), read at every frame: the counts
// every pacerd adds to "pacer:{counts}" each second (docs/operations.md
// "Cluster-wide failure counts") and the providers' shared effective rate and
// pause. A rate is the growth of a count over the frames of the last window
// (--once reads twice, a second apart). They fill what a worker's state
// document (--admin) did not.
class RedisFigures {
 public:
  RedisFigures(std::vector<std::string> nodes, double window_s)
      : reader_(std::move(nodes), std::chrono::milliseconds(1000)), window_s_(window_s) {}

  // Reads now and fills `f`; "" or why the figures are missing.
  std::string merge(TopFrame& f) {
    std::vector<std::string> fields, ids;
    for (const TopProviderRow& p : f.providers) {
      ids.push_back(p.id);
      fields.push_back(console::countField("provider_throttled", p.id));
      fields.push_back(console::countField("provider_server_errors", p.id));
    }
    for (const TopRow& r : f.rows) fields.push_back(console::countField("campaign_retries", r.id));
    try {
      samples_.push_back(Sample{seconds(), reader_.readCounts(fields)});
      const auto shared = reader_.read(ids);
      while (samples_.size() > 2 && samples_[1].at_s <= samples_.back().at_s - window_s_) samples_.pop_front();
      for (TopProviderRow& p : f.providers) {
        const std::string errors = console::countField("provider_server_errors", p.id);
        if (!p.server_errors_per_s) p.server_errors_per_s = rate(errors);
        if (!p.cluster_counts) {
          p.throttled = count(console::countField("provider_throttled", p.id));
          p.server_errors = count(errors);
          p.cluster_counts = true;
        }
        if (const auto it = shared.find(p.id); it != shared.end()) {
          if (!p.effective) p.effective = it->second.effective;
          if (!p.paused) p.paused = it->second.paused_s > 0;
        }
        p.reported = true;  // the cluster's state, shared through Redis
      }
      for (TopRow& r : f.rows) {
        const std::string retries = console::countField("campaign_retries", r.id);
        if (!r.retries_total) r.retries_total = count(retries);
        if (!r.retries_per_s) r.retries_per_s = rate(retries);
      }
      return "";
    } catch (const console::ProviderStateError& e) {
      samples_.clear();
      return std::string("cluster figures from Redis: ") + e.what();
    }
  }

 private:
  struct Sample {
    double at_s;
    std::map<std::string, std::uint64_t> counts;
  };
  static double seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }
  std::uint64_t count(const std::string& field) const {
    const auto it = samples_.back().counts.find(field);
    return it == samples_.back().counts.end() ? 0 : it->second;
  }
  // Growth per second from the oldest sample kept to the newest.
  std::optional<double> rate(const std::string& field) const {
    if (samples_.size() < 2) return std::nullopt;
    const Sample& old = samples_.front();
    const double span = samples_.back().at_s - old.at_s;
    const auto it = old.counts.find(field);
    const std::uint64_t before = it == old.counts.end() ? 0 : it->second, now = count(field);
    if (!(span > 0) || now < before) return std::nullopt;
    return static_cast<double>(now - before) / span;
  }

  console::ProviderStateReader reader_;
  double window_s_;
  std::deque<Sample> samples_;
};

int terminalWidth(const Session& s, const TopArgs& ta) {
  if (ta.width > 0) return ta.width;
  winsize w{};
  if (s.env.stdout_is_tty && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col >= 40) return w.ws_col;
  return 80;
}

std::string frameText(Session& s, const TopArgs& ta, TopFrame f, RedisFigures* redis) {
  std::string note;
  if (redis) {
    note = redis->merge(f);
    fillLimitedBy(f);  // again, with what Redis added
  }
  // A worker's document overrides (and mergeLive works "limited by" out again with it).
  const std::optional<std::string> admin = ta.admin ? ta.admin : s.env.admin;
  if (admin) {
    const std::string live = mergeLive(f, *admin, s.env.admin_token.value_or(""));
    if (!live.empty()) note += (note.empty() ? "" : "\n") + live;
  }
  if (s.json) return renderTopJson(f);
  std::string text = renderTopText(f, terminalWidth(s, ta));
  if (!note.empty()) text += "\n" + note + "\n";
  return text;
}

// Set by SIGINT/SIGTERM while `top` runs its loop.
volatile std::sig_atomic_t g_top_stop = 0;
extern "C" void onTopStopSignal(int) { g_top_stop = 1; }

// SIGINT and SIGTERM set g_top_stop for this object's lifetime; the previous
// handlers come back afterwards.
class StopSignals {
 public:
  StopSignals() {
    g_top_stop = 0;
    struct sigaction sa {};
    sa.sa_handler = onTopStopSignal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
  }
  ~StopSignals() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

// The cursor hidden while top redraws a terminal, shown again however it ends.
class HiddenCursor {
 public:
  HiddenCursor(std::ostream& out, bool on) : out_(out), on_(on) {
    if (on_) out_ << "\x1b[?25l";
  }
  ~HiddenCursor() {
    if (on_) out_ << "\x1b[?25h" << std::flush;
  }
  HiddenCursor(const HiddenCursor&) = delete;
  HiddenCursor& operator=(const HiddenCursor&) = delete;

 private:
  std::ostream& out_;
  bool on_;
};

void top(Session& s, const TopArgs& ta) {
  if (ta.interval_ms < 100 || ta.interval_ms > 3'600'000)
    throw InvalidValueError(fmt::format("--interval-ms {}: give 100 to 3600000", ta.interval_ms));
  if (!(ta.window_s >= 1 && ta.window_s <= 3600))
    throw InvalidValueError(fmt::format("--window-s {}: give 1 to 3600 seconds", ta.window_s));
  if (s.json && !ta.once) throw InvalidValueError("--json with top needs --once (one frame as JSON)");
  PgControl& db = s.db();
  if (ta.width != 0 && (ta.width < 40 || ta.width > 1000)) throw InvalidValueError("--width: give 40 to 1000 columns");
  std::unique_ptr<RedisFigures> redis;
  if (!ta.redis.empty()) redis = std::make_unique<RedisFigures>(ta.redis, ta.window_s);
  if (ta.once) {
    if (redis) {  // a first read, so that the frame has rates: the counts grow once a second
      TopFrame first = topFrameOf(db.topSnapshot(ta.window_s), ta.window_s);
      redis->merge(first);
      std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    }
    s.out << frameText(s, ta, topFrameOf(db.topSnapshot(ta.window_s), ta.window_s), redis.get());
    return;
  }
  StopSignals signals;
  const bool tty = s.env.stdout_is_tty;
  HiddenCursor cursor(s.out, tty);
  while (!g_top_stop) {
    const auto next = std::chrono::steady_clock::now() + std::chrono::milliseconds(ta.interval_ms);
    const std::string frame = frameText(s, ta, topFrameOf(db.topSnapshot(ta.window_s), ta.window_s), redis.get());
    // Drawn over the last frame, not after clearing: no flicker of an empty screen.
    s.out << (tty ? terminalRedraw(frame) : frame + "\n") << std::flush;
    while (!g_top_stop && std::chrono::steady_clock::now() < next)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

Json statusJson(const StatusReport& r, const std::string& shown) {
  Json campaigns = Json::object();
  std::int64_t total = 0;
  for (const auto& [state, n] : r.campaigns_by_state) campaigns[state] = n, total += n;
  campaigns["total"] = total;
  Json ledger = ledgerJson(r.ledger);
  ledger["total"] = r.ledger.sent + r.ledger.failed + r.ledger.rejected + r.ledger.invalid_token + r.ledger.suppressed +
                    r.ledger.expired;
  return Json{
      {"postgres", shown},      {"schema", {{"database", r.schema_version}, {"pacerctl", r.build_schema_version}}},
      {"campaigns", campaigns}, {"providers", r.providers},
      {"ledger", ledger},       {"parked", {{"total", r.parked}, {"claimed", r.parked_claimed}}}};
}

void status(Session& s) {
  const StatusReport r = s.db().status();
  const std::string shown = redactConninfo(s.postgres ? *s.postgres : s.env.postgres.value_or(""));
  if (s.json) return s.emit(statusJson(r, shown));
  Table t({"WHAT", "COUNT"}, {false, true});
  std::int64_t total = 0;
  for (const auto& [state, n] : r.campaigns_by_state) t.add({"campaigns " + state, std::to_string(n)}), total += n;
  t.add({"campaigns (all)", std::to_string(total)});
  t.add({"providers", std::to_string(r.providers)});
  t.add({"ledger sent", std::to_string(r.ledger.sent)});
  t.add({"ledger failed", std::to_string(r.ledger.failed)});
  t.add({"ledger rejected", std::to_string(r.ledger.rejected)});
  t.add({"ledger invalid_token", std::to_string(r.ledger.invalid_token)});
  t.add({"ledger suppressed", std::to_string(r.ledger.suppressed)});
  t.add({"ledger expired", std::to_string(r.ledger.expired)});
  t.add({"parked", std::to_string(r.parked)});
  t.add({"parked, claimed by a worker", std::to_string(r.parked_claimed)});
  s.out << fmt::format("postgres: {}\nschema version: {} (this pacerctl: {})\nlast ledger row: {}\n", shown,
                       r.schema_version, r.build_schema_version,
                       r.ledger.last_recorded_at.empty() ? "-" : r.ledger.last_recorded_at)
        << t.render();
}

}  // namespace

void addTopCommands(CLI::App& app, Session& s, Commands& commands) {
  auto ta = std::make_shared<TopArgs>();  // lives as long as the command
  CLI::App* cmd = app.add_subcommand(
      "top", "live view of campaigns and providers: achieved rate, what limits each, backlog, ETA (Ctrl-C ends it)");
  cmd->add_option("--interval-ms", ta->interval_ms, "refresh period")->capture_default_str();
  cmd->add_option("--window-s", ta->window_s, "the achieved rate counts the sent rows of this many last seconds")
      ->capture_default_str();
  cmd->add_flag("--once", ta->once, "print one frame and exit (with --json: the frame as JSON)");
  optionalText(cmd, "--admin", ta->admin,
               "HOST:PORT of a pacerd admin listener: adds the providers' effective rate, pause and 429s "
               "(default: $PACER_ADMIN; without either those columns show -)");
  cmd->add_option("--width", ta->width, "columns to fit (default: the terminal's, else 80)");
  cmd->add_option("--redis", ta->redis,
                  "HOST:PORT of the quota's Redis (repeatable, as pacerd's --redis): every worker's 429/503, 5xx "
                  "and retry counts, their rates over the window, and the providers' shared effective rate and "
                  "pause; with --once it reads twice, about a second apart");
  commands[cmd] = [&s, ta] { top(s, *ta); };
  commands[app.add_subcommand("status", "schema version, campaigns by state, ledger totals, parked rows")] = [&s] {
    status(s);
  };
}

}  // namespace pacer::control::cli
