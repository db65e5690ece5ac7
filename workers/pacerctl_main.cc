// pacerctl: the operator's command line. Creates, lists and changes campaigns
// and providers in PostgreSQL and announces each change on the
// pacer_control channel (NOTIFY); produces test messages into Kafka; shows
// the campaigns live; drains or reloads a running pacerd. See docs/operations.md.
//
//   pacerctl [--postgres CONNINFO] [--json] campaign create|list|show|set-rate|set-total|pause|resume|cancel ...
//   pacerctl [--postgres CONNINFO] [--json] provider create|list|set-rate ...
//   pacerctl [--postgres CONNINFO] [--json] status
//   pacerctl [--postgres CONNINFO] produce --brokers B --topic T --campaign C --count N [--rate R]
//   pacerctl [--postgres CONNINFO] top [--once [--json]] [--interval-ms MS]
//   pacerctl worker status|drain|reload [--admin HOST:PORT]   (PACER_ADMIN_TOKEN for drain and reload)
//   pacerctl --version
#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "pacer/pacerctl/cli.h"

int main(int argc, char** argv) {
  pacer::control::CliEnvironment env;
  if (const char* pg = std::getenv("PACER_POSTGRES")) env.postgres = pg;
  // PACER_KAFKA_BROKERS is the name pacerd's configuration reads (README "Configuration").
  for (const char* name : {"PACER_BROKERS", "PACER_KAFKA_BROKERS"}) {
    const char* brokers = std::getenv(name);
    if (brokers && *brokers && !env.brokers) env.brokers = brokers;
  }
  env.stdout_is_tty = ::isatty(STDOUT_FILENO) == 1;
  if (const char* admin = std::getenv("PACER_ADMIN"); admin && *admin) env.admin = admin;
  if (const char* token = std::getenv("PACER_ADMIN_TOKEN")) env.admin_token = token;
  return pacer::control::runPacerctl(argc, argv, std::cout, std::cerr, env);
}
