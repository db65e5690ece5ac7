#include "pacer/pacerctl/cli.h"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <csignal>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "pacer/control/json_docs.h"
#include "pacer/control/pg_control.h"
#include "pacer/control/table.h"
#include "pacer/control/top.h"
#include "pacer/control/values.h"
#include "pacer/ledger/pg_ledger.h"
#include "produce.h"

namespace pacer::control {
namespace {

constexpr const char* kExitCodes =
    "Exit codes: 0 done (also when it already was so), 1 not found / already exists / change refused, "
    "2 bad arguments or value, 3 PostgreSQL (or for produce, Kafka) unreachable or a message not delivered in time, "
    "4 database not ready (run `pacerd migrate`) or refused, or Kafka refused a message.\n";

std::string number(double v) { return fmt::format("{}", v); }
std::string rateText(const std::optional<double>& r) { return r ? fmt::format("{}/s", *r) : "unlimited"; }

// What one run needs: the parsed arguments, the streams, and the database,
// connected only once a command's values have been checked.
struct Session {
  Session(std::ostream& o, std::ostream& e, const CliEnvironment& en) : out(o), err(e), env(en) {}

  std::ostream& out;
  std::ostream& err;
  const CliEnvironment& env;
  std::optional<std::string> postgres;  // --postgres, else env.postgres
  int connect_timeout_s = 5;
  bool json = false;
  std::unique_ptr<PgControl> control;

  PgControl& db() {
    if (control) return *control;
    const std::string conninfo = postgres ? *postgres : env.postgres.value_or("");
    if (conninfo.empty())
      throw InvalidValueError(postgres ? "--postgres: empty; give a connection string"
                                       : "no PostgreSQL given: pass --postgres CONNINFO or set PACER_POSTGRES");
    if (connect_timeout_s < 1) throw InvalidValueError("--connect-timeout: must be at least 1 second");
    if (!conninfoParses(conninfo))
      throw InvalidValueError(
          "--postgres (or PACER_POSTGRES): not a libpq connection string; give key=value pairs "
          "(host=... port=... dbname=...) or a postgresql://user@host:port/db URL");
    control = std::make_unique<PgControl>(ConnectOptions{conninfo, connect_timeout_s});
    if (control->schemaVersion() > ledger::latestSchemaVersion())
      err << fmt::format(
          "pacerctl: warning: the database is at schema version {}, newer than this pacerctl knows ({}); "
          "upgrade pacerctl\n",
          control->schemaVersion(), ledger::latestSchemaVersion());
    return *control;
  }

