#include "support/redis_server.h"

#include <arpa/inet.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "support/loopback.h"

namespace pacer::testing {
RedisServer::RedisServer(std::vector<std::string> extra) : extra_(std::move(extra)) {
  char tmpl[] = "/tmp/pacer-redis-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  port_ = freeLoopbackPort(55000);
  start();
}

void RedisServer::start() {
  std::string cmd = "redis-server --bind 127.0.0.1 --port " + std::to_string(port_) +
                    " --save '' --appendonly no --daemonize yes --pidfile " + dir_ + "/redis.pid --logfile " + dir_ +
                    "/redis.log --dir " + dir_;
  for (const std::string& e : extra_) cmd += " " + e;
  std::string out;
  if (runShell(cmd, out) != 0) throw std::runtime_error("cannot start redis-server: " + out);
  const bool up = waitUntil(
      [&] {
        std::ifstream pidfile(dir_ + "/redis.pid");
        int pid = 0;
        if (!(pidfile >> pid)) return false;
        pid_ = pid;
        try {
          return command("PING") == "PONG";
        } catch (const std::runtime_error&) {
          return false;
        }
      },
      std::chrono::seconds(10));
  if (!up) {
    runShell("cat " + dir_ + "/redis.log", out);
    throw std::runtime_error("redis-server did not answer PING within 10 s; log:\n" + out);
  }
}

void RedisServer::kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  const int pid = pid_;
  // Gone, or a zombie (the container's init may never reap it).
  waitUntil(
      [pid] {
        if (::kill(pid, 0) != 0) return true;
        std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
        std::string skip, state;
        stat >> skip >> skip >> state;
        return state == "Z" || state == "X";
      },
      std::chrono::seconds(5));
  pid_ = 0;
  std::filesystem::remove(dir_ + "/redis.pid");
}

std::int64_t RedisServer::micros() const {
  // TIME is an array; read it through a tiny script that returns one integer.
  return std::stoll(command("EVAL return(redis.call('TIME')[1]*1000000+redis.call('TIME')[2]) 0"));
}

std::string RedisServer::command(const std::string& cmd) const {
  std::vector<std::string> parts;
  std::istringstream in(cmd);
  for (std::string w; in >> w;) parts.push_back(w);
  return command(parts);
}

std::string RedisServer::command(const std::vector<std::string>& parts) const {
  timeval tv{1, 0};
  redisContext* c = redisConnectWithTimeout("127.0.0.1", port_, tv);
  if (c == nullptr || c->err) {
    const std::string why = c ? c->errstr : "oom";
    if (c) redisFree(c);
    throw std::runtime_error("redis connect: " + why);
  }
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (const std::string& p : parts) {
    argv.push_back(p.data());
    lens.push_back(p.size());
  }
  auto* r = static_cast<redisReply*>(redisCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lens.data()));
  if (r == nullptr) {
    const std::string why = c->errstr;
    redisFree(c);
    throw std::runtime_error("redis command: " + why);
  }
  std::string out;
  if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_ERROR)
    out.assign(r->str, r->len);
  else if (r->type == REDIS_REPLY_INTEGER)
    out = std::to_string(r->integer);
  freeReplyObject(r);
  redisFree(c);
  return out;
}

RedisServer::~RedisServer() {
  try {
    kill();
  } catch (...) {
  }
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

RedisCluster::RedisCluster(int masters, int replicas_per_master, std::chrono::milliseconds node_timeout) {
  std::string create = "redis-cli --cluster create";
  for (int i = 0; i < masters * (1 + replicas_per_master); ++i) {
    nodes_.push_back(std::make_unique<RedisServer>(std::vector<std::string>{
        "--cluster-enabled yes", "--cluster-config-file nodes.conf",
        "--cluster-node-timeout " + std::to_string(node_timeout.count()), "--cluster-replica-validity-factor 0"}));
    create += " 127.0.0.1:" + std::to_string(nodes_.back()->port());
  }
  create += " --cluster-replicas " + std::to_string(replicas_per_master) + " --cluster-yes";
  std::string out;
  if (runShell(create, out) != 0) throw std::runtime_error("redis-cli --cluster create failed:\n" + out);
  const bool ok = waitUntil(
      [&] {
        for (auto& n : nodes_) {
          if (n->command("CLUSTER INFO").find("cluster_state:ok") == std::string::npos) return false;
          const std::string role = n->command("INFO replication");
          if (role.find("role:slave") != std::string::npos && role.find("master_link_status:up") == std::string::npos)
            return false;
        }
        return true;
      },
      std::chrono::seconds(20), std::chrono::milliseconds(20));
  if (!ok) throw std::runtime_error("the cluster did not reach cluster_state:ok in 20 s");
}

RedisServer& RedisCluster::owner(int slot) {
  std::string out;
  for (auto& n : nodes_)
    if (n->running()) {
      runShell("redis-cli -p " + std::to_string(n->port()) + " CLUSTER SLOTS", out);
      break;
    }
  // Lines: start, end, host, port, id, ... per range.
  std::istringstream in(out);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  for (std::size_t i = 0; i + 3 < lines.size(); ++i) {
    try {
      const int lo = std::stoi(lines[i]);
      const int hi = std::stoi(lines[i + 1]);
      if (lines[i + 2] != "127.0.0.1") continue;
      const int port = std::stoi(lines[i + 3]);
      if (slot >= lo && slot <= hi)
        for (auto& n : nodes_)
          if (n->port() == port) return *n;
    } catch (const std::exception&) {
    }
  }
  throw std::runtime_error("no owner found for slot " + std::to_string(slot) + ":\n" + out);
}

void RedisCluster::migrateSlot(int slot, RedisServer& from, RedisServer& to, bool finish) {
  const std::string from_id = from.command("CLUSTER MYID");
  const std::string to_id = to.command("CLUSTER MYID");
  const std::string s = std::to_string(slot);
  to.command("CLUSTER SETSLOT " + s + " IMPORTING " + from_id);
  from.command("CLUSTER SETSLOT " + s + " MIGRATING " + to_id);
  std::string keys;
  runShell("redis-cli -p " + std::to_string(from.port()) + " CLUSTER GETKEYSINSLOT " + s + " 1000", keys);
  std::istringstream in(keys);
  std::vector<std::string> migrate{"MIGRATE", "127.0.0.1", std::to_string(to.port()), "", "0", "5000", "KEYS"};
  for (std::string k; in >> k;) migrate.push_back(k);
  if (migrate.size() > 7) {
    const std::string r = from.command(migrate);
    if (r != "OK") throw std::runtime_error("MIGRATE failed: " + r);
  }
  if (!finish) return;
  for (auto& n : nodes_) n->command("CLUSTER SETSLOT " + s + " NODE " + to_id);
}

}  // namespace pacer::testing
