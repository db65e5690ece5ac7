// pacerctl's command line: parses the arguments (CLI11), validates every
// value before connecting, runs one command against PostgreSQL and writes a
// table (or JSON with --json) to `out` and errors to `err`. Returns the exit
// code (ExitCode in control/values.h). main() passes the real streams and
// environment; tests call it in process. `top` without --once runs until
// SIGINT or SIGTERM, whose handlers it installs for that time and restores.
#pragma once

#include <optional>
#include <ostream>
#include <string>

namespace pacer::control {

struct CliEnvironment {
  std::optional<std::string> postgres;  // PACER_POSTGRES
  std::optional<std::string> brokers{};  // PACER_BROKERS, else PACER_KAFKA_BROKERS (produce)
  bool stdout_is_tty = false;           // top redraws the screen in place (ANSI) only on a terminal
  std::optional<std::string> admin{};        // PACER_ADMIN: HOST:PORT of pacerd's admin listener (worker ...)
  std::optional<std::string> admin_token{};  // PACER_ADMIN_TOKEN (worker drain|reload)
};

int runPacerctl(int argc, const char* const* argv, std::ostream& out, std::ostream& err, const CliEnvironment& env);

}  // namespace pacer::control
