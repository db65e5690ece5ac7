// pacerctl: the operator's command line. Creates, lists and changes campaigns
// and providers in PostgreSQL and announces each change on the
// pacer_control channel (NOTIFY). See README "pacerctl".
//
//   pacerctl [--postgres CONNINFO] [--json] campaign create|list|show|set-rate|pause|resume|cancel ...
//   pacerctl [--postgres CONNINFO] [--json] provider create|list|set-rate ...
//   pacerctl [--postgres CONNINFO] [--json] status
#include <cstdlib>
#include <iostream>

#include "control/cli.h"

int main(int argc, char** argv) {
  pacer::control::CliEnvironment env;
  if (const char* pg = std::getenv("PACER_POSTGRES")) env.postgres = pg;
  return pacer::control::runPacerctl(argc, argv, std::cout, std::cerr, env);
}
