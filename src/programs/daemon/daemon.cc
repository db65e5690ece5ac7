#include "pacer/daemon/daemon.h"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafkacpp.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>

#include "pacer/admin/admin_server.h"
#include "pacer/console/console_service.h"
#include "pacer/control/values.h"
#include "pacer/ledger/pg_ledger.h"
#include "pacer/control/pg_listener.h"
#include "pacer/ledger/pg_parking.h"
#include "pacer/conninfo.h"
#include "pacer/log_limiter.h"
#include "pacer/quota_redis.h"
#include "pacer/sinks/kafka_sink.h"
#include "pacer/sinks/routing_sink.h"

namespace pacer::worker {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Reconnecting the LISTEN connection: the first attempt this long after the
// loss, doubling up to the maximum. A refused connection on loopback fails at
// once; an unreachable host blocks the loop for the connect timeout, so the
// attempts are spaced out.
constexpr milliseconds kListenBackoffMin{100};
constexpr milliseconds kListenBackoffMax{5000};
constexpr int kListenConnectTimeoutS = 2;  // libpq's smallest useful connect_timeout
// A notice whose row could not be read is retried (a full re-read) this soon.
constexpr milliseconds kControlRetry{500};

std::int64_t wallMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string rateText(const std::optional<RateLimit>& limit) {
  return limit ? fmt::format("{}", limit->rate_per_s) : std::string("unlimited");
}

std::string burstText(const std::optional<RateLimit>& limit) {
  return limit ? fmt::format("{}", limit->burst) : std::string("-");
}

const char* stateText(CampaignState s) {
  switch (s) {
    case CampaignState::kActive: return "active";
    case CampaignState::kPaused: return "paused";
    case CampaignState::kCancelled: return "cancelled";
    case CampaignState::kCompleted: return "completed";
  }
  return "unknown";
}

// One line per event: time, level, event, then key=value fields.
template <typename... Args>
void logLine(std::FILE* out, const char* level, fmt::format_string<Args...> f, Args&&... args) {
  if (!out) return;
  const auto now = std::chrono::system_clock::now();
  std::string text = fmt::format(f, std::forward<Args>(args)...);
  // One event, one line: library error texts carry newlines.
  std::replace(text.begin(), text.end(), '\n', ' ');
  std::replace(text.begin(), text.end(), '\t', ' ');
  fmt::print(out, "{:%Y-%m-%dT%H:%M:%S}Z {} {}\n", std::chrono::floor<std::chrono::seconds>(now), level, text);
  std::fflush(out);
}

// One sink; `where` names it in errors ("sink", "providers.sms.sink").
SinkInterfacePtr makeOneSink(const ProviderSinkOptions& o, const std::string& default_brokers,
                             const std::string& where) {
  if (o.sink == "stdout") return makeStdoutSink(stdout, o.sink_in_flight);
  if (o.sink == "null") return makeNullSink(o.sink_in_flight);
  if (o.sink == "http") {
    sink::HttpSinkOptions h = o.http;
    h.max_in_flight = o.sink_in_flight;
    try {
      return sink::makeHttpSink(h);
    } catch (const InvalidError& e) {
      throw DaemonConfigError(fmt::format("{} http: {}", where, e.what()));
    }
  }
  if (o.sink == "kafka") {
    sink::KafkaSinkOptions k;
    k.brokers = o.sink_brokers.empty() ? default_brokers : o.sink_brokers;
    k.topic = o.sink_topic;
    k.max_in_flight = o.sink_in_flight;
    try {
      return sink::makeKafkaSink(k);
    } catch (const InvalidError& e) {
      throw DaemonConfigError(where == "sink" ? std::string(e.what()) : fmt::format("{}: {}", where, e.what()));
    }
  }
  throw DaemonConfigError(fmt::format("{}: '{}' is not one of stdout, null, http, kafka", where, o.sink));
}

// The default sink, and with providers.<id>.sink a routing sink in front of
// it and the providers' own sinks.
SinkInterfacePtr makeSink(const DaemonOptions& o, sink::ProviderOfCampaign provider_of) {
  SinkInterfacePtr main = makeOneSink(
      ProviderSinkOptions{o.sink, o.sink_in_flight, o.http, o.sink_topic, o.sink_brokers}, o.brokers, "sink");
  if (o.provider_sinks.empty()) return main;
  std::map<std::string, SinkInterfacePtr, std::less<>> by_provider;
  for (const auto& [id, ps] : o.provider_sinks)
    by_provider[id] = makeOneSink(ps, o.brokers, fmt::format("providers.{}.sink", id));
  return sink::makeRoutingSink(std::move(main), std::move(by_provider), std::move(provider_of));
}

// The Redis quota backend, connected if Redis answers now (if not, the
// leaser runs degraded until it does).
QuotaBackendPtr makeQuota(const DaemonOptions& o, const TimeSource* clock) {
  RedisQuotaOptions ro;
  ro.nodes.clear();
  for (const std::string& node : o.redis) {
    const std::size_t colon = node.rfind(':');
    int port = 0;
    try {
      std::size_t used = 0;
      if (colon != std::string::npos) port = std::stoi(node.substr(colon + 1), &used);
      if (colon == std::string::npos || colon == 0 || used != node.size() - colon - 1 || port <= 0 || port > 65535)
        port = 0;
    } catch (const std::exception&) {
      port = 0;
    }
    if (port == 0) throw DaemonConfigError(fmt::format("--redis '{}': expected HOST:PORT", node));
    ro.nodes.push_back(RedisAddress{node.substr(0, colon), port});
  }
  ro.cluster = o.redis_cluster;
  ro.connect_timeout = o.redis_timeout;
  ro.command_timeout = o.redis_timeout;
  ro.clock = clock;
  auto backend = makeRedisQuotaBackend(ro);
  try {
    backend->connect();
    logLine(o.log, "INFO", "event=quota_connected redis={} cluster={}", fmt::join(o.redis, ","), o.redis_cluster);
  } catch (const QuotaError& e) {
    logLine(o.log, "WARN", "event=quota_unavailable redis={} error=\"{}\" (degraded until it answers)",
            fmt::join(o.redis, ","), e.what());
  }
  return backend;
}

// Degraded-mode changes of the global quota, one log line each.
class QuotaLog final : public QuotaObserver {
 public:
  explicit QuotaLog(std::FILE* log) : log_(log) {}
  void onDegraded(std::string_view provider, DegradedMode mode, bool entered) noexcept override {
    try {
      logLine(log_, entered ? "WARN" : "INFO", "event={} provider={} mode={}",
              entered ? "quota_degraded" : "quota_recovered", provider,
              mode == DegradedMode::kStop ? "stop" : "local-share");
    } catch (...) {
    }
  }

