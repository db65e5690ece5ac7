#include "pacer/events/outcome_drainer.h"

#include <fmt/format.h>
#include <librdkafka/rdkafkacpp.h>

#include <algorithm>
#include <optional>
#include <set>
#include <thread>

#include "pacer/error.h"
#include "pacer/ledger/pg_outbox.h"
#include "pacer/outbox_window.h"
#include "pacer/outcome_event.h"

namespace pacer::events {

using Clock = std::chrono::steady_clock;

// At a stop, how long the drainer goes on publishing what the last ledger
// writes added.
constexpr auto kStopDrainLimit = std::chrono::seconds(10);

// After a failed delivery, the running drainer reads the failed row again
// this much later (a broker that refuses every event is not hammered).
constexpr auto kRetryAfterFailure = std::chrono::seconds(1);

// At start, how long a worker id held by another session may still be the
// session of a pacerd that has just ended (its lock goes when the server
// has ended that session).
constexpr auto kBusyWait = std::chrono::seconds(3);

// The producer and the outbox, with the bookkeeping between them: `batch`
// for the rounds by hand (publish()), `window` for the running drainer's
// pipeline. Delivery reports arrive in poll() on the draining thread, so
// neither needs a lock; each ignores ids it does not hold.
struct OutcomeDrainer::Impl final : public RdKafka::DeliveryReportCb {
  Impl(const ledger::PgLedgerOptions& pg, std::size_t window_limit, std::atomic<std::uint64_t>& failed_count)
      : outbox(pg), window(window_limit), failed(failed_count) {}

  void dr_cb(RdKafka::Message& m) override {
    const auto id = static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(m.msg_opaque()));
    report(id, m.err());
  }

  void report(std::int64_t id, RdKafka::ErrorCode code) {
    const bool ok = code == RdKafka::ERR_NO_ERROR;
    const bool known = batch.report(id, ok);
    if (!(window.report(id, ok) || known) || ok) return;
    ++failed;
    if (last_error.empty()) last_error = RdKafka::err2str(code);
  }

  ledger::PgOutbox outbox;
  std::unique_ptr<RdKafka::Producer> producer;
  OutboxBatch batch;
  std::vector<std::int64_t> batch_ids;  // the round by hand's ids, ascending
  OutboxWindow window;
  std::atomic<std::uint64_t>& failed;
  std::string last_error;  // the first failure not yet logged
};

OutcomeDrainer::OutcomeDrainer(OutcomeDrainerOptions options, logging::LoggerPtr log)
    : options_(std::move(options)), log_(std::move(log)) {
  if (options_.topic.empty()) throw InvalidError("outcome events: the topic is empty");
  if (options_.batch == 0) throw InvalidError("outcome events: the batch is 0");
  if (options_.in_flight == 0) throw InvalidError("outcome events: in_flight is 0");
  impl_ = std::make_unique<Impl>(options_.pg, options_.in_flight * options_.batch, failed_);
  std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
  std::string err;
  // Idempotent: a retry inside the producer never writes an event twice.
  std::map<std::string, std::string> props{{"bootstrap.servers", options_.brokers},
                                           {"enable.idempotence", "true"},
                                           {"acks", "all"},
                                           // The pipelined drainer does not wait for one batch
                                           // before the next, so a longer linger costs little lag
                                           // and makes fewer, larger produce requests: in an A/B
                                           // it cut the event path's cost (bench/RESULTS.md).
                                           {"linger.ms", "50"},
                                           {"socket.nagle.disable", "true"},
                                           {"message.timeout.ms", std::to_string(options_.ack_timeout.count())}};
  for (const auto& [k, v] : options_.kafka) props[k] = v;
  for (const auto& [k, v] : props)
    if (conf->set(k, v, err) != RdKafka::Conf::CONF_OK)
      throw InvalidError(fmt::format("outcome events: {}={}: {}", k, v, err));
  if (conf->set("dr_cb", static_cast<RdKafka::DeliveryReportCb*>(impl_.get()), err) != RdKafka::Conf::CONF_OK)
    throw InvalidError("outcome events: " + err);
  impl_->producer.reset(RdKafka::Producer::create(conf.get(), err));
  if (!impl_->producer) throw InvalidError("outcome events: " + err);
}

