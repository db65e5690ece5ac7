// pacerd: the worker daemon. Reads campaign messages from Kafka, paces them
// per campaign and provider, delivers them through one sink, records every
// outcome in the PostgreSQL ledger, and commits offsets only behind the
// ledger. See README "pacerd".
//
//   pacerd [--config FILE] --brokers H:P --topic T --postgres CONNINFO [--sink stdout|null|http|kafka] ...
//   pacerd migrate --postgres CONNINFO
// Settings come from built-in defaults < the YAML file < PACER_<SECTION>_<KEY>
// environment variables < flags (src/config/pacerd_config.h); --postgres also
// defaults to $PACER_POSTGRES, as for pacerctl. SIGHUP reloads the file.
#include <fmt/format.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "pacer/config/pacerd_config.h"
#include "pacer/daemon/daemon.h"
#include "pacer/ledger/pg_ledger.h"

namespace {

std::atomic<bool> g_stop{false};
std::atomic<bool> g_reload{false};

void onSignal(int) { g_stop.store(true); }
void onHangup(int) { g_reload.store(true); }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"pacerd: paces campaign messages from Kafka to a provider, with a PostgreSQL delivery ledger"};
  pacer::config::Sources sources;
  sources.getenv = [](const char* name) -> const char* { return std::getenv(name); };
  app.add_option("--config", sources.file,
                 "YAML configuration (config/pacerd.example.yaml); environment variables and flags override it; "
                 "SIGHUP reloads it")
      ->envname("PACER_CONFIG");
  pacer::config::addFlags(app, sources.flags);
  app.set_version_flag("--version", fmt::format("pacerd {}", PACER_VERSION));

  // migrate reads postgres.* like the daemon: its own --postgres, else the
  // environment and the --config file (given before or after `migrate`).
  CLI::App* migrate = app.add_subcommand("migrate", "apply the schema migrations and exit");
  std::vector<std::string>& migrate_pg = sources.flags["postgres.url"];
  migrate->add_option("--postgres", migrate_pg,
                      "libpq connection string or URL (default: postgres.url from --config, "
                      "$PACER_POSTGRES_URL or $PACER_POSTGRES)");
  migrate->add_option("--config", sources.file, "YAML configuration, for its postgres section");
  CLI11_PARSE(app, argc, argv);

  try {
    if (*migrate) {
      const std::string pg = pacer::config::load(sources).options.postgres;
      if (pg.empty())
        throw pacer::worker::DaemonConfigError(
            "migrate: postgres: empty; give --postgres CONNINFO, set PACER_POSTGRES or postgres.url in --config");
      const int applied = pacer::ledger::migrate(pacer::ledger::PgLedgerOptions{pg});
      fmt::print("applied {} migration(s); schema version {}\n", applied, pacer::ledger::latestSchemaVersion());
      return 0;
    }
    pacer::config::Config current = pacer::config::load(sources);

    pacer::worker::ReloadHook hook;
    hook.requested = &g_reload;
    hook.reload = [&sources, &current]() {
      // The file and its secret files read again; the same environment and flags over them.
      const pacer::config::Config next = pacer::config::load(sources);
      pacer::config::ReloadPlan plan = pacer::config::planReload(current, next);
      current = plan.config;
      return pacer::worker::ReloadResult{current.options, std::move(plan.changed), std::move(plan.needs_restart)};
    };

    struct sigaction sa {};
    sa.sa_handler = onSignal;
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGINT, &sa, nullptr);
    struct sigaction hup {};
    hup.sa_handler = onHangup;
    sigaction(SIGHUP, &hup, nullptr);
    return pacer::worker::runDaemon(current.options, g_stop, std::move(hook));
  } catch (const pacer::worker::DaemonConfigError& e) {
    fmt::print(stderr, "pacerd: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "pacerd: {}\n", e.what());
    return 1;
  }
}
