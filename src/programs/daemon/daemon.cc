// pacerd's loop: it builds the pieces from DaemonOptions (daemon_parts.h) and
// turns them: Kafka records in (KafkaIngest), live control (ControlFeed), a
// scheduler tick (WorkerCore::step), commits, the admin listener; then a
// shutdown that loses nothing.
#include "pacer/daemon/daemon.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <set>

#include "daemon_parts.h"
#include "pacer/conninfo.h"
#include "pacer/control/control_feed.h"
#include "pacer/ledger/pg_ledger.h"

namespace pacer::worker {
namespace {

using std::chrono::milliseconds;

std::string providerSinkList(const DaemonOptions& o) {
  std::string s;
  for (const auto& [id, ps] : o.provider_sinks) s += fmt::format("{}{}:{}", s.empty() ? "" : ",", id, ps.sink);
  return s;
}

void checkRequired(const DaemonOptions& o) {
  if (o.brokers.empty()) throw DaemonConfigError("kafka brokers: empty; give --brokers HOST:PORT[,...]");
  if (o.topics.empty()) throw DaemonConfigError("kafka topics: none; give --topic NAME");
  if (o.postgres.empty()) throw DaemonConfigError("postgres: empty; give --postgres CONNINFO or set PACER_POSTGRES");
  if (o.admin_reads_need_token && o.admin_token.empty())
    throw DaemonConfigError(
        "admin.reads_need_token: on needs admin.token (--admin-token, PACER_ADMIN_TOKEN or admin.token_file): "
        "nothing could read the API otherwise");
}

ingest::KafkaIngestOptions ingestOptions(const DaemonOptions& o) {
  return ingest::KafkaIngestOptions{o.brokers, o.topics, o.group, o.assignment, o.session_timeout_ms, o.kafka};
}

class Daemon {
 public:
  Daemon(const DaemonOptions& o, const std::atomic<bool>& stop, ReloadHook reload)
      : o_(o),
        stop_(stop),
        reload_(std::move(reload)),
        log_(logging::makeLogger(o.log, o.log_json ? logging::Format::kJson : logging::Format::kText)),
        limited_(log_, std::chrono::seconds(10)),
        quota_log_(log_) {}

  int run() {
    checkRequired(o_);
    const std::optional<admin::ListenAddress> admin_at = adminAddress(o_);
    ledger::PgLedgerOptions pg{o_.postgres};
    if (!o_.events_topic.empty()) pg.outbox_worker = eventsWorkerId(o_);
    if (o_.callbacks) {
      pg.callback_worker = eventsWorkerId(o_);
      // No callbacks' CTE in the ledger statement while no campaign has a URL.
      pg.callbacks_wanted = [this] { return callbacks_wanted_.load(std::memory_order_acquire); };
    }
    std::vector<SmppSinkRef> smpp;
    sink_ = makeSink(
        o_, [this](std::string_view campaign) { return providerOf(campaign); }, log_, &smpp);
    smpp_ = std::make_unique<SmppWatch>(std::move(smpp), log_);
    cost_ = makeMessageCost(o_);
    clock_ = makeSteadyTimeSource();
    if (!o_.redis.empty()) quota_ = makeQuota(o_, clock_.get(), log_);
    rules_ = makeRecipientRules(o_, log_);
    if (o_.migrate) {
      const int applied = ledger::migrate(pg);
      log_->info("event=migrated applied={} schema={} postgres=\"{}\"", applied, ledger::latestSchemaVersion(),
                 redactConninfo(o_.postgres));
    }
    ledger_ = ledger::makePgLedger(pg);
    if (o_.ledger_writer) ledger_writer_ = makeLedgerWriter(pg, log_);
    parking_ = makeParking(o_, pg, park_writer_, log_);
    events_ = makeEvents(o_, pg, log_);
    callbacks_ = makeCallbacks(o_, pg, log_);
    const MonoTime start = clock_->now();
    core_ = std::make_unique<WorkerCore>(workerOptions(), *ledger_, *sink_, parking_.get(), start);
    tellWallClock(start);
    feed_ = std::make_unique<control::ControlFeed>(
        control::ControlFeedOptions{o_.postgres, o_.refresh_interval, o_.tick}, *core_, *clock_, log_,
        [this](const CampaignInfo& c) {
          noteProvider(c);
          noteCallback(c);
        });
    feed_->start(start);
    if (admin_at) admin_ = std::make_unique<AdminWiring>(o_, *admin_at, *clock_, log_);
    ingest_ = std::make_unique<ingest::KafkaIngest>(ingestOptions(o_), *core_, *ledger_, *clock_, log_);
    ingest_->start();
    logStarted();
    const int rc = loop();
    if (admin_) admin_->stopping();
    shutdown();
    if (admin_) admin_->finish(clock_->now(), adminFigures());
    if (events_) events_->stop();  // after the last ledger write: a last round publishes it
    if (callbacks_) callbacks_->stop();  // what waits for a retry stays in the outbox for the next start
    writeSummary(o_.summary_file, start, clock_->now(), *core_, quota_ != nullptr, feed_->campaigns(), log_);
    return rc;
  }

