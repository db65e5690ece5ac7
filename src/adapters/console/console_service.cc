#include <fmt/format.h>
#include <zlib.h>

#include "console/console_assets.h"
#include "console_impl.h"
#include "pacer/validation.h"

namespace pacer::console {

admin::AdminResponse jsonResponse(int status, std::string body) {
  admin::AdminResponse a{status, "application/json; charset=utf-8", std::move(body), {}};
  return a;
}

admin::AdminResponse gzipped(admin::AdminResponse a, bool accepted) {
  if (!accepted || a.body.size() <= 1024) return a;
  z_stream z{};
  // 15 + 16: a gzip header and trailer, not zlib's.
  if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return a;
  std::string out(deflateBound(&z, static_cast<uLong>(a.body.size())) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(a.body.data());
  z.avail_in = static_cast<uInt>(a.body.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  const std::size_t written = out.size() - z.avail_out;
  deflateEnd(&z);
  if (rc != Z_STREAM_END) return a;
  out.resize(written);
  a.body = std::move(out);
  a.content_encoding = "gzip";
  return a;
}

admin::AdminResponse errorResponse(int status, std::string_view text) { return jsonResponse(status, errorJson(text)); }

namespace {

using Kind = admin::AdminRoutes::Kind;
using Answer = admin::AdminRoutes::Answer;

Answer now(admin::AdminResponse a) { return Answer{Kind::kNow, std::move(a)}; }

Answer asset(const std::string& name) {
  for (const Asset& a : kAssets) {
    if (a.name != name) continue;
    admin::AdminResponse r{200, std::string(a.content_type), std::string(a.body), {}};
    r.cache_control = "no-cache";
    return now(std::move(r));
  }
  return now(admin::AdminResponse{404, "text/plain; charset=utf-8", "not found\n", {}});
}

}  // namespace

Console::Console(ConsoleOptions options, const admin::AdminState& state, std::shared_ptr<admin::EventHub> events)
    : impl_(std::make_unique<Impl>(std::move(options), state, std::move(events))) {}

Console::~Console() {
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->stop = true;
  }
  impl_->wake.notify_all();
  if (impl_->refresher.joinable()) impl_->refresher.join();
  for (Job& j : impl_->jobs) j.reply->complete(errorResponse(503, "pacerd is stopping"));
  for (Job& j : impl_->after_refresh) j.reply->complete(errorResponse(503, "pacerd is stopping"));
}

void Console::setAddress(std::string address) {
  std::lock_guard<std::mutex> lock(impl_->mutex);  // the listener may already be serving
  impl_->address = std::move(address);
}

bool Console::Impl::watched() {
  return (events && events->streams() > 0) || SteadyClock::now() - last_request < options.watch_linger;
}

std::string Console::Impl::documentOf(const Documents& d, Route::Kind kind) const {
  switch (kind) {
    case Route::Kind::kCampaigns: return d.campaigns;
    case Route::Kind::kProviders: return d.providers;
    case Route::Kind::kTop: return d.top;
    default: return d.state;
  }
}

admin::AdminResponse Console::Impl::meta() {
  std::string bound;
  {
    std::lock_guard<std::mutex> lock(mutex);
    bound = address;
  }
  const ConsoleOptions& o = options;
  return jsonResponse(200, Json{{"version", o.version},
                                {"worker", bound},
                                {"controls", o.controls},
                                {"token_configured", !o.token.empty()},
                                {"redis", !o.redis.empty()},
                                {"refresh_ms", o.refresh.count()},
                                {"idle_refresh_ms", o.idle_refresh.count()},
                                {"window_s", o.window_s},
                                {"history_span_s", Series::kSpanS}}
                               .dump());
}

std::optional<admin::AdminResponse> Console::Impl::refuseControl(const admin::AdminRequest& request, const Route& r,
                                                                 Job& job) const {
  switch (admin::checkBearer(request.authorization, options.token)) {
    case admin::TokenCheck::kDisabled:
      return errorResponse(403,
                           "controls are off: no admin token is configured (start pacerd with "
                           "--admin-token or PACER_ADMIN_TOKEN)");
    case admin::TokenCheck::kMissing:
    case admin::TokenCheck::kWrong: {
      admin::AdminResponse a = errorResponse(401, "unauthorized: send Authorization: Bearer <admin token>");
      a.www_authenticate = true;
      return a;
    }
    case admin::TokenCheck::kOk: break;
  }
  if (!options.controls)
    return errorResponse(403,
                         "the console is read-only: set admin.console_controls: on "
                         "(--admin-console-controls on) to allow controls");
  try {
    // The same checks as pacerctl's (pacer/validation.h): an id that no row
    // may have is refused here, not looked up.
    control::checkId(r.id, r.kind == Route::Kind::kProviderRate ? "provider" : "campaign");
    if (r.action == "rate") job.limit = parseLimitBody(request.body);
  } catch (const control::ControlError& e) {
    return errorResponse(400, e.what());
  }
  job.kind = r.kind == Route::Kind::kProviderRate ? Job::Kind::kProviderRate : Job::Kind::kCampaignAction;
  return std::nullopt;
}

Answer Console::route(const admin::AdminRequest& request, const std::function<admin::PendingReplyPtr()>& later) {
  const Route r = parseRoute(request.method, request.path);
  if (r.kind == Route::Kind::kNotMine) return Answer{};
  if (r.kind == Route::Kind::kNotFound)
    return now(request.path.starts_with("/api/")
                   ? errorResponse(404, "no such endpoint; see docs/api.md")
                   : admin::AdminResponse{404, "text/plain; charset=utf-8", "not found\n", {}});
  if (!r.method_ok) {
    admin::AdminResponse a = errorResponse(405, fmt::format("method not allowed; use {}", r.allow));
    a.allow = r.allow;
    return now(std::move(a));
  }
  if (r.kind == Route::Kind::kRedirect) {
    admin::AdminResponse a{302, "text/plain; charset=utf-8", "see /console/\n", {}};
    a.location = "/console/";
    return now(std::move(a));
  }
  if (r.kind == Route::Kind::kAsset) return asset(r.name);
  const ConsoleOptions& o = impl_->options;
  if (r.kind == Route::Kind::kMeta) return now(impl_->meta());
  Job job;
  job.remote = std::string(request.remote);
  job.id = r.id;
  job.action = r.action;
  switch (r.kind) {
    case Route::Kind::kCampaignAction:
    case Route::Kind::kProviderRate:
      if (auto refused = impl_->refuseControl(request, r, job)) return now(std::move(*refused));
      break;
    case Route::Kind::kHistory:
      job.kind = Job::Kind::kHistory;
      job.gzip = request.accepts_gzip;
      break;
    case Route::Kind::kCampaign:
      // No row can have this id (pacer/validation.h): not looked up.
      if (validation::idProblem("campaign id", r.id)) return now(errorResponse(404, "no such campaign"));
      job.kind = Job::Kind::kDetail;
      break;
    default: job.kind = Job::Kind::kDocument, job.document = r.kind; break;
  }
  std::lock_guard<std::mutex> lock(impl_->mutex);
  const bool idle = !impl_->watched();
  impl_->last_request = SteadyClock::now();
  if (!impl_->refresher.joinable()) impl_->refresher = std::thread([this] { impl_->loop(); });
  if (idle) impl_->refresh_now = true;  // from the idle cadence to the watched one now
  if (r.kind == Route::Kind::kEvents) {
    impl_->wake.notify_all();
    return Answer{Kind::kEvents, {}};
  }
  const auto& d = impl_->documents;
  if (job.kind == Job::Kind::kDocument && d && SteadyClock::now() - d->at < 2 * o.idle_refresh)
    return now(jsonResponse(200, impl_->documentOf(*d, r.kind)));
  job.reply = later();
  if (job.kind == Job::Kind::kDocument)
    impl_->after_refresh.push_back(std::move(job));
  else
    impl_->jobs.push_back(std::move(job));
  impl_->wake.notify_all();
  return Answer{Kind::kLater, {}};
}

void Console::Impl::loop() {
  auto next = SteadyClock::now();
  std::unique_lock<std::mutex> lock(mutex);
  while (!stop) {
    if (!jobs.empty()) {
      Job job = std::move(jobs.front());
      jobs.pop_front();
      lock.unlock();
      run(job);
      lock.lock();
      continue;
    }
    if (refresh_now || SteadyClock::now() >= next) {
      refresh_now = false;
      lock.unlock();
      refresh();
      lock.lock();
      std::vector<Job> waiting = std::exchange(after_refresh, {});
      const std::shared_ptr<const Documents> d = documents;
      lock.unlock();
      for (Job& j : waiting)
        j.reply->complete(d ? jsonResponse(200, documentOf(*d, j.document))
                            : errorResponse(503, "no state yet: PostgreSQL does not answer"));
      lock.lock();
      next = SteadyClock::now() + (watched() ? options.refresh : options.idle_refresh);
      continue;
    }
    wake.wait_until(lock, next);
  }
}

void Console::Impl::run(Job& job) {
  admin::AdminResponse a;
  try {
    switch (job.kind) {
      case Job::Kind::kHistory: a = gzipped(jsonResponse(200, histories.json().dump()), job.gzip); break;
      case Job::Kind::kDetail: a = detail(job.id); break;
      case Job::Kind::kCampaignAction:
      case Job::Kind::kProviderRate: a = change(job); break;
      case Job::Kind::kDocument: a = errorResponse(500, "internal error: a document job in the queue"); break;
    }
  } catch (const std::exception& e) {
    a = errorResponse(500, fmt::format("internal error: {}", e.what()));
  }
  job.reply->complete(std::move(a));
}

}  // namespace pacer::console
