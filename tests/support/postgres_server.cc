#include "support/postgres_server.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "support/loopback.h"

namespace pacer::testing {
namespace {

std::string capture(const std::string& command, int& status) {
  std::string out;
  status = runShell(command, out);
  return out;
}

std::string findBinDir() {
  for (const char* v : {"17", "16", "15", "14", "13"}) {
    const std::string dir = std::string("/usr/lib/postgresql/") + v + "/bin";
    if (std::filesystem::exists(dir + "/initdb")) return dir;
  }
  throw std::runtime_error(
      "no PostgreSQL server binaries under /usr/lib/postgresql/*/bin (apt-get install postgresql)");
}

}  // namespace

std::string PostgresServer::run(const std::string& command) const {
  const std::string full = geteuid() == 0 ? "runuser -u postgres -- " + command : command;
  int status = 0;
  std::string out = capture(full, status);
  if (status != 0) throw std::runtime_error("failed (" + std::to_string(status) + "): " + full + "\n" + out);
  return out;
}

PostgresServer::PostgresServer() : bin_(findBinDir()) {
  char tmpl[] = "/tmp/pacer-pg-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  if (geteuid() == 0) {
    int status = 0;
    capture("chown postgres:postgres " + dir_, status);
  }
  port_ = freeLoopbackPort();
  run(bin_ + "/initdb -D " + dir_ + "/data -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 -N");
  start();
}

void PostgresServer::start() {
  try {
    run(bin_ + "/pg_ctl -D " + dir_ + "/data -l " + dir_ + "/pg.log -w -t 30 -o \"-p " + std::to_string(port_) +
        " -k " + dir_ + " -c listen_addresses=127.0.0.1 -c fsync=off\" start");
  } catch (const std::runtime_error& e) {
    int status = 0;
    throw std::runtime_error(std::string(e.what()) + "\nserver log:\n" + capture("cat " + dir_ + "/pg.log", status));
  }
  running_ = true;
}

void PostgresServer::stop() {
  if (!running_) return;
  run(bin_ + "/pg_ctl -D " + dir_ + "/data -m fast -w -t 30 stop");
  running_ = false;
}

std::string PostgresServer::createDatabase(const std::string& name) {
  run(bin_ + "/createdb -h 127.0.0.1 -p " + std::to_string(port_) + " -U postgres " + name);
  return "host=127.0.0.1 port=" + std::to_string(port_) + " user=postgres dbname=" + name;
}

PostgresServer::~PostgresServer() {
  try {
    if (running_) run(bin_ + "/pg_ctl -D " + dir_ + "/data -m immediate -w -t 30 stop");
  } catch (...) {
  }
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

}  // namespace pacer::testing