 private:
  WorkerOptions workerOptions() {
    WorkerOptions wo = o_.worker;
    wo.park_writer = park_writer_.get();
    wo.ledger_writer = ledger_writer_.get();
    wo.cost = cost_.get();
    wo.zones = rules_.zones;
    wo.caps = rules_.caps.get();
    // Failover stays within a protocol: a provider's family is its sink's kind.
    wo.family_of = [this](const std::string& id) {
      auto it = o_.provider_sinks.find(id);
      return it != o_.provider_sinks.end() ? it->second.sink : o_.sink;
    };
    if (!quota_) return wo;
    wo.quota = quota_.get();
    wo.quota_observer = &quota_log_;
    // Each process its own jitter (retries, lease pauses).
    wo.seed ^= static_cast<std::uint64_t>(::getpid()) * 0x9e3779b97f4a7c15ULL ^
               static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    return wo;
  }

  // The wall clock for quiet hours and caps, read with the monotonic one
  // (the core reads no clock); once per turn.
  void tellWallClock(MonoTime now) {
    const auto wall = std::chrono::time_point_cast<milliseconds>(std::chrono::system_clock::now());
    core_->setWallClock(WallTime{wall.time_since_epoch()}, now);
  }

  void logStarted() {
    log_->info(
        "event=started group={} topics={} sink={}{}{} in_flight={} max_buffered={} parking={} quota={} "
        "live_workers={}",
        o_.group, fmt::join(o_.topics, ","), o_.sink,
        o_.provider_sinks.empty() ? "" : " provider_sinks=", providerSinkList(o_), o_.sink_in_flight,
        o_.worker.max_buffered_messages, o_.parking ? "on" : "off",
        o_.redis.empty() ? "local" : fmt::format("redis:{}", fmt::join(o_.redis, ",")), o_.worker.lease.live_workers);
  }

  // Each campaign's provider, for the routing sink (providers.<id>.sink).
  void noteProvider(const CampaignInfo& c) {
    if (o_.provider_sinks.empty()) return;
    campaign_provider_[c.id] = c.provider;
  }
  // The campaigns applied with a callback URL. One deleted stays counted
  // (the statement then filters on the table itself), which costs only the
  // CTE; a URL newly set counts from the read that applies it.
  void noteCallback(const CampaignInfo& c) {
    if (!c.has_callback)
      callback_campaigns_.erase(c.id);
    else
      callback_campaigns_.insert(c.id);
    callbacks_wanted_.store(!callback_campaigns_.empty(), std::memory_order_release);
  }
  std::string_view providerOf(std::string_view campaign) const {
    auto it = campaign_provider_.find(campaign);
    return it == campaign_provider_.end() ? std::string_view() : std::string_view(it->second);
  }

