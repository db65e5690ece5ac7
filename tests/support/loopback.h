// Helpers shared by the integration tests' server fixtures.
#pragma once

#include <string>

namespace pacer::testing {

// An unused TCP port on 127.0.0.1 at or below `max_port` (the kernel's pick;
// free when returned). Redis Cluster also listens on port + 10000, hence the cap.
int freeLoopbackPort(int max_port = 65535);

// Runs `command` through the shell with stderr folded into `output`; returns
// pclose()'s status (0 on success, -1 if it could not start).
int runShell(const std::string& command, std::string& output);

}  // namespace pacer::testing
