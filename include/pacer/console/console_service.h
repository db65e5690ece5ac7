// The operator console on pacerd's admin listener (docs/console.md) and its
// JSON API (docs/api.md): pages and assets built into the binary, the state
// of every campaign and provider of the cluster (PostgreSQL and Redis, as
// `pacerctl top` reads them) plus this worker's own figures, live over
// Server-Sent Events, and pacerctl's controls behind the admin token.
//
// Threads: route() runs on the listener's thread and never blocks: it answers
// from the last computed documents, or hands the request to the console's one
// refresher thread (a PendingReply). That thread owns the console's own
// database and Redis connections; it computes the state once per refresh
// (every `refresh` while someone watches, every `idle_refresh` otherwise,
// starting with the first request) for every client alike, runs controls and
// detail reads, and never touches the worker core: this worker's figures come
// from the snapshot the daemon loop publishes to AdminState.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "pacer/admin/admin_server.h"

namespace pacer::console {

struct ConsoleOptions {
  std::string postgres;  // libpq conninfo (the console opens its own connections)
  int connect_timeout_s = 2;
  std::vector<std::string> redis;  // "HOST:PORT" nodes of the global quota; empty: none
  std::chrono::milliseconds redis_timeout{100};
  std::string token;                             // the admin token; empty: controls answer 403
  bool controls = false;                         // admin.console_controls: false keeps the console read-only (403)
  std::chrono::milliseconds refresh{1000};       // while an event stream is open or the API was asked lately
  std::chrono::milliseconds idle_refresh{5000};  // otherwise, once started (keeps the 15-min history)
  std::chrono::seconds watch_linger{30};         // "lately"
  double window_s = 5;                           // the achieved rate's window (as top's --window-s)
  std::string version;
  // Told of every control, accepted or refused (level, text); may be empty.
  std::function<void(const char*, const std::string&)> log;
};

class Console final : public admin::AdminRoutes {
 public:
  // Starts nothing: the refresher starts with the first request. `state` and
  // `events` must outlive the console.
  Console(ConsoleOptions options, const admin::AdminState& state, std::shared_ptr<admin::EventHub> events);
  // Stops the refresher; pending replies get 503.
  ~Console() override;
  Console(const Console&) = delete;
  Console& operator=(const Console&) = delete;

  // The listener's bound address, for the documents. Call before serving.
  void setAddress(std::string address);

  // On the listener's thread; never blocks.
  Answer route(const admin::AdminRequest& request, const std::function<admin::PendingReplyPtr()>& later) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pacer::console
