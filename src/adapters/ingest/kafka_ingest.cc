#include "pacer/ingest/kafka_ingest.h"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafkacpp.h>
#include <unistd.h>

#include <set>

#include <fmt/format.h>

#include "pacer/error.h"

namespace pacer::ingest {
namespace {

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

class CommitResults final : public RdKafka::OffsetCommitCb {
 public:
  explicit CommitResults(KafkaIngest::Impl& i) : impl_(i) {}
  void offset_commit_cb(RdKafka::ErrorCode err, std::vector<RdKafka::TopicPartition*>& offsets) override;

 private:
  KafkaIngest::Impl& impl_;
};

class Rebalance final : public RdKafka::RebalanceCb {
 public:
  explicit Rebalance(KafkaIngest::Impl& i) : impl_(i) {}
  void rebalance_cb(RdKafka::KafkaConsumer* consumer, RdKafka::ErrorCode err,
                    std::vector<RdKafka::TopicPartition*>& partitions) override;

 private:
  KafkaIngest::Impl& impl_;
};

}  // namespace

struct KafkaIngest::Impl {
  Impl(KafkaIngestOptions o, WorkerCore& c, LedgerInterface& l, const TimeSource& t, logging::LoggerPtr lg)
      : options(std::move(o)), core(c), ledger(l), clock(t), log(lg), limited(lg, std::chrono::seconds(10)),
        rebalance(*this), commit_results(*this) {}

  KafkaIngestOptions options;
  WorkerCore& core;
  LedgerInterface& ledger;
  const TimeSource& clock;
  logging::LoggerPtr log;
  logging::LimitedLog limited;
  Rebalance rebalance;
  CommitResults commit_results;
  std::unique_ptr<RdKafka::KafkaConsumer> consumer;
  std::set<TopicPartition> assigned;
  std::set<TopicPartition> at_end;
  std::map<TopicPartition, std::int64_t> last_committed;
  std::map<TopicPartition, std::int64_t> assigned_from;  // where reading started, for the offset lag
  std::set<TopicPartition> paused;  // fetching stopped (limit(), setPaused())
  bool at_bounds = false;           // at the core's memory bounds, until it may resume
  bool stopping = false;
  bool ever_assigned = false;

  void warnLimited(const std::string& key, const std::string& line) {
    limited.write(spdlog::level::warn, key, line, clock.now());
  }

  // The ledger's finished offsets of [from, end) of one partition, tried a few times.
  std::vector<std::int64_t> finishedOffsets(const RdKafka::TopicPartition& p, std::int64_t from, std::int64_t high) {
    for (int attempt = 0; attempt < 5 && high > from; ++attempt) {
      try {
        return ledger.finishedOffsets(p.topic(), p.partition(), from, high);
      } catch (const std::exception& e) {
        log->warn("event=replay_lookup_failed topic={} partition={} error=\"{}\"", p.topic(), p.partition(), e.what());
        ::usleep(500 * 1000);
      }
    }
    return {};
  }

  // Replay without resending: one ledger query per assigned partition, over
  // the range this worker is about to read (committed offset .. end).
  void assignedCb(RdKafka::KafkaConsumer* c, std::vector<RdKafka::TopicPartition*>& parts) {
    ever_assigned = true;
    std::vector<RdKafka::TopicPartition*> query;
    for (RdKafka::TopicPartition* p : parts) query.push_back(RdKafka::TopicPartition::create(p->topic(), p->partition()));
    const RdKafka::ErrorCode ce = c->committed(query, 10000);
    for (RdKafka::TopicPartition* p : query) {
      std::int64_t low = 0, high = 0;
      c->query_watermark_offsets(p->topic(), p->partition(), &low, &high, 5000);
      const std::int64_t from = ce == RdKafka::ERR_NO_ERROR && p->offset() >= 0 ? p->offset() : low;
      std::vector<std::int64_t> finished = finishedOffsets(*p, from, high);
      log->info("event=assigned topic={} partition={} from={} end={} already_finished={}", p->topic(), p->partition(),
                from, high, finished.size());
      const TopicPartition tp{p->topic(), p->partition()};
      core.assign(tp, std::move(finished));
      assigned_from[tp] = from;
      assigned.insert(tp);
      at_end.erase(tp);
    }
    RdKafka::TopicPartition::destroy(query);
    if (c->rebalance_protocol() == "COOPERATIVE")
      c->incremental_assign(parts);
    else
      c->assign(parts);
    if (at_bounds) {  // above the bounds: what it holds is not known yet
      c->pause(parts);
      for (RdKafka::TopicPartition* p : parts) paused.insert(TopicPartition{p->topic(), p->partition()});
    }
  }

