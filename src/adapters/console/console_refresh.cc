// The console's refresher thread: reads PostgreSQL (campaigns, providers,
// top's incremental counts), Redis (the providers' shared state) and this
// worker's published snapshot, builds the documents once for every client,
// and runs details and controls. Nothing here runs on the listener's thread.
#include <fmt/format.h>

#include "console_impl.h"

namespace pacer::console {
namespace {

int statusOf(const control::ControlError& e) {
  if (dynamic_cast<const control::NotFoundError*>(&e)) return 404;
  if (dynamic_cast<const control::RefusedError*>(&e)) return 409;
  if (dynamic_cast<const control::InvalidValueError*>(&e)) return 400;
  if (dynamic_cast<const control::UnreachableError*>(&e)) return 503;
  return 500;
}

std::string rateText(const std::optional<double>& r) { return r ? fmt::format("{}", *r) : "unlimited"; }

// This worker's figures, from the snapshot the daemon loop published.
void addWorkerFigures(const admin::MetricsSnapshot* snap, std::vector<CampaignView>& cs,
                      std::vector<ProviderView>& ps) {
  if (snap == nullptr) return;
  std::map<std::string, const admin::CampaignMetrics*> cm;
  for (const admin::CampaignMetrics& c : snap->campaigns) cm[c.id] = &c;
  for (CampaignView& c : cs) {
    const auto it = cm.find(c.row.id);
    if (it == cm.end()) continue;
    const admin::CampaignMetrics& m = *it->second;
    c.worker = CampaignView::Worker{m.backlog, m.in_flight,   m.retries,         m.achieved_rate,
                                    m.route,   m.route_reason, m.in_memory,      m.retrying,
                                    m.quiet_waiting, m.cap_waiting, m.routes};
  }
  std::map<std::string, const admin::ProviderMetrics*> pm;
  for (const admin::ProviderMetrics& p : snap->providers) pm[p.id] = &p;
  for (ProviderView& p : ps) {
    const auto it = pm.find(p.row.id);
    if (it == pm.end()) continue;
    const admin::ProviderMetrics& m = *it->second;
    p.worker =
        ProviderView::Worker{m.effective_rate, m.paused, m.degraded, m.throttled, m.server_errors, m.circuit_open};
  }
}

// Every worker's 429/5xx answers and retries, from the hash they add to.
void addClusterCounts(ProviderStateReader& redis, std::vector<CampaignView>& cs, std::vector<ProviderView>& ps) {
  std::vector<std::string> fields;
  for (const ProviderView& p : ps) {
    fields.push_back(countField("provider_throttled", p.row.id));
    fields.push_back(countField("provider_server_errors", p.row.id));
  }
  for (const CampaignView& c : cs) fields.push_back(countField("campaign_retries", c.row.id));
  const auto counts = redis.readCounts(fields);
  const auto of = [&](const std::string& field) {
    const auto it = counts.find(field);
    return it == counts.end() ? std::uint64_t{0} : it->second;
  };
  for (ProviderView& p : ps)
    p.cluster = ProviderView::Cluster{of(countField("provider_throttled", p.row.id)),
                                      of(countField("provider_server_errors", p.row.id))};
  for (CampaignView& c : cs) c.cluster_retries = of(countField("campaign_retries", c.row.id));
}

}  // namespace

void Console::Impl::log(const char* level, const std::string& text) const {
  if (!options.log) return;
  try {
    options.log(level, text);
  } catch (...) {
  }
}

control::PgControl& Console::Impl::control() {
  if (!pg)
    pg = std::make_unique<control::PgControl>(control::ConnectOptions{options.postgres, options.connect_timeout_s});
  return *pg;
}

void Console::Impl::refresh() {
  Sources src;
  {
    std::lock_guard<std::mutex> lock(mutex);
    src.worker = address;
  }
  src.version = options.version;
  src.controls = options.controls;
  std::string at_utc;
  double at_epoch_s = 0;
  auto docs = std::make_shared<Documents>();
  bool read = false;
  try {
    control::PgControl& db = control();
    const std::vector<control::CampaignRow> rows = db.campaigns();
    const std::vector<control::ProviderRow> provider_rows = db.providers();
    const control::TopSnapshot snap = db.topSnapshot(options.window_s);
    const control::TopFrame frame = control::topFrameOf(snap, options.window_s);
    std::map<std::string, const control::CampaignRow*> by_id;
    for (const control::CampaignRow& c : rows) by_id[c.id] = &c;
    campaigns.clear();
    for (const control::TopRow& t : frame.rows) {
      CampaignView v;
      if (const auto it = by_id.find(t.id); it != by_id.end()) v.row = *it->second;
      v.row.id = t.id;
      v.row.state = t.state;  // as of the same snapshot as the counts
      v.top = t;
      campaigns.push_back(std::move(v));
    }
    providers.clear();
    for (const control::ProviderRow& p : provider_rows) providers.push_back(ProviderView{p, {}, 0, {}, {}, {}});
    docs->campaigns = control::campaignListJson(rows).dump();
    docs->providers = control::providerListJson(provider_rows).dump();
    docs->top = control::renderTopJson(frame);
    at_utc = snap.at_utc;
    at_epoch_s = snap.at_epoch_s;
    read = true;
  } catch (const control::ControlError& e) {
    src.postgres = e.what();
    if (dynamic_cast<const control::UnreachableError*>(&e)) pg.reset();
  }
  if (!options.redis.empty()) {
    src.redis = "ok";
    try {
      if (!redis) redis = std::make_unique<ProviderStateReader>(options.redis, options.redis_timeout);
      std::vector<std::string> ids;
      for (const ProviderView& p : providers) ids.push_back(p.row.id);
      const auto shared = redis->read(ids);
      for (ProviderView& p : providers) {
        const auto it = shared.find(p.row.id);
        p.shared_effective = it == shared.end() ? std::nullopt : it->second.effective;
        p.shared_paused_s = it == shared.end() ? 0 : it->second.paused_s;
      }
      addClusterCounts(*redis, campaigns, providers);
    } catch (const ProviderStateError& e) {
      src.redis = e.what();
    }
  }
  const auto snapshot = admin_state.snapshot();
  addWorkerFigures(snapshot.get(), campaigns, providers);
  if (read) histories.add(at_epoch_s, campaigns, providers);
  for (ProviderView& p : providers) p.server_errors_per_s = histories.serverErrorsPerS(p.row.id);
  Json state = stateJson(at_utc, at_epoch_s, options.window_s, campaigns, providers, src);
  state["classes"] = classesStateJson(snapshot ? snapshot->class_queued : decltype(snapshot->class_queued){});
  docs->state = state.dump();
  docs->at = SteadyClock::now();
  if (!read) {  // keep serving the last lists
    std::lock_guard<std::mutex> lock(mutex);
    if (documents) {
      docs->campaigns = documents->campaigns;
      docs->providers = documents->providers;
      docs->top = documents->top;
    }
  }
  if (events) events->publish(sseFrame("state", docs->state));
  std::lock_guard<std::mutex> lock(mutex);
  documents = std::move(docs);
}

admin::AdminResponse Console::Impl::detail(const std::string& id) {
  const auto now = SteadyClock::now();
  if (const auto it = details.find(id); it != details.end() && now - it->second.first < std::chrono::seconds(2))
    return jsonResponse(200, it->second.second);
  try {
    control::CampaignRow row = control().campaignRow(id);
    if (!detail_pg) detail_pg = std::make_unique<ConsolePg>(options.postgres, options.connect_timeout_s);
    const Outcomes o = detail_pg->outcomes(id);
    const std::vector<DeadLetter> dead = detail_pg->deadLetters(id);
    const auto count = [&](const char* status) {
      const auto it = o.by_status.find(status);
      return it == o.by_status.end() ? std::int64_t{0} : it->second;
    };
    control::CampaignDetail d{std::move(row),
                              control::LedgerCounts{count("sent"), count("failed"), count("rejected"),
                                                    count("invalid_token"), o.last_recorded_at, count("suppressed")},
                              o.parked,
                              {}};
    Json j = control::campaignDetailJson(d);
    j["outcomes"] = o.by_status;
    Json letters = Json::array();
    for (const DeadLetter& l : dead)
      letters.push_back(Json{{"message_id", l.message_id},
                             {"status", l.status},
                             {"reason", l.reason},
                             {"attempts", l.attempts},
                             {"recorded_at", l.recorded_at},
                             {"topic", l.topic},
                             {"partition", l.partition},
                             {"offset", l.offset}});
    j["dead_letters"] = std::move(letters);
    std::string body = j.dump();
    if (details.size() > 64) details.clear();
    details[id] = {now, body};
    return jsonResponse(200, std::move(body));
  } catch (const control::ControlError& e) {
    if (dynamic_cast<const control::UnreachableError*>(&e)) pg.reset();
    return errorResponse(statusOf(e), e.what());
  }
}

admin::AdminResponse Console::Impl::change(const Job& job) {
  const bool provider = job.kind == Job::Kind::kProviderRate;
  const std::string what = job.action == "rate" ? "set-rate" : job.action;
  admin::AdminResponse a;
  std::string detail;
  try {
    control::PgControl& db = control();
    if (provider) {
      const auto c = db.setProviderLimit(job.id, job.limit);
      detail = fmt::format(" rate={} burst={}", rateText(c.after.limit.rate), c.after.limit.burst);
      a = jsonResponse(200, control::changeJson("provider", what, c).dump());
    } else {
      control::CampaignAction action = control::CampaignAction::kSetRate;
      if (job.action == "pause") action = control::CampaignAction::kPause;
      if (job.action == "resume") action = control::CampaignAction::kResume;
      if (job.action == "cancel") action = control::CampaignAction::kCancel;
      const auto c = action == control::CampaignAction::kSetRate ? db.setCampaignLimit(job.id, job.limit)
                                                                 : db.changeCampaignState(job.id, action);
      detail = fmt::format(" changed={} state={} send_rate={} burst={}", c.changed, c.after.state,
                           rateText(c.after.limit.rate), c.after.limit.burst);
      a = jsonResponse(200, control::changeJson("campaign", what, c).dump());
    }
    std::lock_guard<std::mutex> lock(mutex);
    refresh_now = true;  // show the change at once
  } catch (const control::ControlError& e) {
    if (dynamic_cast<const control::UnreachableError*>(&e)) pg.reset();
    a = errorResponse(statusOf(e), e.what());
  }
  log(a.status == 200 ? "INFO" : "WARN",
      fmt::format("event=console_control kind={} id={:?} change={} status={}{} remote={}",
                  provider ? "provider" : "campaign", job.id, what, a.status, detail, job.remote));
  return a;
}

}  // namespace pacer::console
