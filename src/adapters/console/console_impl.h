// Console's insides, shared by console_service.cc (routing on the listener's
// thread, the refresher's loop) and console_refresh.cc (the refresher's
// database and Redis work). Private to src/console.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "pacer/console/console_model.h"
#include "console_pg.h"
#include "console_redis.h"
#include "pacer/console/console_service.h"
#include "pacer/control/pg_control.h"

namespace pacer::console {

using SteadyClock = std::chrono::steady_clock;

// What the refresher computed last, served as is to every client.
struct Documents {
  SteadyClock::time_point at;
  std::string state;      // /api/v1/state
  std::string campaigns;  // /api/v1/campaigns (pacerctl campaign list --json)
  std::string providers;  // /api/v1/providers (pacerctl provider list --json)
  std::string top;        // /api/v1/top (pacerctl top --once --json)
};

// Work for the refresher thread, answered through its reply.
struct Job {
  enum class Kind { kHistory, kDetail, kCampaignAction, kProviderRate, kDocument };
  Kind kind;
  admin::PendingReplyPtr reply;
  std::string id;
  std::string action;    // pause, resume, cancel, rate
  control::Limit limit;  // rate
  std::string remote;
  bool gzip = false;                           // the client accepts a gzip body
  Route::Kind document = Route::Kind::kState;  // kDocument: which one, after the next refresh
};

struct Console::Impl {
  Impl(ConsoleOptions o, const admin::AdminState& s, std::shared_ptr<admin::EventHub> e)
      : options(std::move(o)), admin_state(s), events(std::move(e)) {}

  const ConsoleOptions options;
  const admin::AdminState& admin_state;
  const std::shared_ptr<admin::EventHub> events;

  // Shared between the listener's thread and the refresher, under `mutex`.
  std::mutex mutex;
  std::condition_variable wake;
  bool stop = false;
  bool refresh_now = false;
  std::deque<Job> jobs;
  std::vector<Job> after_refresh;  // kDocument jobs waiting for the first documents
  std::shared_ptr<const Documents> documents;
  SteadyClock::time_point last_request{};
  std::thread refresher;  // started by the first request
  std::string address;    // the listener's, set once it is bound

  // The refresher thread's own (console_refresh.cc).
  std::unique_ptr<control::PgControl> pg;
  std::unique_ptr<ConsolePg> detail_pg;
  std::unique_ptr<ProviderStateReader> redis;
  Histories histories;
  std::vector<CampaignView> campaigns;  // as last read (kept while PostgreSQL is away)
  std::vector<ProviderView> providers;
  std::map<std::string, std::pair<SteadyClock::time_point, std::string>> details;  // campaign detail, briefly cached

  void loop();
  void refresh();
  void run(Job& job);
  std::string documentOf(const Documents& d, Route::Kind kind) const;
  bool watched();  // under `mutex`
  // On the listener's thread:
  admin::AdminResponse meta();
  // Why a control is refused before any database work (token, switch, body);
  // nullopt: go ahead (`job` then has its kind and limit).
  std::optional<admin::AdminResponse> refuseControl(const admin::AdminRequest& request, const Route& r, Job& job) const;

  // console_refresh.cc
  control::PgControl& control();
  admin::AdminResponse detail(const std::string& id);
  admin::AdminResponse change(const Job& job);
  void log(const char* level, const std::string& text) const;
};

admin::AdminResponse jsonResponse(int status, std::string body);
// `a` with its body gzip-encoded (zlib, level 6), when `accepted` and the
// body is worth it (over 1 KiB); unchanged otherwise or if zlib fails.
admin::AdminResponse gzipped(admin::AdminResponse a, bool accepted);
admin::AdminResponse errorResponse(int status, std::string_view text);

}  // namespace pacer::console