OutcomeDrainer::~OutcomeDrainer() {
  stop();
  // What was produced and not deleted is published again by the next start.
  if (impl_ && impl_->producer) impl_->producer->flush(1000);
}

void OutcomeDrainer::produceEvents(const std::vector<OutcomeEvent>& events) {
  for (const OutcomeEvent& e : events) {
    std::string value = encodeOutcomeEvent(e);
    auto* opaque = reinterpret_cast<void*>(static_cast<std::uintptr_t>(e.id));
    RdKafka::ErrorCode code;
    while ((code = impl_->producer->produce(options_.topic, RdKafka::Topic::PARTITION_UA,
                                            RdKafka::Producer::RK_MSG_COPY, value.data(), value.size(),
                                            e.campaign.data(), e.campaign.size(), 0, opaque)) ==
           RdKafka::ERR__QUEUE_FULL)
      impl_->producer->poll(10);  // the local queue is full: let reports drain it
    if (code != RdKafka::ERR_NO_ERROR) impl_->report(e.id, code);
  }
}

std::vector<std::int64_t> OutcomeDrainer::publish() {
  const std::vector<OutcomeEvent> events = impl_->outbox.next(options_.batch);
  if (events.empty()) return {};
  std::vector<std::int64_t> ids;
  ids.reserve(events.size());
  for (const OutcomeEvent& e : events) ids.push_back(e.id);
  impl_->batch.start(ids);
  impl_->batch_ids = ids;
  impl_->last_error.clear();
  produceEvents(events);
  // message.timeout.ms bounds every report; the margin covers the last poll.
  const auto deadline = Clock::now() + options_.ack_timeout + std::chrono::seconds(5);
  while (!impl_->batch.complete() && Clock::now() < deadline) impl_->producer->poll(5);
  failed_ += impl_->batch.pending();  // no report in time
  const std::size_t failed = impl_->batch.failed() + impl_->batch.pending();
  if (failed > 0) {
    log_->warn("event=outcome_events_failed topic={} batch={} failed={} reason=\"{}\"", options_.topic,
               events.size(), failed, impl_->last_error.empty() ? "no delivery report in time" : impl_->last_error);
    impl_->last_error.clear();
  }
  return impl_->batch.acknowledged();
}

void OutcomeDrainer::acknowledge(const std::vector<std::int64_t>& ids) {
  if (ids.empty() || impl_->batch_ids.empty()) return;
  // The cursor covers the batch up to its first row without an ack; acked
  // rows above that go by id, so the next round repeats none of them.
  const std::set<std::int64_t> acked(ids.begin(), ids.end());
  std::int64_t cursor = impl_->batch_ids.front() - 1;
  for (std::int64_t id : impl_->batch_ids) {
    if (!acked.count(id)) break;
    cursor = id;
  }
  std::vector<std::int64_t> above;
  for (std::int64_t id : acked)
    if (id > cursor) above.push_back(id);
  impl_->outbox.store(cursor, above);
  published_ += acked.size();
}

std::size_t OutcomeDrainer::drainOnce() {
  const std::vector<std::int64_t> ids = publish();
  acknowledge(ids);
  return ids.size();
}

void OutcomeDrainer::refreshDepth(bool force) {
  const auto now = Clock::now();
  if (!force && now < next_depth_) return;
  next_depth_ = now + std::chrono::seconds(1);
  const ledger::OutboxDepth d = impl_->outbox.depth();
  depth_ = d.rows;
  lag_seconds_ = d.oldest_age_seconds;
}

