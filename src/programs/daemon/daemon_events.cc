// pacerd's outcome events: the outbox drainer built from events.* settings,
// and the HTTP callbacks' worker from callbacks.*.
#include <unistd.h>

#include <algorithm>

#include "daemon_parts.h"

namespace pacer::worker {

std::string eventsWorkerId(const DaemonOptions& o) {
  if (!o.events_worker_id.empty()) return o.events_worker_id;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0')
    throw DaemonConfigError("events.worker_id: empty and the host name is unknown; set events.worker_id");
  return host;
}

std::unique_ptr<events::OutcomeDrainer> makeEvents(const DaemonOptions& o, const ledger::PgLedgerOptions& pg,
                                                   const logging::LoggerPtr& log) {
  if (o.events_topic.empty()) return nullptr;
  events::OutcomeDrainerOptions eo;
  eo.brokers = o.events_brokers.empty() ? o.brokers : o.events_brokers;
  eo.topic = o.events_topic;
  eo.pg = pg;
  eo.batch = o.events_batch;
  eo.in_flight = o.events_in_flight;
  eo.poll = o.events_poll;
  eo.prune_interval = o.events_prune_interval;
  eo.kafka = o.events_kafka;
  try {
    auto drainer = std::make_unique<events::OutcomeDrainer>(std::move(eo), log);
    drainer->start();
    return drainer;
  } catch (const InvalidError& e) {
    throw DaemonConfigError(e.what());
  }
}

std::unique_ptr<events::CallbackWorker> makeCallbacks(const DaemonOptions& o, const ledger::PgLedgerOptions& pg,
                                                      const logging::LoggerPtr& log) {
  if (!o.callbacks) return nullptr;
  events::CallbackWorkerOptions co;
  co.pg = pg;
  co.queue = o.callbacks_queue;
  co.concurrency = o.callbacks_concurrency;
  co.max_attempts = o.callbacks_max_attempts;
  co.timeout = o.callbacks_timeout;
  co.first_backoff = o.callbacks_backoff;
  co.max_backoff = std::max(o.callbacks_backoff, o.callbacks_max_backoff);
  try {
    auto worker = std::make_unique<events::CallbackWorker>(std::move(co), log);
    worker->start();
    return worker;
  } catch (const InvalidError& e) {
    throw DaemonConfigError(e.what());
  }
}

}  // namespace pacer::worker