  void emit(const Json& j) { out << j.dump(2) << '\n'; }
};

// The values the commands take, as typed; checked by each command. Absent
// and empty differ: `--rate "$UNSET"` is refused, not taken as the default.
struct Values {
  std::string id;
  std::optional<std::string> rate;
  std::optional<std::string> burst;
  std::optional<std::string> weight;
  std::optional<std::string> provider;
  std::optional<std::string> name;
  std::optional<std::string> total;
};

// `pacerctl produce`'s arguments, as typed.
struct ProduceArgs {
  std::optional<std::string> brokers;
  std::string topic;
  std::string campaign;
  std::string count = "1";
  std::optional<std::string> rate;
  std::string recipient_prefix;
  std::string payload = R"({"text":"test message from pacerctl produce"})";
  std::optional<std::string> id_prefix;
  std::optional<int> partition;
  int timeout_ms = 30000;
};

// `pacerctl top`'s arguments.
struct TopArgs {
  int interval_ms = 1000;
  double window_s = 5;
  bool once = false;
};

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

// Kafka topic names: 1 to 249 of [a-zA-Z0-9._-].
void checkTopic(const std::string& topic) {
  const bool ok =
      !topic.empty() && topic.size() <= 249 &&
      topic.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == std::string::npos;
  if (!ok)
    throw InvalidValueError(
        fmt::format("--topic '{}': a Kafka topic is 1 to 249 characters of a-z A-Z 0-9 . _ -", topic));
}

std::string totalText(const std::optional<std::int64_t>& t) { return t ? std::to_string(*t) : "unknown"; }

// An option whose value lands in `to`, so that "not given" stays nullopt.
CLI::Option* optionalText(CLI::App* cmd, const std::string& name, std::optional<std::string>& to,
                          const std::string& help) {
  return cmd->add_option_function<std::string>(
      name, [&to](const std::string& text) { to = text; }, help);
}

void printCampaignList(Session& s, const std::vector<CampaignRow>& rows) {
  if (s.json) {
    s.emit(campaignListJson(rows));
    return;
  }
  if (rows.empty()) {
    s.out << "no campaigns; `pacerctl campaign create ID --rate R` adds one\n";
    return;
  }
  Table t({"ID", "NAME", "STATE", "SEND_RATE", "BURST", "WEIGHT", "PROVIDER", "UPDATED (UTC)"},
          {false, false, false, true, true, true, false, false});
  for (const CampaignRow& c : rows)
    t.add({c.id, c.name.empty() ? "-" : c.name, c.state, rateText(c.limit.rate), number(c.limit.burst),
           number(c.weight), c.provider.empty() ? "-" : c.provider, c.updated_at});
  s.out << t.render();
}

void printCampaignDetail(Session& s, const CampaignDetail& d) {
  const CampaignRow& c = d.campaign;
  if (s.json) {
    s.emit(campaignDetailJson(d));
    return;
  }
  Table t({"FIELD", "VALUE"});
  t.add({"id", c.id});
  t.add({"name", c.name.empty() ? "-" : c.name});
  t.add({"state", c.state});
  t.add({"send_rate", rateText(c.limit.rate)});
  t.add({"burst", number(c.limit.burst)});
  t.add({"weight", number(c.weight)});
  t.add({"provider", c.provider.empty() ? "-" : c.provider});
  t.add({"updated_at", c.updated_at});
  t.add({"total", totalText(c.total)});
  t.add({"sent", std::to_string(d.ledger.sent)});
  t.add({"failed", std::to_string(d.ledger.failed)});
  t.add({"rejected", std::to_string(d.ledger.rejected)});
  t.add({"last_recorded_at", d.ledger.last_recorded_at.empty() ? "-" : d.ledger.last_recorded_at});
  t.add({"parked", std::to_string(d.parked)});
  s.out << t.render();
}

template <typename Row>
void printChange(Session& s, std::string_view kind, std::string_view change, const Change<Row>& c,
                 const std::string& human) {
  if (s.json) {
    s.emit(changeJson(kind, change, c));
    return;
  }
  s.out << human << '\n';
}

std::string limitChange(const char* rate_name, const Limit& before, const Limit& after) {
  return fmt::format("{} {} -> {}, burst {} -> {}", rate_name, rateText(before.rate), rateText(after.rate),
                     number(before.burst), number(after.burst));
}

void printProviderList(Session& s, const std::vector<ProviderRow>& rows) {
  if (s.json) {
    s.emit(providerListJson(rows));
    return;
  }
  if (rows.empty()) {
    s.out << "no providers; `pacerctl provider create ID --rate R` adds one\n";
    return;
  }
  Table t({"ID", "RATE", "BURST", "CAMPAIGNS", "UPDATED (UTC)"}, {false, true, true, true, false});
  for (const ProviderRow& p : rows)
    t.add({p.id, rateText(p.limit.rate), number(p.limit.burst), std::to_string(p.campaigns), p.updated_at});
  s.out << t.render();
}

void printStatus(Session& s, const StatusReport& r) {
  const std::string shown = redactConninfo(s.postgres ? *s.postgres : s.env.postgres.value_or(""));
  if (s.json) {
    Json campaigns = Json::object();
    std::int64_t total = 0;
    for (const auto& [state, n] : r.campaigns_by_state) campaigns[state] = n, total += n;
    campaigns["total"] = total;
    Json ledger = ledgerJson(r.ledger);
    ledger["total"] = r.ledger.sent + r.ledger.failed + r.ledger.rejected;
    s.emit(Json{{"postgres", shown},
                {"schema", {{"database", r.schema_version}, {"pacerctl", r.build_schema_version}}},
                {"campaigns", campaigns},
                {"providers", r.providers},
                {"ledger", ledger},
                {"parked", {{"total", r.parked}, {"claimed", r.parked_claimed}}}});
    return;
  }
  Table t({"WHAT", "COUNT"}, {false, true});
  std::int64_t total = 0;
  for (const auto& [state, n] : r.campaigns_by_state) t.add({"campaigns " + state, std::to_string(n)}), total += n;
  t.add({"campaigns (all)", std::to_string(total)});
  t.add({"providers", std::to_string(r.providers)});
  t.add({"ledger sent", std::to_string(r.ledger.sent)});
  t.add({"ledger failed", std::to_string(r.ledger.failed)});
  t.add({"ledger rejected", std::to_string(r.ledger.rejected)});
  t.add({"parked", std::to_string(r.parked)});
  t.add({"parked, claimed by a worker", std::to_string(r.parked_claimed)});
  s.out << fmt::format("postgres: {}\nschema version: {} (this pacerctl: {})\nlast ledger row: {}\n", shown,
                       r.schema_version, r.build_schema_version,
                       r.ledger.last_recorded_at.empty() ? "-" : r.ledger.last_recorded_at)
        << t.render();
}

}  // namespace

int runPacerctl(int argc, const char* const* argv, std::ostream& out, std::ostream& err, const CliEnvironment& env) {
  Session s(out, err, env);
  Values v;
  CLI::App app{"pacerctl: the operator's command line for Pacer's campaigns and providers (in PostgreSQL)"};
  app.footer(kExitCodes);
  app.fallthrough();  // --postgres and --json also after the command
  app.require_subcommand(1);
  optionalText(&app, "--postgres", s.postgres,
               "libpq connection string or postgresql:// URL (default: $PACER_POSTGRES); its password is never "
               "printed");
  app.add_flag("--json", s.json, "JSON on stdout instead of tables, for scripts");
  app.add_option("--connect-timeout", s.connect_timeout_s, "seconds to wait for PostgreSQL")->capture_default_str();

  // Each command checks its values, then talks to the database.
  std::map<const CLI::App*, std::function<void()>> commands;
  const auto idArg = [&](CLI::App* cmd, const char* what) {
    cmd->add_option("id", v.id, fmt::format("{} id", what))->required();
  };
  const auto limitArgs = [&](CLI::App* cmd, bool rate_positional) {
    if (rate_positional)
      optionalText(cmd, "rate", v.rate, "messages per second, or unlimited")->required();
    else
      optionalText(cmd, "--rate", v.rate, "messages per second, or unlimited (default: unlimited)");
    optionalText(cmd, "--burst", v.burst,
                 "messages that may go at once, >= 1 (default: ceil(rate / 100) + 1, 10 ms of the rate)");
  };
  const auto limit = [&](std::string_view rate_flag) {
    return makeLimit(v.rate ? parseRate(*v.rate, rate_flag) : std::nullopt,
                     v.burst ? std::optional<double>(parseBurst(*v.burst, "--burst")) : std::nullopt);
  };

  CLI::App* campaign = app.add_subcommand("campaign", "create, list, show and change campaigns");
  campaign->require_subcommand(1);

  CLI::App* c_create = campaign->add_subcommand("create", "add a campaign (state active)");
  idArg(c_create, "campaign");
  limitArgs(c_create, false);
  optionalText(c_create, "--weight", v.weight, "share of the sink against other campaigns, > 0 (default 1)");
  optionalText(c_create, "--provider", v.provider, "the provider whose limit it shares (default: none)");
  optionalText(c_create, "--name", v.name, "a name for people (default: empty)");
  optionalText(c_create, "--total", v.total,
               "messages the campaign has in all, for the backlog in `pacerctl top` (default: unknown)");
  commands[c_create] = [&] {
    NewCampaign nc;
    checkId(v.id, "campaign");
    nc.id = v.id;
    nc.name = v.name.value_or("");
    checkName(nc.name);
    nc.limit = limit("--rate");
    nc.weight = v.weight ? parseWeight(*v.weight, "--weight") : 1.0;
    if (v.provider) checkId(*v.provider, "provider");  // an empty one is refused, not taken as none
    nc.provider = v.provider.value_or("");
    if (v.total) nc.total = parseCount(*v.total, "--total", 0, "a total");
    const CampaignRow c = s.db().createCampaign(nc);
    if (s.json) return s.emit(Json{{"change", "create"}, {"changed", true}, {"campaign", campaignJson(c)}});
    s.out << fmt::format("campaign '{}' created: state {}, send_rate {}, burst {}, weight {}, provider {}, total {}\n",
                         c.id, c.state, rateText(c.limit.rate), number(c.limit.burst), number(c.weight),
                         c.provider.empty() ? "none" : c.provider, totalText(c.total));
  };

  CLI::App* c_list = campaign->add_subcommand("list", "every campaign with its state and limits");
  commands[c_list] = [&] { printCampaignList(s, s.db().campaigns()); };

  CLI::App* c_show = campaign->add_subcommand("show", "one campaign, with its ledger counts and parked messages");
  idArg(c_show, "campaign");
  commands[c_show] = [&] {
    checkId(v.id, "campaign");
    printCampaignDetail(s, s.db().campaign(v.id));
  };

  CLI::App* c_rate = campaign->add_subcommand(
      "set-rate", "change send_rate (and burst; without --burst it becomes the default for the new rate)");
  idArg(c_rate, "campaign");
  limitArgs(c_rate, true);
  commands[c_rate] = [&] {
    checkId(v.id, "campaign");
    const Limit l = limit("rate");
    const auto c = s.db().setCampaignLimit(v.id, l);
    printChange(s, "campaign", "set-rate", c,
                fmt::format("campaign '{}': {}", v.id, limitChange("send_rate", c.before.limit, c.after.limit)));
  };

  CLI::App* c_total = campaign->add_subcommand(
      "set-total", "set how many messages the campaign has in all (a number, or unknown), for the backlog in top");
  idArg(c_total, "campaign");
  optionalText(c_total, "total", v.total, "messages in all, or unknown")->required();
  commands[c_total] = [&] {
    checkId(v.id, "campaign");
    const std::optional<std::int64_t> total =
        *v.total == "unknown" ? std::nullopt : std::optional<std::int64_t>(parseCount(*v.total, "total", 0, "a total"));
    const auto c = s.db().setCampaignTotal(v.id, total);
    printChange(
        s, "campaign", "set-total", c,
        c.changed
            ? fmt::format("campaign '{}': total {} -> {}", v.id, totalText(c.before.total), totalText(c.after.total))
            : fmt::format("campaign '{}': total is already {}; nothing changed", v.id, totalText(c.after.total)));
  };

  const auto stateCommand = [&](const char* name, const char* help, CampaignAction action, const char* done,
                                const char* note) {
    CLI::App* cmd = campaign->add_subcommand(name, help);
    idArg(cmd, "campaign");
    commands[cmd] = [&, action, done, note] {
      checkId(v.id, "campaign");
      const auto c = s.db().changeCampaignState(v.id, action);
      const std::string human = c.changed
                                    ? fmt::format("campaign '{}' {} (was {}){}", v.id, done, c.before.state, note)
                                    : fmt::format("campaign '{}' is already {}; nothing changed", v.id, c.after.state);
      printChange(s, "campaign", actionName(action), c, human);
    };
  };
  stateCommand("pause", "stop sending a campaign's messages (they wait; nothing is dropped)", CampaignAction::kPause,
               "paused", "");
  stateCommand("resume", "send a paused campaign's messages again", CampaignAction::kResume, "resumed", "");
  stateCommand("cancel", "stop a campaign for good: pacerd fails its remaining messages with reason 'cancelled'",
               CampaignAction::kCancel, "cancelled",
               "; pacerd fails its remaining messages with reason 'cancelled' as it reads them");

  CLI::App* provider = app.add_subcommand("provider", "create, list and change providers");
  provider->require_subcommand(1);

  CLI::App* p_create = provider->add_subcommand("create", "add a provider (a limit its campaigns share)");
  idArg(p_create, "provider");
  limitArgs(p_create, false);
  commands[p_create] = [&] {
    checkId(v.id, "provider");
    const Limit l = limit("--rate");
    const ProviderRow p = s.db().createProvider(v.id, l);
    if (s.json) return s.emit(Json{{"change", "create"}, {"changed", true}, {"provider", providerJson(p)}});
    s.out << fmt::format("provider '{}' created: rate {}, burst {}\n", p.id, rateText(p.limit.rate),
                         number(p.limit.burst));
  };

  CLI::App* p_list = provider->add_subcommand("list", "every provider with its limit and campaign count");
  commands[p_list] = [&] { printProviderList(s, s.db().providers()); };

  CLI::App* p_rate = provider->add_subcommand(
      "set-rate", "change a provider's rate (and burst; without --burst it becomes the default for the new rate)");
  idArg(p_rate, "provider");
  limitArgs(p_rate, true);
  commands[p_rate] = [&] {
    checkId(v.id, "provider");
    const Limit l = limit("rate");
    const auto c = s.db().setProviderLimit(v.id, l);
    printChange(s, "provider", "set-rate", c,
                fmt::format("provider '{}': {}", v.id, limitChange("rate", c.before.limit, c.after.limit)));
  };

  ProduceArgs pa;
  CLI::App* produce = app.add_subcommand(
      "produce",
      "send test messages for a campaign into Kafka (README \"Message contract\"); adds the delivered ones "
      "to the campaign's total when it is known");
  optionalText(produce, "--brokers", pa.brokers,
               "Kafka bootstrap servers HOST:PORT,... (default: $PACER_BROKERS, else $PACER_KAFKA_BROKERS)");
  produce->add_option("--topic", pa.topic, "the topic pacerd reads")->required();
  produce->add_option("--campaign", pa.campaign, "campaign id: the Kafka key of every message")->required();
  produce->add_option("--count", pa.count, "messages to send")->capture_default_str();
  optionalText(produce, "--rate", pa.rate, "messages per second, paced on a steady clock (default: unlimited)");
  produce->add_option("--recipient-prefix", pa.recipient_prefix,
                      "header recipient = PREFIX + index (default: no recipient header)");
  produce->add_option("--payload", pa.payload, "the value of every message")->capture_default_str();
  optionalText(produce, "--id-prefix", pa.id_prefix,
               "header message-id = PREFIX + index (default: CAMPAIGN:RUN: with RUN unique per run)");
  produce->add_option("--partition", pa.partition, "this partition (default: by key, one partition per campaign)");
  produce->add_option("--timeout-ms", pa.timeout_ms, "a message not acknowledged by then fails")->capture_default_str();
  commands[produce] = [&] {
    ProduceOptions o;
    o.brokers = pa.brokers ? *pa.brokers : s.env.brokers.value_or("");
    if (o.brokers.empty())
      throw InvalidValueError(pa.brokers ? "--brokers: empty; give HOST:PORT,..."
                                         : "no Kafka brokers given: pass --brokers HOST:PORT,... or set PACER_BROKERS");
    checkTopic(pa.topic);
    o.topic = pa.topic;
    checkId(pa.campaign, "campaign");
    o.campaign = pa.campaign;
    o.count = parseCount(pa.count, "--count", 1, "a count");
    if (pa.rate) {
      o.rate = parseRate(*pa.rate, "--rate");
      if (o.rate && *o.rate <= 0)
        throw InvalidValueError("--rate '0': nothing would ever be sent; give a rate above 0");
    }
    if (pa.partition && *pa.partition < 0) throw InvalidValueError("--partition: must be 0 or more");
    if (pa.timeout_ms < 1) throw InvalidValueError("--timeout-ms: must be at least 1");
    o.timeout_ms = pa.timeout_ms;
    o.recipient_prefix = pa.recipient_prefix;
    o.payload = pa.payload;
    o.partition = pa.partition;
    if (pa.id_prefix) {
      if (pa.id_prefix->size() > 200) throw InvalidValueError("--id-prefix: at most 200 bytes");
      o.id_prefix = *pa.id_prefix;
    } else {
      // Unique per run, so a second run's messages are new to the ledger
      // (message-id is its idempotency key) instead of skipped as replays.
      const auto us =
          std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
              .count();
      o.id_prefix = fmt::format("{}:{:x}{:x}:", o.campaign, us, static_cast<unsigned>(::getpid()));
    }
    // The campaign's total, when a database is given: it must exist, and
    // what is delivered is added to a known total as it is acknowledged.
    const bool with_db = s.postgres.has_value() || s.env.postgres.has_value();
    std::optional<CampaignRow> before;
    std::optional<CampaignRow> after;
    // Delivered but not yet added to the total: a database error mid-run does
    // not stop producing (the messages are in Kafka already); the addition is
    // tried again with the next acknowledgements and reported at the end.
    std::int64_t unadded = 0;
    std::string total_error;
    ExitCode total_code = ExitCode::kDatabase;
    if (with_db) {
      before = s.db().campaignRow(o.campaign);
      after = before;
      o.on_delivered = [&](std::int64_t n) {
        unadded += n;
        try {
          after = s.db().addToCampaignTotal(o.campaign, unadded);
          unadded = 0;
        } catch (const ControlError& e) {
          total_error = e.what();
          total_code = e.code();
        } catch (const std::exception& e) {
          total_error = e.what();
        }
      };
    }
    const ProduceResult r = produceMessages(o);
    const std::string total_note =
        !with_db        ? "total not updated (no --postgres or PACER_POSTGRES)"
        : unadded > 0   ? fmt::format("total NOT updated for {} delivered message(s)", unadded)
        : !after->total ? "total unknown, not changed (`pacerctl campaign set-total` sets one)"
                        : fmt::format("total {} -> {}", totalText(before->total), totalText(after->total));
    if (s.json) {
      Json j{{"campaign", o.campaign},
             {"topic", o.topic},
             {"requested", o.count},
             {"delivered", r.delivered},
             {"failed", r.failed},
             {"seconds", r.seconds},
             {"total", with_db && after->total ? Json(*after->total) : Json(nullptr)}};
      if (!r.error.empty()) j["error"] = r.error;
      if (unadded > 0) j["not_added_to_total"] = unadded;
      s.emit(j);
    } else {
      s.out << fmt::format("campaign '{}': {} of {} messages delivered to topic '{}' in {:.1f} s; {}\n", o.campaign,
                           r.delivered, o.count, o.topic, r.seconds, total_note);
    }
    if (r.unreachable)
      throw UnreachableError(fmt::format(
          "cannot reach Kafka at '{}': {}; check --brokers (or PACER_BROKERS) and that the brokers are running",
          o.brokers, r.error.empty() ? "no broker answered" : r.error));
    if (r.failed > 0) {
      const std::string what = fmt::format("{} of {} messages were not delivered to topic '{}' (first error: {})",
                                           r.failed, o.count, o.topic, r.error);
      if (r.transient) throw UnreachableError(what + "; check that the brokers are up, then produce the rest");
      throw ControlError(ExitCode::kDatabase, what + "; the broker refused them", ErrorKind::kRejected);
    }
    if (unadded > 0)
      throw ControlError(total_code,
                         fmt::format("{} delivered message(s) were not added to campaign '{}''s total ({}); do not "
                                     "produce them again: add them with `pacerctl campaign set-total {} N`",
                                     unadded, o.campaign, total_error, o.campaign),
                         total_code == ExitCode::kUnreachable ? ErrorKind::kUnavailable : ErrorKind::kRejected);
  };

  TopArgs ta;
  CLI::App* top = app.add_subcommand(
      "top", "live view of the active and paused campaigns: achieved rate, backlog, progress, ETA (Ctrl-C ends it)");
  top->add_option("--interval-ms", ta.interval_ms, "refresh period")->capture_default_str();
  top->add_option("--window-s", ta.window_s, "the achieved rate counts the sent rows of this many last seconds")
      ->capture_default_str();
  top->add_flag("--once", ta.once, "print one frame and exit (with --json: the frame as JSON)");
  commands[top] = [&] {
    if (ta.interval_ms < 100 || ta.interval_ms > 3'600'000)
      throw InvalidValueError(fmt::format("--interval-ms {}: give 100 to 3600000", ta.interval_ms));
    if (!(ta.window_s >= 1 && ta.window_s <= 3600))
      throw InvalidValueError(fmt::format("--window-s {}: give 1 to 3600 seconds", ta.window_s));
    if (s.json && !ta.once) throw InvalidValueError("--json with top needs --once (one frame as JSON)");
    PgControl& db = s.db();
    if (ta.once) {
      const TopFrame f = topFrameOf(db.topSnapshot(ta.window_s), ta.window_s);
      s.out << (s.json ? renderTopJson(f) : renderTopText(f));
      return;
    }
    StopSignals signals;
    const bool tty = s.env.stdout_is_tty;
    if (tty) s.out << "\x1b[?25l";  // hide the cursor while redrawing
    struct ShowCursor {
      std::ostream& out;
      bool on;
      ~ShowCursor() {
        if (on) out << "\x1b[?25h" << std::flush;
      }
    } show_cursor{s.out, tty};
    while (!g_top_stop) {
      const auto next = std::chrono::steady_clock::now() + std::chrono::milliseconds(ta.interval_ms);
      const std::string frame = renderTopText(topFrameOf(db.topSnapshot(ta.window_s), ta.window_s));
      // Drawn over the last frame, not after clearing: no flicker of an empty screen.
      s.out << (tty ? terminalRedraw(frame) : frame + "\n") << std::flush;
      while (!g_top_stop && std::chrono::steady_clock::now() < next)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  };

  CLI::App* status = app.add_subcommand("status", "schema version, campaigns by state, ledger totals, parked rows");
  commands[status] = [&] { printStatus(s, s.db().status()); };

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e, out, err);
    return code == 0 ? 0 : static_cast<int>(ExitCode::kUsage);
  }

  try {
    for (const auto& [cmd, run] : commands) {
      if (cmd->parsed()) {
        run();
        return static_cast<int>(ExitCode::kOk);
      }
    }
    err << "pacerctl: no command given; see pacerctl --help\n";
    return static_cast<int>(ExitCode::kUsage);
  } catch (const ControlError& e) {
    err << "pacerctl: " << e.what() << '\n';
    return static_cast<int>(e.code());
  } catch (const std::exception& e) {
    err << "pacerctl: unexpected error: " << e.what() << '\n';
    return static_cast<int>(ExitCode::kDatabase);
  }
}

}  // namespace pacer::control