void OutcomeDrainer::start() {
  if (thread_.joinable()) return;
  stop_ = false;
  try {
    // A pacerd of this id that ended a moment ago (SIGKILL, a crash) still holds the lock until
    // the server has ended its session: wait that long before calling the id taken.
    for (auto give_up = Clock::now() + kBusyWait;;) {
      try {
        refreshDepth(true);
        break;
      } catch (const ledger::OutboxWorkerBusyError&) {
        if (Clock::now() >= give_up) throw;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
    log_->info("event=outcome_events_started topic={} worker={} batch={} left_from_before={}", options_.topic,
               options_.pg.outbox_worker, options_.batch, depth_.load());
  } catch (const ledger::OutboxWorkerBusyError& e) {
    throw InvalidError(fmt::format("outcome events: {}", e.what()));
  } catch (const LedgerRejectedError& e) {
    // No outbox (or no cursor) table: an older schema.
    throw InvalidError(fmt::format("outcome events: the outbox cannot be read ({}); the schema needs migration 15: "
                                   "run pacerd migrate",
                                   e.what()));
  } catch (const Error& e) {
    log_->warn("event=outcome_events_store_failed reason=\"{}\"", e.what());
  }
  thread_ = std::thread([this] { loop(); });
}

void OutcomeDrainer::stop() {
  {
    std::lock_guard<std::mutex> lock(wake_mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void OutcomeDrainer::resume() {
  // A worker that died a moment ago may still have a ledger commit on its
  // way: it lands before the first read, so the cursor never passes it.
  if (!impl_->outbox.awaitEarlierWriters(kStopDrainLimit))
    log_->warn("event=outcome_events_writers_slow reason=\"transactions older than the drainer still run after {} s; "
               "reading anyway\"",
               std::chrono::duration_cast<std::chrono::seconds>(kStopDrainLimit).count());
  impl_->window.restart(impl_->outbox.storedCursor());
  resumed_ = true;
}

bool OutcomeDrainer::storeCursor(bool settle) {
  OutboxWindow& w = impl_->window;
  const std::int64_t cursor = w.cursor();
  // After a failure, with nothing in flight, the acked rows above the
  // failed one go by id, so the rewind repeats none of them.
  const std::vector<std::int64_t> gone = settle ? w.stranded() : std::vector<std::int64_t>{};
  if (cursor <= w.storedCursor() && gone.empty()) return false;
  impl_->outbox.store(cursor, gone);
  published_ += w.stored(cursor) + w.removed(gone);
  return true;
}

bool OutcomeDrainer::pump(Clock::time_point now) {
  OutboxWindow& w = impl_->window;
  impl_->producer->poll(0);  // the reports that arrived
  if (now < store_retry_at_) return false;  // PostgreSQL failed a moment ago
  if (!resumed_) resume();
  if (w.failed() && w.inFlight() == 0) {
    if (!w.settled()) return storeCursor(true);
    if (now < retry_at_) return false;
    w.rewind();  // the failed rows are the first above the cursor: read them again
  }
  if (w.failed() && retry_at_ <= now) retry_at_ = now + kRetryAfterFailure;
  // Room counts the acknowledged rows the stored cursor does not cover yet:
  // at most in_flight batches are ever produced and not covered (what a
  // crash repeats).
  const bool read = now >= next_read_ && w.mayRead(options_.batch);
  const std::int64_t cursor = w.cursor();
  const bool move = cursor > w.storedCursor();
  if (!read) {
    // The cursor rides on the next read, unless nothing else is coming.
    if (!move || (w.inFlight() > 0 && w.storable() < options_.batch)) return false;
    return storeCursor(false);
  }
  const std::vector<OutcomeEvent> events =
      impl_->outbox.next(w.after(), options_.batch, move ? std::optional<std::int64_t>(cursor) : std::nullopt);
  if (move) published_ += w.stored(cursor);
  caught_up_ = events.size() < options_.batch;
  if (caught_up_) next_read_ = now + options_.poll;
  std::vector<std::int64_t> ids;
  ids.reserve(events.size());
  for (const OutcomeEvent& e : events) ids.push_back(e.id);
  w.produced(ids);
  produceEvents(events);
  return !ids.empty() || move;
}

void OutcomeDrainer::prune(Clock::time_point now, bool force) {
  const std::int64_t stored = impl_->window.storedCursor();
  if (stored <= pruned_up_to_ || (!force && now < next_prune_)) return;
  next_prune_ = now + options_.prune_interval;
  impl_->outbox.prune();
  pruned_up_to_ = stored;
}

void OutcomeDrainer::finish() {
  // What is in flight gets its reports (message.timeout.ms bounds them) and
  // the cursor is stored; rows without an ack stay for the next start.
  const auto deadline = Clock::now() + options_.ack_timeout + std::chrono::seconds(5);
  while (impl_->window.inFlight() > 0 && Clock::now() < deadline) impl_->producer->poll(5);
  try {
    if (resumed_) {
      storeCursor(impl_->window.inFlight() == 0);
      prune(Clock::now(), true);
    }
    refreshDepth(true);
  } catch (const Error& e) {
    log_->warn("event=outcome_events_store_failed reason=\"{}\"", e.what());
  }
}

void OutcomeDrainer::loop() {
  logging::LimitedLog limited(log_, std::chrono::seconds(10));
  std::optional<Clock::time_point> stop_by;
  for (;;) {
    const auto now = Clock::now();
    bool busy = false;
    try {
      busy = pump(now);
      if (resumed_) prune(now, false);
      refreshDepth(false);
    } catch (const ledger::OutboxWorkerBusyError& e) {
      // Another running pacerd took the id while this one was away from PostgreSQL: nothing is
      // published (its rows stay), and an operator must give one of them another id.
      ++errors_;
      limited.write(spdlog::level::err, "outcome_events_worker_id_busy",
                    fmt::format("event=outcome_events_worker_id_busy reason=\"{}\"", e.what()),
                    std::chrono::time_point_cast<Nanos>(now));
      store_retry_at_ = now + std::chrono::seconds(1);
    } catch (const Error& e) {
      ++errors_;
      limited.write(spdlog::level::warn, "outcome_events_store_failed",
                    fmt::format("event=outcome_events_store_failed reason=\"{}\"", e.what()),
                    std::chrono::time_point_cast<Nanos>(now));
      store_retry_at_ = now + std::chrono::seconds(1);
    }
    if (!impl_->last_error.empty()) {
      limited.write(spdlog::level::warn, "outcome_events_failed",
                    fmt::format("event=outcome_events_failed topic={} failed_total={} reason=\"{}\"", options_.topic,
                                failed_.load(), impl_->last_error),
                    std::chrono::time_point_cast<Nanos>(now));
      impl_->last_error.clear();
    }
    // Stopping: the loop goes on until a read comes short and what it read
    // has its reports and its deletes, for at most kStopDrainLimit; what is
    // left (failed rows too) stays for the next start.
    if (stop_ && !stop_by) {
      stop_by = now + kStopDrainLimit;
      next_read_ = {};  // read once more at once: the last ledger writes are in
      continue;
    }
    const bool drained = caught_up_ && impl_->window.settled();
    if (stop_by && (drained || now >= *stop_by)) break;
    if (busy) continue;
    if (impl_->window.inFlight() > 0) {
      impl_->producer->poll(5);  // a report wakes it at once
    } else {
      const auto until =
          std::max({next_read_, store_retry_at_, impl_->window.failed() ? retry_at_ : next_read_});
      std::unique_lock<std::mutex> lock(wake_mu_);
      if (until > now) wake_.wait_until(lock, until, [&] { return stop_.load() && !stop_by; });
    }
  }
  finish();
  log_->info("event=outcome_events_stopped published={} failed={} left={}", published_.load(), failed_.load(),
             depth_.load());
}

OutcomeDrainerStats OutcomeDrainer::stats() const {
  return OutcomeDrainerStats{published_.load(), failed_.load(), errors_.load(), depth_.load(), lag_seconds_.load()};
}

}  // namespace pacer::events
