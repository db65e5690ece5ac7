#include "pacer/events/outcome_drainer.h"

#include <fmt/format.h>
#include <librdkafka/rdkafkacpp.h>

#include <optional>

#include "pacer/error.h"
#include "pacer/ledger/pg_outbox.h"
#include "pacer/outcome_event.h"

namespace pacer::events {

using Clock = std::chrono::steady_clock;

// At a stop, how long the drainer goes on publishing what the last ledger
// writes added.
constexpr auto kStopDrainLimit = std::chrono::seconds(10);

// The producer and the outbox, with the batch between them. Delivery
// reports arrive in poll() on the draining thread, so `batch` needs no lock.
struct OutcomeDrainer::Impl final : public RdKafka::DeliveryReportCb {
  explicit Impl(const ledger::PgLedgerOptions& pg) : outbox(pg) {}

  void dr_cb(RdKafka::Message& m) override {
    const auto id = static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(m.msg_opaque()));
    const bool ok = m.err() == RdKafka::ERR_NO_ERROR;
    if (batch.report(id, ok) && !ok && last_error.empty()) last_error = RdKafka::err2str(m.err());
  }

  ledger::PgOutbox outbox;
  std::unique_ptr<RdKafka::Producer> producer;
  OutboxBatch batch;
  std::string last_error;  // the first failure of the current batch
};

OutcomeDrainer::OutcomeDrainer(OutcomeDrainerOptions options, logging::LoggerPtr log)
    : options_(std::move(options)), log_(std::move(log)) {
  if (options_.topic.empty()) throw InvalidError("outcome events: the topic is empty");
  if (options_.batch == 0) throw InvalidError("outcome events: the batch is 0");
  impl_ = std::make_unique<Impl>(options_.pg);
  std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
  std::string err;
  // Idempotent: a retry inside the producer never writes an event twice.
  std::map<std::string, std::string> props{{"bootstrap.servers", options_.brokers},
                                           {"enable.idempotence", "true"},
                                           {"acks", "all"},
                                           // A batch waits for its reports before the next: small
                                           // batching delays cut the lag (bench/RESULTS.md).
                                           {"linger.ms", "1"},
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

std::vector<std::int64_t> OutcomeDrainer::publish() {
  const std::vector<OutcomeEvent> events = impl_->outbox.next(options_.batch);
  if (events.empty()) return {};
  std::vector<std::int64_t> ids;
  ids.reserve(events.size());
  for (const OutcomeEvent& e : events) ids.push_back(e.id);
  impl_->batch.start(ids);
  impl_->last_error.clear();
  for (const OutcomeEvent& e : events) {
    std::string value = encodeOutcomeEvent(e);
    auto* opaque = reinterpret_cast<void*>(static_cast<std::uintptr_t>(e.id));
    RdKafka::ErrorCode code;
    while ((code = impl_->producer->produce(options_.topic, RdKafka::Topic::PARTITION_UA,
                                            RdKafka::Producer::RK_MSG_COPY, value.data(), value.size(),
                                            e.campaign.data(), e.campaign.size(), 0, opaque)) ==
           RdKafka::ERR__QUEUE_FULL)
      impl_->producer->poll(10);  // the local queue is full: let reports drain it
    if (code != RdKafka::ERR_NO_ERROR) {
      impl_->batch.report(e.id, false);
      if (impl_->last_error.empty()) impl_->last_error = RdKafka::err2str(code);
    }
  }
  // message.timeout.ms bounds every report; the margin covers the last poll.
  const auto deadline = Clock::now() + options_.ack_timeout + std::chrono::seconds(5);
  while (!impl_->batch.complete() && Clock::now() < deadline) impl_->producer->poll(5);
  const std::size_t failed = impl_->batch.failed() + impl_->batch.pending();
  if (failed > 0) {
    failed_ += failed;
    log_->warn("event=outcome_events_failed topic={} batch={} failed={} reason=\"{}\"", options_.topic,
               events.size(), failed, impl_->last_error.empty() ? "no delivery report in time" : impl_->last_error);
  }
  return impl_->batch.acknowledged();
}

void OutcomeDrainer::acknowledge(const std::vector<std::int64_t>& ids) {
  if (ids.empty()) return;
  impl_->outbox.remove(ids);
  published_ += ids.size();
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
    refreshDepth(true);
    log_->info("event=outcome_events_started topic={} worker={} batch={} left_from_before={}", options_.topic,
               options_.pg.outbox_worker, options_.batch, depth_.load());
  } catch (const LedgerRejectedError& e) {
    // No outbox table: every ledger write would fail the same way.
    throw InvalidError(fmt::format("outcome events: the outbox cannot be read ({}); the schema needs migration 11: "
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

void OutcomeDrainer::loop() {
  logging::LimitedLog limited(log_, std::chrono::seconds(10));
  std::optional<Clock::time_point> stop_by;
  for (;;) {
    std::chrono::milliseconds wait = options_.poll;
    bool more = false;
    try {
      const std::size_t n = drainOnce();
      refreshDepth(n == 0);
      more = n == options_.batch;  // a full batch: more may be waiting
    } catch (const Error& e) {
      ++errors_;
      limited.write(spdlog::level::warn, "outcome_events_store_failed",
                    fmt::format("event=outcome_events_store_failed reason=\"{}\"", e.what()),
                    std::chrono::time_point_cast<Nanos>(Clock::now()));
      wait = std::chrono::milliseconds(1000);
    }
    // Stopping: rounds go on while batches come full, for at most
    // kStopDrainLimit; what is left stays for the next start.
    if (stop_by && (!more || Clock::now() >= *stop_by)) break;
    if (more) wait = std::chrono::milliseconds(0);
    std::unique_lock<std::mutex> lock(wake_mu_);
    if (wait.count() > 0) wake_.wait_for(lock, wait, [this] { return stop_.load(); });
    if (stop_ && !stop_by) stop_by = Clock::now() + kStopDrainLimit;
  }
  try {
    refreshDepth(true);
  } catch (const Error&) {
  }
  log_->info("event=outcome_events_stopped published={} failed={} left={}", published_.load(), failed_.load(),
             depth_.load());
}

OutcomeDrainerStats OutcomeDrainer::stats() const {
  return OutcomeDrainerStats{published_.load(), failed_.load(), errors_.load(), depth_.load(), lag_seconds_.load()};
}

}  // namespace pacer::events