  // What has an outcome goes to the ledger, and its offsets are committed
  // while this worker still owns the partitions.
  void revokedCb(RdKafka::KafkaConsumer* c, std::vector<RdKafka::TopicPartition*>& parts, bool lost) {
    for (int attempt = 0; attempt < 3 && !core.flush(clock.now()); ++attempt) ::usleep(200 * 1000);
    std::vector<RdKafka::TopicPartition*> commit;
    for (RdKafka::TopicPartition* p : parts) {
      const TopicPartition tp{p->topic(), p->partition()};
      const auto off = core.committable(tp);
      if (!off) continue;
      // Already committed (a stop commits before it leaves): nothing to send,
      // so nothing to fail while the group rebalances.
      if (auto it = last_committed.find(tp); it != last_committed.end() && it->second >= *off) continue;
      commit.push_back(RdKafka::TopicPartition::create(tp.topic, tp.partition, *off));
    }
    if (!commit.empty() && !lost) {
      const RdKafka::ErrorCode e = c->commitSync(commit);
      // While stopping, other workers leaving at the same moment rebalance
      // the group: expected, and the next owner skips what the ledger holds.
      const bool expected =
          stopping && (e == RdKafka::ERR_REBALANCE_IN_PROGRESS || e == RdKafka::ERR_ILLEGAL_GENERATION);
      if (e != RdKafka::ERR_NO_ERROR)
        log->log(expected ? spdlog::level::info : spdlog::level::warn, "event=commit_on_revoke_failed error=\"{}\"{}",
                 RdKafka::err2str(e), expected ? " during=stop" : "");
    }
    RdKafka::TopicPartition::destroy(commit);
    for (RdKafka::TopicPartition* p : parts) {
      const TopicPartition tp{p->topic(), p->partition()};
      core.revoke(tp);
      assigned.erase(tp);
      at_end.erase(tp);
      last_committed.erase(tp);
      paused.erase(tp);
      log->info("event=revoked topic={} partition={} lost={}", tp.topic, tp.partition, lost);
    }
    if (c->rebalance_protocol() == "COOPERATIVE")
      c->incremental_unassign(parts);
    else
      c->unassign();
  }

  void commitFailed(RdKafka::ErrorCode err, const std::vector<RdKafka::TopicPartition*>& offsets) {
    for (const RdKafka::TopicPartition* p : offsets) {
      auto it = last_committed.find(TopicPartition{p->topic(), p->partition()});
      if (it != last_committed.end() && it->second == p->offset()) last_committed.erase(it);
    }
    warnLimited("commit_failed", fmt::format("event=commit_failed error=\"{}\"", RdKafka::err2str(err)));
  }

  // Pauses (or resumes) the assigned partitions that are not yet so and that `which` picks.
  void pauseOrResume(bool pause, const std::function<bool(const TopicPartition&)>& which) {
    std::vector<RdKafka::TopicPartition*> parts;
    std::vector<TopicPartition> picked;
    for (const TopicPartition& tp : assigned) {
      if (paused.contains(tp) == pause || !which(tp)) continue;
      parts.push_back(RdKafka::TopicPartition::create(tp.topic, tp.partition));
      picked.push_back(tp);
    }
    if (parts.empty()) return;
    const RdKafka::ErrorCode e = pause ? consumer->pause(parts) : consumer->resume(parts);
    RdKafka::TopicPartition::destroy(parts);
    if (e != RdKafka::ERR_NO_ERROR) return;  // tried again at the next turn
    for (const TopicPartition& tp : picked) pause ? (void)paused.insert(tp) : (void)paused.erase(tp);
    const WorkerStats s = core.stats();
    log->info("event={} partitions={} paused={}/{} buffered_messages={} buffered_bytes={}",
              pause ? "intake_paused" : "intake_resumed", picked.size(), paused.size(), assigned.size(),
              s.buffered_messages, s.buffered_bytes);
  }