  // How long the read may wait: a tick while busy or while LISTEN is up (the
  // notification socket is read between waits, so a change applies within a
  // tick whether or not messages flow); longer when idle without LISTEN.
  milliseconds readWait(MonoTime now) const {
    const bool quick = !core_->idle() || feed_->listening();
    const Nanos wait = quick ? std::chrono::duration_cast<Nanos>(o_.tick) : Nanos(milliseconds(100));
    return std::chrono::duration_cast<milliseconds>(core_->nextWake(now, wait) - now);
  }

  // One turn: reload if asked, intake, control, a tick, commits, the admin
  // listener and logs. False when the loop should end.
  bool turn(MonoTime& next_commit) {
    MonoTime now = clock_->now();
    const bool hup = reload_.requested && reload_.requested->exchange(false);
    if (hup || (admin_ && admin_->takeReloadRequest())) reloadConfig(now);
    ingest_->limit();
    ingest_->poll(readWait(now), 2000, [this](const std::string&) { feed_->unknownCampaign(clock_->now()); });
    feed_->poll(clock_->now());
    now = clock_->now();  // reading a notice's row may take a round trip to PostgreSQL
    tellWallClock(now);
    core_->step(now);
    if (now >= next_commit) {
      ingest_->commit(false);
      next_commit = now + o_.commit_interval;
    }
    noteLedgerErrors(now);
    if (now >= next_provider_log_) logProviders(now);
    if (admin_ && admin_->turn(now, [this] { return adminFigures(); })) return false;
    if (o_.stats_interval.count() > 0 && now >= next_stats_) {
      logStats();
      next_stats_ = now + o_.stats_interval;
    }
    return !idleLongEnough(now);
  }

  int loop() {
    MonoTime next_commit = clock_->now() + o_.commit_interval;
    next_stats_ = clock_->now() + o_.stats_interval;
    while (!stop_.load(std::memory_order_relaxed))
      if (!turn(next_commit)) break;
    return 0;
  }

  // exit_when_idle: every assigned partition read to its end and nothing to
  // do for that long.
  bool idleLongEnough(MonoTime now) {
    if (o_.exit_when_idle.count() <= 0) return false;
    if (!ingest_->atEnd() || !core_->idle()) {
      idle_since_.reset();
      return false;
    }
    if (!idle_since_) idle_since_ = now;
    if (now - *idle_since_ < o_.exit_when_idle) return false;
    log_->info("event=idle_exit");
    return true;
  }

  void noteLedgerErrors(MonoTime now) {
    const WorkerStats s = core_->stats();
    if (s.ledger_errors == last_ledger_errors_) return;
    last_ledger_errors_ = s.ledger_errors;
    limited_.write(spdlog::level::warn, "ledger_unavailable",
                   fmt::format("event=ledger_unavailable errors={} unrecorded={} buffered={}", s.ledger_errors,
                               s.unrecorded, s.buffered_messages),
                   now);
  }

  AdminFigures adminFigures() const {
    AdminFigures f;
    f.core = core_.get();
    const auto* redis = dynamic_cast<const RedisQuotaBackend*>(quota_.get());
    f.redis = redis ? &redis->stats() : nullptr;
    f.partitions = ingest_->partitions();
    f.joined = ingest_->everAssigned();
    f.intake_paused = ingest_->paused();
    f.rows_invalid = feed_->invalidRows();
    f.rows_skipped = feed_->rowsSkipped();
    f.smpp = smpp_->metrics();
    if (events_) f.events = events_->stats();
    if (callbacks_) f.callbacks = callbacks_->stats();
    return f;
  }

