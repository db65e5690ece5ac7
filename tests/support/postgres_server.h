// A throwaway PostgreSQL server for integration tests: initdb into a temp
// directory, start on a free loopback port, stop and delete on destruction
// (also when the test failed). As root it runs the server as `postgres`.
#pragma once

#include <string>

#include "support/loopback.h"  // freeLoopbackPort

namespace pacer::testing {

class PostgresServer {
 public:
  // Starts the server; throws std::runtime_error with the server log if it cannot.
  PostgresServer();
  ~PostgresServer();
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  int port() const { return port_; }
  // A fresh database on this server; returns its libpq connection string.
  std::string createDatabase(const std::string& name);
  // Stops the server (fast shutdown); start() brings it back on the same port.
  void stop();
  void start();

 private:
  std::string run(const std::string& command) const;  // as the server's user
  std::string dir_;
  std::string bin_;
  int port_ = 0;
  bool running_ = false;
};

}  // namespace pacer::testing
