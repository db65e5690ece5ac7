// pacerctl's entry: the global options, the command groups (cli_*.cc), the
// parse with "did you mean" for a mistyped command, and the exit code.
#include "pacer/pacerctl/cli.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "cli_parts.h"
#include "pacer/ledger/pg_ledger.h"
#include "pacer/validation.h"

namespace pacer::control {
namespace {

using cli::Commands;
using cli::Session;

constexpr const char* kExitCodes =
    "Exit codes: 0 done (also when it already was so), 1 not found / already exists / change refused, "
    "2 bad arguments or value, 3 PostgreSQL (or Kafka, or pacerd's admin listener) unreachable or a message not "
    "delivered in time, 4 database not ready (run `pacerd migrate`) or refused, or Kafka refused a message, "
    "5 unauthorized (PostgreSQL's user or password, or PACER_ADMIN_TOKEN).\n";

std::size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// An option of `where` or of a command above it (fallthrough) that takes a value.
bool takesValue(const CLI::App& where, const std::string& name) {
  for (const CLI::App* a = &where; a != nullptr; a = a->get_parent())
    if (const CLI::Option* o = a->get_option_no_throw(name)) return o->get_type_size_max() > 0 && o->get_expected_min() > 0;
  return false;
}

// The first word that is not an option or an option's value, and the
// command (or group) it was given to; empty when every word is known.
std::string unknownCommand(const CLI::App& app, int argc, const char* const* argv, const CLI::App*& where) {
  where = &app;
  for (int i = 1; i < argc; ++i) {
    const std::string_view word = argv[i];
    if (word.starts_with("-")) {
      if (word.find('=') == std::string_view::npos && takesValue(*where, std::string(word))) ++i;
      continue;
    }
    if (where->get_subcommands({}).empty()) return "";  // a leaf command: the rest are its arguments
    const CLI::App* sub = nullptr;
    for (const CLI::App* candidate : where->get_subcommands({}))
      if (candidate->check_name(std::string(word))) sub = candidate;
    if (!sub) return std::string(word);
    where = sub;
  }
  return "";
}

// "unknown command 'campain'; did you mean 'campaign'?" for the closest name.
std::string didYouMean(const CLI::App& where, const std::string& word) {
  std::string best;
  std::size_t best_d = 3;  // at most two edits away
  for (const CLI::App* sub : where.get_subcommands({})) {
    const std::size_t d = editDistance(word, sub->get_name());
    if (d < best_d) best_d = d, best = sub->get_name();
  }
  const std::string path = where.get_parent() ? where.get_name() + " " : "";
  std::string names;
  for (const CLI::App* sub : where.get_subcommands({})) names += (names.empty() ? "" : ", ") + sub->get_name();
  return fmt::format("pacerctl: unknown command '{}{}'.{} The commands{} are: {}.\n", path, word,
                     best.empty() ? "" : fmt::format(" Did you mean '{}{}'?", path, best),
                     path.empty() ? "" : fmt::format(" of '{}'", where.get_name()), names);
}

int runCommand(const Commands& commands, std::ostream& err) {
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

}  // namespace

namespace cli {

std::string number(double v) {
  return std::isfinite(v) ? fmt::format("{}", v) : fmt::format("invalid ({})", validation::numberText(v));
}
std::string rateText(const std::optional<double>& r) {
  if (!r) return "unlimited";
  return std::isfinite(*r) ? fmt::format("{}/s", *r) : number(*r);
}
std::string totalText(const std::optional<std::int64_t>& t) { return t ? std::to_string(*t) : "unknown"; }

std::string limitChange(const char* rate_name, const Limit& before, const Limit& after) {
  return fmt::format("{} {} -> {}, burst {} -> {}", rate_name, rateText(before.rate), rateText(after.rate),
                     number(before.burst), number(after.burst));
}

CLI::Option* optionalText(CLI::App* cmd, const std::string& name, std::optional<std::string>& to,
                          const std::string& help) {
  return cmd->add_option_function<std::string>(
      name, [&to](const std::string& text) { to = text; }, help);
}

PgControl& Session::db() {
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

}  // namespace cli

int runPacerctl(int argc, const char* const* argv, std::ostream& out, std::ostream& err, const CliEnvironment& env) {
  Session s(out, err, env);
  cli::Values v;
  CLI::App app{"pacerctl: the operator's command line for Pacer's campaigns and providers (in PostgreSQL)"};
  app.footer(kExitCodes);
  app.fallthrough();  // --postgres and --json also after the command
  app.require_subcommand(1);
  app.set_version_flag("--version", fmt::format("pacerctl {}", PACER_VERSION));
  cli::optionalText(&app, "--postgres", s.postgres,
                    "libpq connection string or postgresql:// URL (default: $PACER_POSTGRES); its password is never "
                    "printed");
  app.add_flag("--json", s.json, "JSON on stdout instead of tables, for scripts");
  app.add_option("--connect-timeout", s.connect_timeout_s, "seconds to wait for PostgreSQL")->capture_default_str();
  Commands commands;
  cli::addCampaignCommands(app, s, v, commands);
  cli::addProviderCommands(app, s, v, commands);
  cli::addProduceCommand(app, s, commands);
  cli::addTopCommands(app, s, commands);
  cli::addWorkerCommands(app, s, commands);
  cli::addTokenCommands(app, s, commands);
  const CLI::App* where = nullptr;
  if (const std::string word = unknownCommand(app, argc, argv, where); !word.empty()) {
    err << didYouMean(*where, word);
    return static_cast<int>(ExitCode::kUsage);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e, out, err);
    return code == 0 ? 0 : static_cast<int>(ExitCode::kUsage);
  }
  return runCommand(commands, err);
}

}  // namespace pacer::control