  // SIGHUP: the live keys apply from this turn; the others are said and kept.
  // Campaigns and providers are re-read at once too.
  void reloadConfig(MonoTime now) {
    if (!reload_.reload) {
      log_->warn("event=reload_failed error=\"this daemon was started without a configuration to re-read\"");
      return;
    }
    ReloadResult r;
    try {
      r = reload_.reload();
    } catch (const std::exception& e) {
      std::string error;
      for (const char ch : std::string_view(e.what())) {
        if (ch == '"') error.push_back('\\');
        error.push_back(ch);
      }
      log_->warn("event=reload_failed error=\"{}\"", error);
      return;
    }
    for (const std::string& key : r.needs_restart) log_->warn("event=reload_needs_restart key={}", key);
    std::FILE* log = o_.log;
    o_ = std::move(r.options);
    o_.log = log;
    core_->setTuning(o_.worker.retry, o_.worker.adaptive, now);
    feed_->setRefreshInterval(o_.refresh_interval);
    log_->info("event=config_reloaded changed=[{}]", fmt::join(r.changed, ","));
    feed_->refresh(now);
  }

  // Writes what has an outcome, commits while this worker still owns its
  // partitions (others stopping at the same moment rebalance the group soon),
  // stops reading, lets the sink finish (or hand back), writes and commits
  // again, then leaves the group.
  void shutdown() {
    ingest_->stopping();
    core_->flush(clock_->now());
    ingest_->commit(true);
    ingest_->setPaused(true);
    core_->drain();
    const MonoTime started = clock_->now();
    log_->info("event=shutdown_started in_flight={} unrecorded={} buffered={} deadline_ms={}", sink_->inFlight(),
               core_->stats().unrecorded, core_->stats().buffered_messages, o_.shutdown_deadline.count());
    const MonoTime deadline = started + o_.shutdown_deadline;
    while (clock_->now() < deadline && core_->stats().unrecorded > 0) {
      tellWallClock(clock_->now());
      core_->step(clock_->now());
      if (core_->stats().unrecorded > 0) sink_->wait(milliseconds(5));
      if (!core_->flush(clock_->now())) ::usleep(100 * 1000);
    }
    core_->flush(clock_->now());
    ingest_->commit(true);
    logStats();
    logFlushed(started);
    ingest_->close();  // revokes (a last commit from the rebalance callback) and leaves the group
    log_->info("event=stopped");
  }

  void logFlushed(MonoTime started) {
    const WorkerStats s = core_->stats();
    if (s.unrecorded > 0)
      log_->warn(
          "event=shutdown_deadline_passed unrecorded={} hint=\"not committed: read and sent again after a restart, "
          "under the same Idempotency-Key\"",
          s.unrecorded);
    // Claims are given back only when nothing is in flight: a claimed message
    // still in a request past the deadline keeps its lease, so no other
    // worker sends it while that request may still be answered.
    const std::size_t released = s.unrecorded == 0 ? core_->releaseParked() : 0;
    log_->info("event=shutdown_flushed after_ms={} released_parked={} buffered_left={}",
               std::chrono::duration_cast<milliseconds>(clock_->now() - started).count(), released,
               s.buffered_messages);
  }

  // Each change of a campaign's route (failover, docs/routes.md): which
  // provider takes its traffic now, and why when it is not the first; the
  // same for each of its prefix routes, named by its prefixes.
  void logRoutes() {
    for (const CampaignStats& c : core_->campaignStats()) {
      for (const RouteStatus& r : c.routes) {
        if (r.prefixes.empty()) continue;
        std::string& via = route_logged_.try_emplace(c.id + '\x1f' + r.provider, r.provider).first->second;
        if (via == r.via) continue;
        via = r.via;
        const std::string route = fmt::format("{}", fmt::join(r.prefixes, ","));
        if (r.reason.empty())
          log_->info("event=route_changed campaign={} route={} provider={} why=\"back on its route's provider\"", c.id,
                     route, r.via);
        else
          log_->warn("event=route_changed campaign={} route={} provider={} why=\"{}\"", c.id, route, r.via, r.reason);
      }
      if (c.route_changes == 0) continue;
      std::string& logged = route_logged_[c.id];
      if (logged == c.route) continue;
      logged = c.route;
      if (c.route_reason.empty())
        log_->info("event=route_changed campaign={} provider={} why=\"back on its first provider\"", c.id, c.route);
      else
        log_->warn("event=route_changed campaign={} provider={} why=\"{}\"", c.id, c.route, c.route_reason);
    }
  }