  void make() {
    std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
    std::map<std::string, std::string> props{
        {"bootstrap.servers", options.brokers},
        {"group.id", options.group},
        {"enable.auto.commit", "false"},
        {"enable.auto.offset.store", "false"},
        {"auto.offset.reset", "earliest"},
        {"enable.partition.eof", "true"},
        {"partition.assignment.strategy", options.assignment},
        {"session.timeout.ms", std::to_string(options.session_timeout_ms)},
    };
    for (const auto& [k, v] : options.properties) props[k] = v;
    std::string err;
    for (const auto& [k, v] : props)
      if (conf->set(k, v, err) != RdKafka::Conf::CONF_OK)
        throw InvalidError(fmt::format("kafka property {}: {}", k, err));  // not the value: it may be a password
    if (conf->set("rebalance_cb", &rebalance, err) != RdKafka::Conf::CONF_OK) throw InvalidError(err);
    if (conf->set("offset_commit_cb", &commit_results, err) != RdKafka::Conf::CONF_OK) throw InvalidError(err);
    consumer.reset(RdKafka::KafkaConsumer::create(conf.get(), err));
    if (!consumer) throw InvalidError(fmt::format("kafka consumer: {}", err));
    const RdKafka::ErrorCode e = consumer->subscribe(options.topics);
    if (e != RdKafka::ERR_NO_ERROR) throw InvalidError(fmt::format("kafka subscribe: {}", RdKafka::err2str(e)));
  }
};

namespace {

void CommitResults::offset_commit_cb(RdKafka::ErrorCode err, std::vector<RdKafka::TopicPartition*>& offsets) {
  if (err != RdKafka::ERR_NO_ERROR && err != RdKafka::ERR__NO_OFFSET) impl_.commitFailed(err, offsets);
}

void Rebalance::rebalance_cb(RdKafka::KafkaConsumer* consumer, RdKafka::ErrorCode err,
                             std::vector<RdKafka::TopicPartition*>& partitions) {
  if (err == RdKafka::ERR__ASSIGN_PARTITIONS)
    impl_.assignedCb(consumer, partitions);
  else  // ERR__REVOKE_PARTITIONS, or an error: give the partitions up either way
    impl_.revokedCb(consumer, partitions, consumer->assignment_lost());
}

}  // namespace

KafkaIngest::KafkaIngest(KafkaIngestOptions options, WorkerCore& core, LedgerInterface& ledger,
                         const TimeSource& clock, logging::LoggerPtr log)
    : impl_(std::make_unique<Impl>(std::move(options), core, ledger, clock, std::move(log))) {}

KafkaIngest::~KafkaIngest() = default;

void KafkaIngest::start() { impl_->make(); }

void KafkaIngest::poll(std::chrono::milliseconds timeout, int max,
                       const std::function<void(const std::string&)>& unknown_campaign) {
  Impl& m = *impl_;
  MonoTime now = m.clock.now();
  for (int i = 0; i < max; ++i) {
    std::unique_ptr<RdKafka::Message> msg(
        m.consumer->consume(i == 0 ? static_cast<int>(std::max<std::int64_t>(0, timeout.count())) : 0));
    const RdKafka::ErrorCode err = msg->err();
    if (err == RdKafka::ERR__TIMED_OUT) break;
    if (err == RdKafka::ERR__PARTITION_EOF) {
      m.at_end.insert(TopicPartition{msg->topic_name(), msg->partition()});
      continue;
    }
    if (err != RdKafka::ERR_NO_ERROR) {
      m.warnLimited("kafka_error", fmt::format("event=kafka_error error=\"{}\"", msg->errstr()));
      break;
    }
    TopicPartition tp{msg->topic_name(), msg->partition()};
    m.at_end.erase(tp);
    RawMessage raw = toRaw(*msg);
    if ((i & 63) == 0) now = m.clock.now();  // one clock read per 64 records is plenty
    if (raw.key && !m.core.knowsCampaign(*raw.key) && unknown_campaign) unknown_campaign(*raw.key);
    m.core.offer(std::move(raw), now);
    // Above the bounds, reading goes on while what is read is kept (limit()).
    if (!m.core.wantsMore() && (!m.core.belowCeiling() || m.core.readsPark(tp))) break;
  }
}

void KafkaIngest::setPaused(bool paused) {
  Impl& m = *impl_;
  m.at_bounds = paused;
  m.pauseOrResume(paused, [](const TopicPartition&) { return true; });
}

void KafkaIngest::limit() {
  Impl& m = *impl_;
  if (m.at_bounds && m.core.mayResume()) {
    m.at_bounds = false;
    m.pauseOrResume(false, [](const TopicPartition&) { return true; });
    return;
  }
  if (!m.at_bounds && m.core.wantsMore()) return;
  m.at_bounds = true;
  const bool all = !m.core.belowCeiling();
  m.pauseOrResume(true, [&](const TopicPartition& tp) { return all || m.core.readsPark(tp); });
}

bool KafkaIngest::paused() const noexcept { return !impl_->paused.empty(); }

void KafkaIngest::commit(bool sync) {
  Impl& m = *impl_;
  std::vector<RdKafka::TopicPartition*> parts;
  for (const PartitionCommit& pc : m.core.commits()) {
    if (!m.assigned.contains(pc.partition)) continue;
    auto it = m.last_committed.find(pc.partition);
    if (it != m.last_committed.end() && it->second >= pc.offset) continue;
    parts.push_back(RdKafka::TopicPartition::create(pc.partition.topic, pc.partition.partition, pc.offset));
    m.last_committed[pc.partition] = pc.offset;
  }
  if (parts.empty()) return;
  const RdKafka::ErrorCode e = sync ? m.consumer->commitSync(parts) : m.consumer->commitAsync(parts);
  if (e != RdKafka::ERR_NO_ERROR) {
    // Committed again next time (a rebalance in progress, a broker away).
    for (RdKafka::TopicPartition* p : parts) m.last_committed.erase(TopicPartition{p->topic(), p->partition()});
    m.warnLimited("commit_failed", fmt::format("event=commit_failed error=\"{}\"", RdKafka::err2str(e)));
  }
  RdKafka::TopicPartition::destroy(parts);
}

void KafkaIngest::stopping() noexcept { impl_->stopping = true; }

void KafkaIngest::close() {
  Impl& m = *impl_;
  if (m.options.assignment.find("cooperative") != std::string::npos) {
    const MonoTime until = m.clock.now() + 2 * std::chrono::milliseconds(m.options.session_timeout_ms);
    while (!m.ever_assigned && m.clock.now() < until) std::unique_ptr<RdKafka::Message> msg(m.consumer->consume(100));
  }
  m.consumer->close();
}

bool KafkaIngest::everAssigned() const noexcept { return impl_->ever_assigned; }

bool KafkaIngest::atEnd() const noexcept {
  return !impl_->assigned.empty() && impl_->at_end.size() == impl_->assigned.size();
}

std::vector<PartitionState> KafkaIngest::partitions() const {
  const Impl& m = *impl_;
  std::vector<PartitionState> out;
  out.reserve(m.assigned.size());
  for (const TopicPartition& tp : m.assigned) {
    PartitionState ps;
    ps.partition = tp;
    if (auto it = m.last_committed.find(tp); it != m.last_committed.end())
      ps.committed = it->second;
    else if (auto from = m.assigned_from.find(tp); from != m.assigned_from.end())
      ps.committed = from->second;
    std::int64_t low = -1, high = -1;  // cached from fetches: no broker call
    if (m.consumer && m.consumer->get_watermark_offsets(tp.topic, tp.partition, &low, &high) == RdKafka::ERR_NO_ERROR)
      ps.high_watermark = high;
    out.push_back(std::move(ps));
  }
  return out;
}

}  // namespace pacer::ingest