 private:
  std::FILE* log_;
};

RawMessage toRaw(RdKafka::Message& m) {
  RawMessage raw;
  raw.position.topic = m.topic_name();
  raw.position.partition = m.partition();
  raw.position.offset = m.offset();
  if (m.key_pointer()) raw.key.emplace(static_cast<const char*>(m.key_pointer()), m.key_len());
  // The C API reads headers in place; the C++ wrapper copies each one.
  rd_kafka_headers_t* headers = nullptr;
  if (rd_kafka_message_headers(m.c_ptr(), &headers) == RD_KAFKA_RESP_ERR_NO_ERROR && headers) {
    const char* name = nullptr;
    const void* value = nullptr;
    std::size_t size = 0;
    for (std::size_t i = 0; rd_kafka_header_get_all(headers, i, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR;
         ++i) {
      if (value)
        raw.headers.emplace_back(name, std::string(static_cast<const char*>(value), size));
      else
        raw.headers.emplace_back(name, std::nullopt);
    }
  }
  if (m.payload()) raw.value.assign(static_cast<const char*>(m.payload()), m.len());
  return raw;
}

class Daemon;

// Async commit results: a failed one is committed again at the next interval.
class CommitResults final : public RdKafka::OffsetCommitCb {
 public:
  explicit CommitResults(Daemon& d) : daemon_(d) {}
  void offset_commit_cb(RdKafka::ErrorCode err, std::vector<RdKafka::TopicPartition*>& offsets) override;

 private:
  Daemon& daemon_;
};

class Rebalance final : public RdKafka::RebalanceCb {
 public:
  explicit Rebalance(Daemon& d) : daemon_(d) {}
  void rebalance_cb(RdKafka::KafkaConsumer* consumer, RdKafka::ErrorCode err,
                    std::vector<RdKafka::TopicPartition*>& partitions) override;

 private:
  Daemon& daemon_;
};

class Daemon {
 public:
  Daemon(const DaemonOptions& o, const std::atomic<bool>& stop, ReloadHook reload)
      : o_(o), stop_(stop), reload_(std::move(reload)), rebalance_(*this), commit_results_(*this) {}

  void commitFailed(RdKafka::ErrorCode err, const std::vector<RdKafka::TopicPartition*>& offsets) {
    for (const RdKafka::TopicPartition* p : offsets) {
      auto it = last_committed_.find(TopicPartition{p->topic(), p->partition()});
      if (it != last_committed_.end() && it->second == p->offset()) last_committed_.erase(it);
    }
    limited("WARN", "commit_failed", "event=commit_failed error=\"{}\"", RdKafka::err2str(err));
  }

  int run() {
    if (o_.brokers.empty()) throw DaemonConfigError("kafka brokers: empty; give --brokers HOST:PORT[,...]");
    if (o_.topics.empty()) throw DaemonConfigError("kafka topics: none; give --topic NAME");
    if (o_.postgres.empty()) throw DaemonConfigError("postgres: empty; give --postgres CONNINFO or set PACER_POSTGRES");
    const std::optional<admin::ListenAddress> admin_at = adminAddress();
    ledger::PgLedgerOptions pg{o_.postgres};
    sink_ = makeSink(o_, [this](std::string_view campaign) { return providerOf(campaign); });
    clock_ = makeSteadyTimeSource();
    if (!o_.redis.empty()) quota_ = makeQuota(o_, clock_.get());
    if (o_.migrate) {
      const int applied = ledger::migrate(pg);
      logLine(o_.log, "INFO", "event=migrated applied={} schema={} postgres=\"{}\"", applied,
              ledger::latestSchemaVersion(), redactConninfo(o_.postgres));
    }
    ledger_ = ledger::makePgLedger(pg);
    directory_ = std::make_unique<ledger::PgDirectory>(pg);
    ledger::PgLedgerOptions listen_pg = pg;
    listen_pg.connect_timeout_s = kListenConnectTimeoutS;
    listener_ = std::make_unique<ledger::PgListener>(listen_pg, std::string(control::kControlChannel));
    if (o_.parking) {
      ledger::PgParkingOptions po;
      po.connection = pg;
      char host[256] = "host";
      ::gethostname(host, sizeof host - 1);
      po.owner = fmt::format("{}:{}:{}", host, ::getpid(), Clock::now().time_since_epoch().count());
      po.lease = o_.parking_lease;
      parking_ = ledger::makePgParking(po);
    }
    const MonoTime start = clock_->now();
    WorkerOptions wo = o_.worker;
    if (quota_) {
      wo.quota = quota_.get();
      wo.quota_observer = &quota_log_;
      // Each process its own jitter (retries, lease pauses).
      wo.seed ^= static_cast<std::uint64_t>(::getpid()) * 0x9e3779b97f4a7c15ULL ^
                 static_cast<std::uint64_t>(Clock::now().time_since_epoch().count());
    }
    core_ = std::make_unique<WorkerCore>(wo, *ledger_, *sink_, parking_.get(), start);
    // LISTEN before the first read: a change committed in between is then
    // both read and announced, never neither.
    connectListener(start);
    refreshDirectory(start);
    if (admin_at) startAdmin(*admin_at);
    makeConsumer();
    logLine(
        o_.log, "INFO",
        "event=started group={} topics={} sink={}{}{} in_flight={} max_buffered={} parking={} quota={} live_workers={}",
        o_.group, fmt::join(o_.topics, ","), o_.sink,
        o_.provider_sinks.empty() ? "" : " provider_sinks=", providerSinkList(), o_.sink_in_flight,
        o_.worker.max_buffered_messages, o_.parking ? "on" : "off",
        o_.redis.empty() ? "local" : fmt::format("redis:{}", fmt::join(o_.redis, ",")), o_.worker.lease.live_workers);
    const int rc = loop();
    if (admin_state_) admin_state_->stopping();
    shutdown();
    writeSummary(start);
    return rc;
  }

  // --- rebalance ---------------------------------------------------------

  void assigned(RdKafka::KafkaConsumer* c, std::vector<RdKafka::TopicPartition*>& parts) {
    ever_assigned_ = true;
    // Replay without resending: one ledger query per assigned partition, over
    // the range this worker is about to read (committed offset .. end).
    std::vector<RdKafka::TopicPartition*> query;
    for (RdKafka::TopicPartition* p : parts)
      query.push_back(RdKafka::TopicPartition::create(p->topic(), p->partition()));
    const RdKafka::ErrorCode ce = c->committed(query, 10000);
    for (RdKafka::TopicPartition* p : query) {
      std::int64_t low = 0, high = 0;
      c->query_watermark_offsets(p->topic(), p->partition(), &low, &high, 5000);
      std::int64_t from = ce == RdKafka::ERR_NO_ERROR && p->offset() >= 0 ? p->offset() : low;
      std::vector<std::int64_t> finished;
      bool looked = false;
      for (int attempt = 0; attempt < 5 && !looked && high > from; ++attempt) {
        try {
          finished = ledger_->finishedOffsets(p->topic(), p->partition(), from, high);
          looked = true;
        } catch (const std::runtime_error& e) {
          logLine(o_.log, "WARN", "event=replay_lookup_failed topic={} partition={} error=\"{}\"", p->topic(),
                  p->partition(), e.what());
          ::usleep(500 * 1000);
        }
      }
      logLine(o_.log, "INFO", "event=assigned topic={} partition={} from={} end={} already_finished={}", p->topic(),
              p->partition(), from, high, finished.size());
      core_->assign(TopicPartition{p->topic(), p->partition()}, std::move(finished));
      assigned_from_[TopicPartition{p->topic(), p->partition()}] = from;
      assigned_.insert(TopicPartition{p->topic(), p->partition()});
      at_end_.erase(TopicPartition{p->topic(), p->partition()});
    }
    RdKafka::TopicPartition::destroy(query);
    if (c->rebalance_protocol() == "COOPERATIVE")
      c->incremental_assign(parts);
    else
      c->assign(parts);
    if (paused_) c->pause(parts);
  }

  void revoked(RdKafka::KafkaConsumer* c, std::vector<RdKafka::TopicPartition*>& parts, bool lost) {
    const MonoTime now = clock_->now();
    // What has an outcome goes to the ledger, and its offsets are committed
    // while this worker still owns the partitions.
    for (int attempt = 0; attempt < 3 && !core_->flush(now); ++attempt) ::usleep(200 * 1000);
    std::vector<RdKafka::TopicPartition*> commit;
    for (RdKafka::TopicPartition* p : parts) {
      const TopicPartition tp{p->topic(), p->partition()};
      const auto off = core_->committable(tp);
      if (!off) continue;
      // Already committed (a stop commits before it leaves): nothing to send,
      // so nothing to fail while the group rebalances.
      if (auto it = last_committed_.find(tp); it != last_committed_.end() && it->second >= *off) continue;
      commit.push_back(RdKafka::TopicPartition::create(tp.topic, tp.partition, *off));
    }
    if (!commit.empty() && !lost) {
      const RdKafka::ErrorCode e = c->commitSync(commit);
      if (e != RdKafka::ERR_NO_ERROR) {
        // While stopping, another worker leaving at the same time rebalances
        // the group: expected, and the next owner skips what the ledger holds.
        const bool expected =
            stopping_ && (e == RdKafka::ERR_REBALANCE_IN_PROGRESS || e == RdKafka::ERR_ILLEGAL_GENERATION);
        logLine(o_.log, expected ? "INFO" : "WARN", "event=commit_on_revoke_failed error=\"{}\"{}", RdKafka::err2str(e),
                expected ? " during=stop" : "");
      }
    }
    RdKafka::TopicPartition::destroy(commit);
    for (RdKafka::TopicPartition* p : parts) {
      const TopicPartition tp{p->topic(), p->partition()};
      core_->revoke(tp);
      assigned_.erase(tp);
      at_end_.erase(tp);
      last_committed_.erase(tp);
      logLine(o_.log, "INFO", "event=revoked topic={} partition={} lost={}", tp.topic, tp.partition, lost);
    }
    if (c->rebalance_protocol() == "COOPERATIVE")
      c->incremental_unassign(parts);
    else
      c->unassign();
  }

 private:
  void makeConsumer() {
    std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
    std::map<std::string, std::string> props{
        {"bootstrap.servers", o_.brokers},
        {"group.id", o_.group},
        {"enable.auto.commit", "false"},
        {"enable.auto.offset.store", "false"},
        {"auto.offset.reset", "earliest"},
        {"enable.partition.eof", "true"},
        {"partition.assignment.strategy", o_.assignment},
        {"session.timeout.ms", std::to_string(o_.session_timeout_ms)},
    };
    for (const auto& [k, v] : o_.kafka) props[k] = v;
    std::string err;
    for (const auto& [k, v] : props)
      if (conf->set(k, v, err) != RdKafka::Conf::CONF_OK)
        throw DaemonConfigError(fmt::format("kafka property {}: {}", k, err));  // not the value: it may be a password
    if (conf->set("rebalance_cb", &rebalance_, err) != RdKafka::Conf::CONF_OK) throw DaemonConfigError(err);
    if (conf->set("offset_commit_cb", &commit_results_, err) != RdKafka::Conf::CONF_OK) throw DaemonConfigError(err);
    consumer_.reset(RdKafka::KafkaConsumer::create(conf.get(), err));
    if (!consumer_) throw DaemonConfigError(fmt::format("kafka consumer: {}", err));
    const RdKafka::ErrorCode e = consumer_->subscribe(o_.topics);
    if (e != RdKafka::ERR_NO_ERROR) throw DaemonConfigError(fmt::format("kafka subscribe: {}", RdKafka::err2str(e)));
  }

  std::string providerSinkList() const {
    std::string s;
    for (const auto& [id, ps] : o_.provider_sinks) s += fmt::format("{}{}:{}", s.empty() ? "" : ",", id, ps.sink);
    return s;
  }

  // Each campaign's provider, for the routing sink (providers.<id>.sink).
  void noteProvider(const CampaignInfo& c) {
    if (o_.provider_sinks.empty()) return;
    auto it = campaign_provider_.find(c.id);
    if (it == campaign_provider_.end())
      campaign_provider_.emplace(c.id, c.provider);
    else if (it->second != c.provider)
      it->second = c.provider;
  }
  std::string_view providerOf(std::string_view campaign) const {
    auto it = campaign_provider_.find(campaign);
    return it == campaign_provider_.end() ? std::string_view() : std::string_view(it->second);
  }

  // Re-reads every campaign and provider; false if PostgreSQL did not answer.
  // A re-read owed to live control that fails is tried again kControlRetry
  // later rather than only at the next --refresh-ms. Each row stands alone:
  // one that fails its checks is skipped and named (once), the last good
  // version of it stays in force, and the others load.
  bool refreshDirectory(MonoTime now) {
    last_refresh_ = now;
    const bool owed = control_retry_at_.has_value();
    control_retry_at_.reset();
    std::vector<RowProblem> problems;
    std::vector<ProviderInfo> providers;
    std::vector<CampaignInfo> campaigns;
    try {
      providers = directory_->providers(&problems);
      campaigns = directory_->campaigns(&problems);
    } catch (const std::exception& e) {
      // Keep going with what is known; the next refresh tries again. Said
      // once per outage, not once per refresh.
      if (!directory_failing_) logLine(o_.log, "WARN", "event=directory_refresh_failed error=\"{}\"", e.what());
      directory_failing_ = true;
      if (owed) control_retry_at_ = now + kControlRetry;
      return false;
    }
    if (directory_failing_) logLine(o_.log, "INFO", "event=directory_refresh_recovered");
    directory_failing_ = false;
    std::set<std::pair<std::string, std::string>> bad;
    for (const ProviderInfo& p : providers) applyProviderRow(p, now, bad);
    for (const CampaignInfo& c : campaigns) applyCampaignRow(c, now, bad);
    for (const RowProblem& p : problems) rowProblem(p, now, bad);
    // Rows that were bad and are now good (or gone) are said once too.
    for (auto it = row_problems_.begin(); it != row_problems_.end();) {
      if (bad.count(it->first) == 0) {
        logLine(o_.log, "INFO", "event=row_accepted kind={} id={}", it->first.first, it->first.second);
        it = row_problems_.erase(it);
      } else {
        ++it;
      }
    }
    return true;
  }

  void applyProviderRow(const ProviderInfo& p, MonoTime now, std::set<std::pair<std::string, std::string>>& bad) {
    try {
      core_->upsertProvider(p, now);
    } catch (const std::exception& e) {  // the core refused it after all: held like any bad row
      rowProblem(RowProblem{"provider", p.id, e.what()}, now, bad);
    }
  }

  void applyCampaignRow(const CampaignInfo& c, MonoTime now, std::set<std::pair<std::string, std::string>>& bad) {
    try {
      core_->upsertCampaign(c, now);
      noteProvider(c);
      warnSmallBurst(c);
    } catch (const std::exception& e) {
      rowProblem(RowProblem{"campaign", c.id, e.what()}, now, bad);
    }
  }

  // A row that fails its checks: held (see WorkerCore::holdCampaign), counted,
  // and named in the log the first time and when its reason changes.
  void rowProblem(const RowProblem& p, MonoTime now, std::set<std::pair<std::string, std::string>>& bad) {
    ++rows_skipped_;
    const auto key = std::make_pair(p.kind, p.id);
    bad.insert(key);
    try {
      if (p.kind == "provider")
        core_->holdProvider(p.id, now);
      else
        core_->holdCampaign(p.id, now);
    } catch (const std::exception&) {
    }
    auto [it, fresh] = row_problems_.emplace(key, p.reason);
    if (!fresh && it->second == p.reason) return;
    it->second = p.reason;
    logLine(o_.log, "WARN", "event=row_skipped kind={} id={} reason=\"{}\" action=\"{}\"", p.kind, p.id, p.reason,
            p.kind == "provider" ? "its last good version stays in force; never loaded: its campaigns send nothing"
                                 : "its last good version stays in force; never loaded: its messages wait");
  }

  // --- live control: LISTEN pacer_control ---------------------------------

  // (Re)opens the LISTEN connection; after an outage, re-reads everything,
  // since notifications sent meanwhile are gone. A failure is logged once per
  // outage and retried with backoff; sending goes on regardless.
  void connectListener(MonoTime now) {
    try {
      listener_->connect();
    } catch (const std::exception& e) {
      if (!listen_outage_) {
        logLine(o_.log, "WARN", "event=control_listen_failed channel={} error=\"{}\" retry_ms={}",
                control::kControlChannel, e.what(), listen_backoff_.count());
        listen_outage_ = true;
      }
      listen_retry_at_ = now + listen_backoff_;
      listen_backoff_ = std::min(listen_backoff_ * 2, kListenBackoffMax);
      return;
    }
    const bool was_out = listen_outage_;
    listen_outage_ = false;
    listen_backoff_ = kListenBackoffMin;
    logLine(o_.log, "INFO", "event=control_listening channel={} backend_pid={}{}", control::kControlChannel,
            listener_->backendPid(), was_out ? " after_outage=true" : "");
    if (was_out && core_ && !refreshDirectory(now)) control_retry_at_ = now + kControlRetry;
  }

  // Called once per loop iteration, before the tick: reads what arrived on
  // the LISTEN socket without blocking and applies it at once.
  void pollControl(MonoTime now) {
    if (!listener_->connected()) {
      if (now >= listen_retry_at_) connectListener(now);
      return;
    }
    std::vector<std::string> payloads;
    try {
      payloads = listener_->poll();
    } catch (const std::exception& e) {
      logLine(o_.log, "WARN", "event=control_listen_lost channel={} error=\"{}\" retry_ms={}", control::kControlChannel,
              e.what(), listen_backoff_.count());
      listen_outage_ = true;
      listen_retry_at_ = now + listen_backoff_;
      listen_backoff_ = std::min(listen_backoff_ * 2, kListenBackoffMax);
      return;
    }
    if (!payloads.empty()) applyControl(payloads, now);
  }

  // Re-reads each row a notification names (once per row, however many
  // notifications name it) and hands it to the core. A payload that is not
  // pacerctl's makes it re-read everything.
  void applyControl(const std::vector<std::string>& payloads, MonoTime received) {
    std::vector<control::ControlNotice> notices;
    bool everything = false;
    for (const std::string& p : payloads) {
      auto n = control::parseNotifyPayload(p);
      if (!n) {
        logLine(o_.log, "WARN", "event=control_unreadable payload=\"{}\" action=full_refresh", p.substr(0, 200));
        everything = true;
        continue;
      }
      auto same = std::find_if(notices.begin(), notices.end(),
                               [&](const control::ControlNotice& k) { return k.kind == n->kind && k.id == n->id; });
      if (same == notices.end())
        notices.push_back(std::move(*n));
      else if (same->change != n->change)
        same->change += "," + n->change;
    }
    if (everything) {
      if (refreshDirectory(clock_->now()))
        logApplied("all", "-", "refresh", "", received);
      else
        control_retry_at_ = clock_->now() + kControlRetry;
    }
    for (const control::ControlNotice& n : notices) {
      try {
        std::set<std::pair<std::string, std::string>> bad;
        std::optional<std::string> problem;
        if (n.kind == "provider") {
          const auto p = directory_->provider(n.id, &problem);
          if (!p) {
            if (problem)
              rowProblem(RowProblem{"provider", n.id, *problem}, clock_->now(), bad);
            else
              logApplied(n.kind, n.id, n.change, "found=false", received);
            continue;
          }
          applyProviderRow(*p, clock_->now(), bad);
          forgetProblem("provider", n.id, bad);
          logApplied(n.kind, n.id, n.change, fmt::format("rate={} burst={}", rateText(p->limit), burstText(p->limit)),
                     received);
        } else {
          const auto c = directory_->campaign(n.id, &problem);
          if (!c) {
            if (problem)
              rowProblem(RowProblem{"campaign", n.id, *problem}, clock_->now(), bad);
            else
              logApplied(n.kind, n.id, n.change, "found=false", received);
            continue;
          }
          // A new campaign may name a provider created a moment before:
          // load it first rather than hold the campaign meanwhile.
          if (!c->provider.empty() && n.change.find("create") != std::string::npos)
            if (const auto p = directory_->provider(c->provider)) applyProviderRow(*p, clock_->now(), bad);
          applyCampaignRow(*c, clock_->now(), bad);
          forgetProblem("campaign", n.id, bad);
          logApplied(n.kind, n.id, n.change,
                     fmt::format("state={} send_rate={} burst={} weight={}", stateText(c->state), rateText(c->limit),
                                 burstText(c->limit), c->weight),
                     received);
        }
      } catch (const std::exception& e) {
        // The row stays as it was here until a re-read succeeds: soon, not
        // only at the next periodic refresh.
        logLine(o_.log, "WARN", "event=control_read_failed kind={} id={} change={} error=\"{}\" retry_ms={}", n.kind,
                n.id, n.change, e.what(), kControlRetry.count());
        control_retry_at_ = clock_->now() + kControlRetry;
      }
    }
  }

  // A warning that can repeat per event: at most one line per key per 10 s,
  // with the count of lines held back (LogLimiter).
  template <typename... Args>
  bool limited(const char* level, const std::string& key, fmt::format_string<Args...> f, Args&&... args) {
    const auto held = log_limiter_.admit(key, clock_ ? clock_->now() : MonoTime{});
    if (!held) return false;
    std::string text = fmt::format(f, std::forward<Args>(args)...);
    if (*held > 0) text += fmt::format(" suppressed={}", *held);
    logLine(o_.log, level, "{}", text);
    return true;
  }

  // A row a notice found good again: no longer counted as bad.
  void forgetProblem(const std::string& kind, const std::string& id,
                     const std::set<std::pair<std::string, std::string>>& bad) {
    const auto key = std::make_pair(kind, id);
    if (bad.count(key) > 0 || row_problems_.erase(key) == 0) return;
    logLine(o_.log, "INFO", "event=row_accepted kind={} id={}", kind, id);
  }

  // event=control_applied: after_ms from reading the notification off the
  // socket to the change being in the core; at_us is the wall clock
  // (microseconds since the epoch) when it was, to compare across processes.
  void logApplied(std::string_view kind, std::string_view id, std::string_view change, std::string_view fields,
                  MonoTime received) {
    const double after_ms = std::chrono::duration<double, std::milli>(clock_->now() - received).count();
    logLine(o_.log, "INFO", "event=control_applied kind={} id={} change={}{}{} after_ms={:.3f} at_us={}", kind, id,
            change, fields.empty() ? "" : " ", fields, after_ms, wallMicros());
  }

  // Dispatch happens once per tick, so a burst below send_rate x tick caps the
  // campaign at burst per tick. Said once per campaign and setting.
  void warnSmallBurst(const CampaignInfo& c) {
    if (!c.limit) return;
    const double per_tick = c.limit->rate_per_s * std::chrono::duration<double>(o_.tick).count();
    const auto key = std::make_pair(c.limit->rate_per_s, c.limit->burst);
    auto it = warned_burst_.find(c.id);
    if (it != warned_burst_.end() && it->second == key) return;
    warned_burst_[c.id] = key;
    if (c.limit->burst >= per_tick) return;
    logLine(o_.log, "WARN",
            "event=burst_below_tick campaign={} send_rate={} burst={} tick_ms={} max_rate={:.0f} "
            "hint=\"set burst to at least {:.0f} (send_rate x tick) to reach send_rate\"",
            c.id, c.limit->rate_per_s, c.limit->burst, o_.tick.count(),
            c.limit->burst / std::chrono::duration<double>(o_.tick).count(), std::ceil(per_tick));
  }

  void setPaused(bool paused) {
    if (paused == paused_) return;
    std::vector<RdKafka::TopicPartition*> parts;
    consumer_->assignment(parts);
    const RdKafka::ErrorCode e = paused ? consumer_->pause(parts) : consumer_->resume(parts);
    RdKafka::TopicPartition::destroy(parts);
    if (e != RdKafka::ERR_NO_ERROR) return;
    paused_ = paused;
    const WorkerStats s = core_->stats();
    logLine(o_.log, "INFO", "event={} buffered_messages={} buffered_bytes={}",
            paused ? "intake_paused" : "intake_resumed", s.buffered_messages, s.buffered_bytes);
  }

  void commit(bool sync) {
    std::vector<RdKafka::TopicPartition*> parts;
    for (const PartitionCommit& pc : core_->commits()) {
      if (!assigned_.contains(pc.partition)) continue;
      auto it = last_committed_.find(pc.partition);
      if (it != last_committed_.end() && it->second >= pc.offset) continue;
      parts.push_back(RdKafka::TopicPartition::create(pc.partition.topic, pc.partition.partition, pc.offset));
      last_committed_[pc.partition] = pc.offset;
    }
    if (parts.empty()) return;
    const RdKafka::ErrorCode e = sync ? consumer_->commitSync(parts) : consumer_->commitAsync(parts);
    if (e != RdKafka::ERR_NO_ERROR) {
      // Committed again next time (a rebalance in progress, a broker away).
      for (RdKafka::TopicPartition* p : parts) last_committed_.erase(TopicPartition{p->topic(), p->partition()});
      limited("WARN", "commit_failed", "event=commit_failed error=\"{}\"", RdKafka::err2str(e));
    }
    RdKafka::TopicPartition::destroy(parts);
  }

  void logStats(MonoTime now) {
    const WorkerStats s = core_->stats();
    logLine(o_.log, "INFO",
            "event=stats read={} sent={} failed={} rejected={} skipped={} parked={} unparked={} ledger_rows={} "
            "ledger_errors={} buffered={} unrecorded={} quota_batches={} quota_degraded_providers={}",
            s.read, s.sent, s.failed, s.rejected, s.skipped_finished, s.parked, s.unparked, s.ledger_rows,
            s.ledger_errors, s.buffered_messages, s.unrecorded, s.quota.batches, s.quota.degraded_providers);
    (void)now;
  }

  int loop() {
    MonoTime next_commit = clock_->now() + o_.commit_interval;
    MonoTime next_stats = clock_->now() + o_.stats_interval;
    MonoTime idle_since{};
    bool idle = false;
    std::uint64_t last_errors = 0;
    while (!stop_.load(std::memory_order_relaxed)) {
      MonoTime now = clock_->now();
      const bool hup = reload_.requested && reload_.requested->exchange(false);
      if (hup || (admin_state_ && admin_state_->takeReloadRequest())) reloadConfig(now);
      if (paused_ ? core_->mayResume() : !core_->wantsMore()) setPaused(!paused_);
      // Read what is there (up to a batch), waiting only when nothing is to do.
      // Idle, the wait is still one tick while LISTEN is up: the notification
      // socket is read between waits, so a change applies within a tick
      // whether or not messages flow. Without LISTEN an idle worker waits
      // longer (the periodic refresh needs no quick turn).
      const bool busy = !core_->idle();
      const Nanos wait = busy || listener_->connected() ? std::chrono::duration_cast<Nanos>(o_.tick)
                                                        : Nanos(std::chrono::milliseconds(100));
      int timeout_ms =
          static_cast<int>(std::chrono::duration_cast<milliseconds>(core_->nextWake(now, wait) - now).count());
      for (int i = 0; i < 2000; ++i) {
        std::unique_ptr<RdKafka::Message> m(consumer_->consume(i == 0 ? std::max(0, timeout_ms) : 0));
        const RdKafka::ErrorCode err = m->err();
        if (err == RdKafka::ERR__TIMED_OUT) break;
        if (err == RdKafka::ERR__PARTITION_EOF) {
          at_end_.insert(TopicPartition{m->topic_name(), m->partition()});
          continue;
        }
        if (err != RdKafka::ERR_NO_ERROR) {
          limited("WARN", "kafka_error", "event=kafka_error error=\"{}\"", m->errstr());
          break;
        }
        at_end_.erase(TopicPartition{m->topic_name(), m->partition()});
        RawMessage raw = toRaw(*m);
        if ((i & 63) == 0) now = clock_->now();  // one clock read per 64 records is plenty
        if (raw.key && !core_->knowsCampaign(*raw.key) && now - last_refresh_ >= milliseconds(200))
          refreshDirectory(now);  // a campaign created just before its messages
        core_->offer(std::move(raw), now);
        if (!core_->wantsMore()) break;
      }
      now = clock_->now();
      pollControl(now);
      now = clock_->now();  // reading a notice's row may take a round trip to PostgreSQL
      core_->step(now);
      if (now - last_refresh_ >= o_.refresh_interval || (control_retry_at_ && now >= *control_retry_at_))
        refreshDirectory(now);
      if (now >= next_commit) {
        commit(false);
        next_commit = now + o_.commit_interval;
      }
      const WorkerStats s = core_->stats();
      if (s.ledger_errors != last_errors) {
        limited("WARN", "ledger_unavailable", "event=ledger_unavailable errors={} unrecorded={} buffered={}",
                s.ledger_errors, s.unrecorded, s.buffered_messages);
        last_errors = s.ledger_errors;
      }
      if (now >= next_provider_log_) logProviders(now);
      if (admin_state_ && adminTurn(now)) break;
      if (o_.stats_interval.count() > 0 && now >= next_stats) {
        logStats(now);
        next_stats = now + o_.stats_interval;
      }
      if (o_.exit_when_idle.count() > 0) {
        const bool done = !assigned_.empty() && at_end_.size() == assigned_.size() && core_->idle();
        if (!done) {
          idle = false;
        } else if (!idle) {
          idle = true;
          idle_since = now;
        } else if (now - idle_since >= o_.exit_when_idle) {
          logLine(o_.log, "INFO", "event=idle_exit");
          break;
        }
      }
    }
    return 0;
  }

  // SIGHUP: the live keys apply from this turn; the others are said and kept.
  // Campaigns and providers are re-read at once too.
  void reloadConfig(MonoTime now) {
    if (!reload_.reload) {
      logLine(o_.log, "WARN",
              "event=reload_failed error=\"this daemon was started without a configuration to re-read\"");
      return;
    }
    ReloadResult r;
    try {
      r = reload_.reload();
    } catch (const std::exception& e) {
      std::string error = e.what();
      for (std::size_t i = 0; (i = error.find('"', i)) != std::string::npos; i += 2) error.insert(i, "\\");
      logLine(o_.log, "WARN", "event=reload_failed error=\"{}\"", error);
      return;
    }
    for (const std::string& key : r.needs_restart) logLine(o_.log, "WARN", "event=reload_needs_restart key={}", key);
    std::FILE* log = o_.log;
    o_ = std::move(r.options);
    o_.log = log;
    core_->setTuning(o_.worker.retry, o_.worker.adaptive, now);
    logLine(o_.log, "INFO", "event=config_reloaded changed=[{}]", fmt::join(r.changed, ","));
    refreshDirectory(now);
  }

  void shutdown() {
    // Commit what is done while this worker still owns its partitions (other
    // workers stopping at the same moment rebalance the group soon), stop
    // reading, let what is in the sink finish (or hand it back), then write
    // the ledger and commit again.
    stopping_ = true;
    core_->flush(clock_->now());
    commit(true);
    setPaused(true);
    core_->drain();
    const MonoTime started = clock_->now();
    const MonoTime deadline = started + o_.shutdown_deadline;
    {
      const WorkerStats s = core_->stats();
      logLine(o_.log, "INFO", "event=shutdown_started in_flight={} unrecorded={} buffered={} deadline_ms={}",
              sink_->inFlight(), s.unrecorded, s.buffered_messages, o_.shutdown_deadline.count());
    }
    while (clock_->now() < deadline && core_->stats().unrecorded > 0) {
      core_->step(clock_->now());
      if (core_->stats().unrecorded > 0) sink_->wait(std::chrono::milliseconds(5));
      if (!core_->flush(clock_->now())) ::usleep(100 * 1000);
    }
    core_->flush(clock_->now());
    commit(true);
    logStats(clock_->now());
    {
      const WorkerStats s = core_->stats();
      if (s.unrecorded > 0)
        logLine(o_.log, "WARN",
                "event=shutdown_deadline_passed unrecorded={} hint=\"not committed: read and sent again after a "
                "restart, under the same Idempotency-Key\"",
                s.unrecorded);
      // Claims are given back only when nothing is in flight: a claimed message
      // still in a request past the deadline keeps its lease, so no other
      // worker sends it while that request may still be answered.
      const std::size_t released = s.unrecorded == 0 ? core_->releaseParked() : 0;
      logLine(o_.log, "INFO", "event=shutdown_flushed after_ms={} released_parked={} buffered_left={}",
              std::chrono::duration_cast<milliseconds>(clock_->now() - started).count(), released, s.buffered_messages);
    }
    // librdkafka before 2.3 asserts when a cooperative-sticky consumer that
    // never received an assignment is closed (librdkafka #4312): wait for the
    // join in progress to finish first, up to two session timeouts.
    if (o_.assignment.find("cooperative") != std::string::npos) {
      const MonoTime until = clock_->now() + 2 * milliseconds(o_.session_timeout_ms);
      while (!ever_assigned_ && clock_->now() < until) {
        std::unique_ptr<RdKafka::Message> m(consumer_->consume(100));
      }
    }
    consumer_->close();  // revokes (a last commit from the rebalance callback) and leaves the group
    logLine(o_.log, "INFO", "event=stopped");
  }

  // A provider's adaptive rate and pause, logged when they change (checked
  // every 250 ms): one line per change, not per message.
  void logProviders(MonoTime now) {
    next_provider_log_ = now + milliseconds(250);
    for (const ProviderStats& p : core_->providerStats(now)) {
      if (!p.effective || !p.ceiling) continue;
      auto& [rate, paused] = provider_logged_[p.id];
      const bool moved = std::abs(*p.effective - rate) > 0.05 * std::max(rate, 1.0);
      if (!moved && p.paused == paused) continue;
      // At most one line per provider per 10 s; the state last written is
      // what the next change is measured against.
      if (limited("INFO", "provider_rate " + p.id,
                  "event=provider_rate provider={} ceiling={:.1f} effective={:.1f} paused={} throttled={} "
                  "circuit_open={} workers={}",
                  p.id, *p.ceiling, *p.effective, p.paused, p.throttled, p.circuit_open, p.workers)) {
        rate = *p.effective;
        paused = p.paused;
      }
    }
  }

  void writeSummary(MonoTime start) {
    if (o_.summary_file.empty()) return;
    const MonoTime end = clock_->now();
    const WorkerStats s = core_->stats();
    nlohmann::json j;
    const double elapsed = std::chrono::duration<double>(end - start).count();
    j["elapsed_s"] = elapsed;
    j["read"] = s.read;
    j["sent"] = s.sent;
    j["failed"] = s.failed;
    j["rejected"] = s.rejected;
    j["skipped_finished"] = s.skipped_finished;
    j["parked"] = s.parked;
    j["ledger_rows"] = s.ledger_rows;
    j["ledger_writes"] = s.ledger_writes;
    j["ledger_errors"] = s.ledger_errors;
    if (quota_) {
      j["quota"] = {{"batches", s.quota.batches},
                    {"requests", s.quota.requests},
                    {"tokens_granted", s.quota.tokens_granted},
                    {"tokens_expired", s.quota.tokens_expired},
                    {"unavailable", s.quota.unavailable},
                    {"degraded_entered", s.quota.degraded_entered},
                    {"throttle_reports", s.quota.throttle_reports},
                    {"shared_pauses", s.quota.shared_pauses}};
    }
    nlohmann::json providers = nlohmann::json::array();
    for (const ProviderStats& p : core_->providerStats(end)) {
      nlohmann::json e;
      e["id"] = p.id;
      e["rate"] = p.ceiling ? nlohmann::json(*p.ceiling) : nlohmann::json(nullptr);
      e["effective_rate"] = p.effective ? nlohmann::json(*p.effective) : nlohmann::json(nullptr);
      e["throttled"] = p.throttled;
      providers.push_back(std::move(e));
    }
    j["providers"] = std::move(providers);
    // The sending span: first to last `sent` over all campaigns, so the rate
    // leaves out the group join and the idle wait before exit.
    std::optional<MonoTime> first, last;
    for (const CampaignStats& c : core_->campaignStats()) {
      if (c.first_sent && (!first || *c.first_sent < *first)) first = c.first_sent;
      if (c.last_sent && (!last || *c.last_sent > *last)) last = c.last_sent;
    }
    const double span = first && last ? std::chrono::duration<double>(*last - *first).count() : 0.0;
    j["sending_s"] = span;
    j["sent_per_s"] = span > 0 ? static_cast<double>(s.sent) / span : 0.0;
    j["ledger_rows_per_s"] = span > 0 ? static_cast<double>(s.ledger_rows) / span : 0.0;
    nlohmann::json campaigns = nlohmann::json::array();
    std::map<std::string, CampaignInfo> infos;
    try {
      for (const CampaignInfo& c : directory_->campaigns()) infos[c.id] = c;
    } catch (const std::exception&) {
    }
    for (const CampaignStats& c : core_->campaignStats()) {
      nlohmann::json e;
      e["id"] = c.id;
      auto info = infos.find(c.id);
      if (info != infos.end() && info->second.limit)
        e["send_rate"] = info->second.limit->rate_per_s;
      else
        e["send_rate"] = nullptr;
      e["sent"] = c.sent;
      e["failed"] = c.failed;
      e["rejected"] = c.rejected;
      e["retries"] = c.retries;
      e["parked"] = c.parked;
      double achieved = 0;
      if (c.sent > 1 && c.first_sent && c.last_sent && *c.last_sent > *c.first_sent)
        achieved =
            static_cast<double>(c.sent - 1) / std::chrono::duration<double>(*c.last_sent - *c.first_sent).count();
      e["achieved_rate"] = achieved;
      e["sending_s"] =
          c.first_sent && c.last_sent ? std::chrono::duration<double>(*c.last_sent - *c.first_sent).count() : 0.0;
      campaigns.push_back(std::move(e));
    }
    j["campaigns"] = std::move(campaigns);
    std::ofstream f(o_.summary_file);
    f << j.dump(2) << "\n";
    if (!f) logLine(o_.log, "WARN", "event=summary_write_failed file={}", o_.summary_file);
  }

  // --- admin listener: /metrics, /healthz, /readyz, POST /admin/drain -----
  // The listener's thread reads only admin_state_; the loop publishes a
  // snapshot into it at most every kMetricsInterval (nothing per message).

  static constexpr milliseconds kMetricsInterval{250};

  // The --admin-listen address; nullopt when off. Checked before anything starts.
  std::optional<admin::ListenAddress> adminAddress() const {
    if (o_.admin_listen.empty() || o_.admin_listen == "off") return std::nullopt;
    try {
      return admin::parseListenAddress(o_.admin_listen);
    } catch (const admin::AdminAddressError& e) {
      throw DaemonConfigError(e.what());
    }
  }

  void startAdmin(const admin::ListenAddress& at) {
    admin_state_ = std::make_unique<admin::AdminState>();
    const double started = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    snapshots_.emplace(PACER_VERSION, o_.sink, o_.redis.empty() ? "local" : "redis", started);
    admin::AdminServerOptions ao;
    ao.address = at;
    ao.token = o_.admin_token;
    std::FILE* log = o_.log;
    // The listener limits its own per-request lines (refused tokens: one a
    // second per status, with the count held back).
    ao.log = [log](const char* level, const std::string& text) { logLine(log, level, "{}", text); };
    startConsole(ao);
    admin_ = std::make_unique<admin::AdminServer>(std::move(ao), *admin_state_, *clock_);
    console_->setAddress(admin_->boundAddress());
    logLine(o_.log, "INFO", "event=console url=http://{}/console/ controls={}", admin_->boundAddress(),
            o_.admin_console_controls && !o_.admin_token.empty() ? "on" : "off");
    logLine(o_.log, "INFO", "event=admin_listening address={} state_changes={}", admin_->boundAddress(),
            o_.admin_token.empty() ? "off" : "token");
    if (!admin_->loopback())
      logLine(o_.log, "WARN",
              "event=admin_not_loopback address={} hint=\"anyone who can reach it reads /metrics; keep it behind a "
              "firewall\"",
              admin_->boundAddress());
  }

  // The operator console and /api/v1 on the admin listener (src/console,
  // docs/console.md): a refresher thread with its own PostgreSQL and Redis
  // connections, started by the first request; it reads this worker's
  // figures only from admin_state_.
  void startConsole(admin::AdminServerOptions& ao) {
    console::ConsoleOptions co;
    co.postgres = o_.postgres;
    co.redis = o_.redis;
    co.token = o_.admin_token;
    co.controls = o_.admin_console_controls;
    co.version = PACER_VERSION;
    co.log = ao.log;
    auto events = std::make_shared<admin::EventHub>();
    console_ = std::make_unique<console::Console>(std::move(co), *admin_state_, events);
    ao.routes = console_.get();
    ao.events = std::move(events);
  }

  // Once per loop turn: the heartbeat, a snapshot when due. True when a drain
  // was asked for (the loop then stops as on SIGTERM).
  bool adminTurn(MonoTime now) {
    admin_state_->heartbeat(now);
    if (now >= next_metrics_) {
      next_metrics_ = now + kMetricsInterval;
      publishMetrics(now);
    }
    if (!admin_state_->drainRequested()) return false;
    logLine(o_.log, "INFO", "event=drain_requested source=admin");
    return true;
  }

  void publishMetrics(MonoTime now) {
    std::vector<admin::PartitionMetrics> parts;
    parts.reserve(assigned_.size());
    for (const TopicPartition& tp : assigned_) {
      admin::PartitionMetrics pm;
      pm.topic = tp.topic;
      pm.partition = tp.partition;
      if (auto it = last_committed_.find(tp); it != last_committed_.end())
        pm.committed = it->second;
      else if (auto from = assigned_from_.find(tp); from != assigned_from_.end())
        pm.committed = from->second;
      std::int64_t low = -1, high = -1;  // cached from fetches: no broker call
      if (consumer_ && consumer_->get_watermark_offsets(tp.topic, tp.partition, &low, &high) == RdKafka::ERR_NO_ERROR)
        pm.high_watermark = high;
      parts.push_back(std::move(pm));
    }
    const auto* redis = dynamic_cast<const RedisQuotaBackend*>(quota_.get());
    admin::MetricsSnapshot snapshot =
        snapshots_->build(now, core_->stats(), core_->campaignStats(), core_->providerStats(now),
                          redis ? &redis->stats() : nullptr, std::move(parts), ever_assigned_, paused_);
    snapshot.directory_rows_invalid = row_problems_.size();
    snapshot.directory_rows_skipped_total = rows_skipped_;
    admin_state_->publish(std::make_shared<const admin::MetricsSnapshot>(std::move(snapshot)));
  }

  DaemonOptions o_;  // a copy: a reload changes its live keys
  const std::atomic<bool>& stop_;
  ReloadHook reload_;
  Rebalance rebalance_;
  TimeSourcePtr clock_;
  SinkInterfacePtr sink_;
  LedgerInterfacePtr ledger_;
  ParkingInterfacePtr parking_;
  std::unique_ptr<ledger::PgDirectory> directory_;
  std::unique_ptr<ledger::PgListener> listener_;
  MonoTime listen_retry_at_{};
  milliseconds listen_backoff_{kListenBackoffMin};
  bool listen_outage_ = false;                // LISTEN is down (logged once)
  std::optional<MonoTime> control_retry_at_;  // a notice's row could not be read: re-read all then
  QuotaBackendPtr quota_;
  QuotaLog quota_log_{o_.log};
  std::unique_ptr<WorkerCore> core_;
  std::unique_ptr<RdKafka::KafkaConsumer> consumer_;
  std::set<TopicPartition> assigned_;
  std::set<TopicPartition> at_end_;
  std::map<TopicPartition, std::int64_t> last_committed_;
  MonoTime last_refresh_{};
  bool paused_ = false;
  bool stopping_ = false;  // shutdown() has begun
  bool ever_assigned_ = false;
  bool directory_failing_ = false;
  std::map<std::string, std::pair<double, double>> warned_burst_;
  std::map<std::pair<std::string, std::string>, std::string> row_problems_;  // (kind, id) -> reason, rows held now
  std::uint64_t rows_skipped_ = 0;
  LogLimiter log_limiter_{std::chrono::seconds(10)};
  std::map<std::string, std::string, std::less<>> campaign_provider_;  // with provider sinks only
  std::map<std::string, std::pair<double, bool>> provider_logged_;     // effective rate and pause last logged
  MonoTime next_provider_log_{};
  CommitResults commit_results_;
  std::map<TopicPartition, std::int64_t> assigned_from_;  // where reading started, for the offset lag
  std::optional<admin::SnapshotBuilder> snapshots_;
  MonoTime next_metrics_{};
  std::unique_ptr<admin::AdminState> admin_state_;
  std::unique_ptr<console::Console> console_;  // the listener's routes: outlives admin_
  std::unique_ptr<admin::AdminServer> admin_;  // after admin_state_: stopped before it goes
};

void CommitResults::offset_commit_cb(RdKafka::ErrorCode err, std::vector<RdKafka::TopicPartition*>& offsets) {
  if (err != RdKafka::ERR_NO_ERROR && err != RdKafka::ERR__NO_OFFSET) daemon_.commitFailed(err, offsets);
}

void Rebalance::rebalance_cb(RdKafka::KafkaConsumer* consumer, RdKafka::ErrorCode err,
                             std::vector<RdKafka::TopicPartition*>& partitions) {
  if (err == RdKafka::ERR__ASSIGN_PARTITIONS) {
    daemon_.assigned(consumer, partitions);
  } else {
    // ERR__REVOKE_PARTITIONS, or an error: give the partitions up either way.
    daemon_.revoked(consumer, partitions, consumer->assignment_lost());
  }
}

}  // namespace

int runDaemon(const DaemonOptions& options, const std::atomic<bool>& stop, ReloadHook reload) {
  Daemon d(options, stop, std::move(reload));
  return d.run();
}

}  // namespace pacer::worker