  // Each move of a provider's throttle judge, as it happens (checked with
  // the provider lines): a cut to what the provider accepted, or a cut taken
  // back because the throttles were noise.
  void logVerdict(const ProviderStats& p) {
    std::uint64_t& logged = verdicts_logged_[p.id];
    const std::uint64_t verdicts = p.capacity_cuts + p.noise_verdicts;
    if (verdicts == logged) return;
    logged = verdicts;
    const ThrottleVerdict& v = p.last_verdict;
    const bool noise = v.kind == ThrottleVerdict::Kind::kNoise;
    const bool raise = v.kind == ThrottleVerdict::Kind::kRaise;
    log_->info(
        "event=throttle_judged provider={} verdict={} throttle_share={:.3f} noise={:.3f} keep={:.3f} pause_ms={} "
        "effective={:.1f} why=\"{}\"",
        p.id, noise ? "noise" : raise ? "raise" : "ceiling", v.share, v.noise, noise ? 1.0 : v.keep,
        std::chrono::duration_cast<milliseconds>(v.pause).count(), p.effective.value_or(0),
        noise   ? "the throttle share did not fall when the rate did: the cut is taken back"
        : raise ? "no throttle anywhere after a deep cut: the limit goes back up a step"
                : "throttles above the noise level: the rate comes down to what the provider accepted");
  }

  // A provider's adaptive rate and pause, logged when they change (checked
  // every 250 ms): at most one line per provider per 10 s; the state last
  // written is what the next change is measured against.
  void logProviders(MonoTime now) {
    next_provider_log_ = now + milliseconds(250);
    const std::vector<ProviderStats> providers = core_->providerStats(now);
    smpp_->check(now, providers);
    smpp_->health(now, *core_);
    logRoutes();
    for (const ProviderStats& p : providers) {
      logVerdict(p);
      logDeadTokenGuard(p);
      if (!p.effective || !p.ceiling) continue;
      auto& [rate, paused] = provider_logged_[p.id];
      const bool moved = std::abs(*p.effective - rate) > 0.05 * std::max(rate, 1.0);
      if (!moved && p.paused == paused) continue;
      const std::string line = fmt::format(
          "event=provider_rate provider={} ceiling={:.1f} effective={:.1f} paused={} throttled={} circuit_open={} "
          "workers={}",
          p.id, *p.ceiling, *p.effective, p.paused, p.throttled, p.circuit_open, p.workers);
      if (limited_.write(spdlog::level::info, "provider_rate " + p.id, line, now)) {
        rate = *p.effective;
        paused = p.paused;
      }
    }
  }

  // A provider's dead-token guard, logged each time it starts or stops
  // holding (docs/push.md): while it holds, no token is marked dead and the
  // provider pauses.
  void logDeadTokenGuard(const ProviderStats& p) {
    bool& holding = guard_logged_[p.id];
    if (p.dead_token_guard == holding) return;
    holding = p.dead_token_guard;
    const DeadTokenGuardOptions& g = o_.worker.dead_token_guard;
    const std::string line = fmt::format(
        "event=dead_token_guard provider={} holding={} ratio={:.3f} answers={} window={}s threshold={:.2f} "
        "min_answers={} held={} pause={}s",
        p.id, p.dead_token_guard, p.dead_token_ratio, p.dead_token_answers,
        std::chrono::duration_cast<std::chrono::seconds>(g.window).count(), g.threshold, g.min_answers,
        p.dead_tokens_held, std::chrono::duration_cast<std::chrono::seconds>(g.pause).count());
    if (holding)
      log_->warn("{}", line);
    else
      log_->info("{}", line);
  }

