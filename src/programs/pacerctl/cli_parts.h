// pacerctl's pieces (private to src/programs/pacerctl): the session every
// command shares, the values as typed, and one registration function per
// command group; each subcommand is one function in its group's file.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include "pacer/control/json_docs.h"
#include "pacer/control/pg_control.h"
#include "pacer/control/values.h"
#include "pacer/pacerctl/cli.h"

namespace pacer::control::cli {

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

  // Connects on first use; throws InvalidValueError, UnreachableError or
  // UnauthorizedError (a refused password).
  PgControl& db();
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
  // Priority and recipient rules (campaign create, campaign set-rules).
  std::optional<std::string> priority_class;
  std::optional<std::string> quiet_hours;
  std::optional<std::string> time_zone;
  std::optional<std::string> cap;
  std::optional<std::string> cap_policy;
  std::optional<std::string> ttl;
  std::optional<std::string> failover;
  std::optional<std::string> routes;
  std::optional<std::string> callback;
};

// The command to run, by the (sub)command CLI11 parsed.
using Commands = std::map<const CLI::App*, std::function<void()>>;

std::string number(double v);
std::string rateText(const std::optional<double>& r);
std::string totalText(const std::optional<std::int64_t>& t);
std::string limitChange(const char* rate_name, const Limit& before, const Limit& after);

// An option whose value lands in `to`, so that "not given" stays nullopt.
CLI::Option* optionalText(CLI::App* cmd, const std::string& name, std::optional<std::string>& to,
                          const std::string& help);

// A change as JSON (--json) or as the sentence `human`.
template <typename Row>
void printChange(Session& s, std::string_view kind, std::string_view change, const Change<Row>& c,
                 const std::string& human) {
  if (s.json) {
    s.emit(changeJson(kind, change, c));
    return;
  }
  s.out << human << '\n';
}

// campaign create|list|show|set-rate|set-rules|set-total|pause|resume|cancel
void addCampaignCommands(CLI::App& app, Session& s, Values& v, Commands& commands);
// provider create|list|set-rate
void addProviderCommands(CLI::App& app, Session& s, Values& v, Commands& commands);
// produce
void addProduceCommand(CLI::App& app, Session& s, Commands& commands);
// top, status
void addTopCommands(CLI::App& app, Session& s, Commands& commands);
// One HTTP request to a pacerd admin listener at HOST:PORT (with a bearer
// token when not empty); throws UnreachableError when nothing answers.
struct Answer {
  long status = 0;
  std::string body;
};
Answer call(const std::string& address, const std::string& path, bool post, const std::string& token, int timeout_ms);

// worker status|drain|reload: a running pacerd's admin listener
void addWorkerCommands(CLI::App& app, Session& s, Commands& commands);

// tokens export|count: the dead push tokens in invalid_tokens
void addTokenCommands(CLI::App& app, Session& s, Commands& commands);

}  // namespace pacer::control::cli
