// The Kafka side of a worker: a librdkafka consumer group feeding a
// WorkerCore. On assignment it asks the ledger which offsets of the range it
// will read already have an outcome (replayed records are skipped, not sent
// again); it commits only what the core says is committable (every message
// below has a durable outcome); on revocation it writes what it can and
// commits before letting the partitions go. Manual offsets, eager or
// cooperative rebalancing.
//
// Not thread-safe: the daemon loop owns it (librdkafka calls the rebalance
// and commit callbacks from inside poll() and close(), on that thread).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "pacer/ledger.h"
#include "pacer/logging/logging.h"
#include "pacer/time.h"
#include "pacer/worker.h"

namespace pacer::ingest {

struct KafkaIngestOptions {
  std::string brokers;               // bootstrap.servers
  std::vector<std::string> topics;   // topics to consume
  std::string group = "pacer";       // group.id
  std::string assignment = "range";  // partition.assignment.strategy: range, roundrobin, cooperative-sticky
  int session_timeout_ms = 10000;
  std::map<std::string, std::string> properties;  // any other consumer property (values may be secrets)
};

// A partition this worker reads, for /metrics.
struct PartitionState {
  TopicPartition partition;
  std::int64_t committed = -1;       // committed by this worker, or where reading started; < 0: unknown
  std::int64_t high_watermark = -1;  // librdkafka's cached high watermark; < 0: unknown
};

class KafkaIngest {
 public:
  // `core`, `ledger`, `clock` must outlive it.
  KafkaIngest(KafkaIngestOptions options, WorkerCore& core, LedgerInterface& ledger, const TimeSource& clock,
              logging::LoggerPtr log);
  ~KafkaIngest();
  KafkaIngest(const KafkaIngest&) = delete;
  KafkaIngest& operator=(const KafkaIngest&) = delete;

  // Creates the consumer and subscribes. Throws InvalidError naming a
  // property librdkafka refuses (never its value: it may be a password).
  void start();

  // Reads up to `max` records, waiting up to `timeout` for the first, and
  // offers each to the core; stops early when the core wants no more.
  // `unknown_campaign` is called before offering a record whose campaign the
  // core does not know yet (a campaign created just before its messages).
  void poll(std::chrono::milliseconds timeout, int max,
            const std::function<void(const std::string& campaign)>& unknown_campaign);

  // Stops (true) or resumes (false) fetching for every assigned partition.
  void setPaused(bool paused);
  // Flow control at the core's memory bounds, once a turn. When the core wants
  // no more, stops fetching each partition whose last message was parked
  // (WorkerCore::readsPark), and every partition above the core's ceiling; the
  // others are read on, so a campaign that keeps up is not starved by another's
  // backlog. Once the core may resume, resumes them all.
  void limit();
  // Some partition's fetching is stopped.
  bool paused() const noexcept;

  // Commits every partition's committable offset that moved (sync waits for
  // the broker). A failed commit is tried again at the next call.
  void commit(bool sync);

  // A stop has begun: a commit refused because other workers leaving at the
  // same moment rebalance the group is expected, and said at INFO.
  void stopping() noexcept;
  // Leaves the group (a last commit from the revocation). With cooperative
  // rebalancing it first waits, up to two session timeouts, for a join in
  // progress (librdkafka before 2.3 asserts on closing before one).
  void close();

  bool everAssigned() const noexcept;
  // Every assigned partition has been read to its end (and some are assigned).
  bool atEnd() const noexcept;
  std::vector<PartitionState> partitions() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace pacer::ingest