  void logStats() {
    const WorkerStats s = core_->stats();
    log_->info(
        "event=stats read={} sent={} failed={} rejected={} invalid_token={} suppressed={} expired={} deferred={} "
        "waiting={} "
        "skipped={} parked={} unparked={} ledger_rows={} ledger_errors={} buffered={} unrecorded={} quota_batches={} "
        "quota_degraded_providers={} cap_round_trips={} cap_faults={}",
        s.read, s.sent, s.failed, s.rejected, s.invalid_tokens, s.suppressed, s.expired, s.deferred, s.waiting,
        s.skipped_finished, s.parked, s.unparked, s.ledger_rows, s.ledger_errors, s.buffered_messages, s.unrecorded,
        s.quota.batches, s.quota.degraded_providers, s.cap_round_trips, s.cap_faults);
    if (callbacks_) {
      const events::CallbackWorkerStats c = callbacks_->stats();
      log_->info(
          "event=callbacks_stats sent={} failed={} retried={} store_errors={} queued={} outbox_depth={} "
          "lag_s={:.3f}",
          c.sent, c.failed, c.retried, c.errors, c.queued, c.depth, c.lag_seconds);
    }
    if (!events_) return;
    const events::OutcomeDrainerStats e = events_->stats();
    log_->info("event=outcome_events_stats published={} failed={} store_errors={} outbox_depth={} lag_s={:.3f}",
               e.published, e.failed, e.errors, e.depth, e.lag_seconds);
  }

  DaemonOptions o_;  // a copy: a reload changes its live keys
  const std::atomic<bool>& stop_;
  ReloadHook reload_;
  logging::LoggerPtr log_;
  logging::LimitedLog limited_;
  QuotaLog quota_log_;
  TimeSourcePtr clock_;
  SinkInterfacePtr sink_;
  std::unique_ptr<SmppWatch> smpp_;             // after sink_: it reads the SMPP sinks sink_ owns
  std::unique_ptr<MessageCostInterface> cost_;  // SMS segments for SMPP sinks; null: 1 unit a message
  QuotaBackendPtr quota_;
  RecipientRules rules_;  // before core_: the core uses its store
  LedgerInterfacePtr ledger_;
  LedgerWriterInterfacePtr ledger_writer_;  // null: ledger writes on the loop (--ledger-writer inline)
  ParkingInterfacePtr parking_;
  ParkWriterInterfacePtr park_writer_;  // null: parking writes on the loop (--park-writer off)
  std::unique_ptr<events::OutcomeDrainer> events_;  // null: outcome events off
  std::unique_ptr<events::CallbackWorker> callbacks_;  // null: callbacks off
  std::unique_ptr<WorkerCore> core_;
  std::unique_ptr<control::ControlFeed> feed_;
  std::unique_ptr<AdminWiring> admin_;
  std::unique_ptr<ingest::KafkaIngest> ingest_;
  std::map<std::string, std::string, std::less<>> campaign_provider_;  // with provider sinks only
  std::set<std::string, std::less<>> callback_campaigns_;  // noteCallback(); the control feed's thread
  std::atomic<bool> callbacks_wanted_{false};              // read by the ledger writer
  std::map<std::string, std::pair<double, bool>> provider_logged_;     // effective rate and pause last logged
  std::map<std::string, std::uint64_t> verdicts_logged_;             // a provider's judge verdicts last logged
  // A campaign's route last logged (failover), a prefix route's under "ID\x1fPROVIDER".
  std::map<std::string, std::string> route_logged_;
  std::map<std::string, bool> guard_logged_;  // a provider's dead-token guard holding, as last logged
  MonoTime next_provider_log_{};
  MonoTime next_stats_{};
  std::optional<MonoTime> idle_since_;
  std::uint64_t last_ledger_errors_ = 0;
};

}  // namespace

int runDaemon(const DaemonOptions& options, const std::atomic<bool>& stop, ReloadHook reload) {
  Daemon d(options, stop, std::move(reload));
  return d.run();
}

}  // namespace pacer::worker
