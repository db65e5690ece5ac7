#include "produce.h"

#include <fmt/format.h>
#include <librdkafka/rdkafkacpp.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <thread>

#include "pacer/control/top.h"
#include "pacer/control/values.h"

namespace pacer::control {
namespace {

using Clock = std::chrono::steady_clock;

bool isTransient(RdKafka::ErrorCode e) {
  return e == RdKafka::ERR__MSG_TIMED_OUT || e == RdKafka::ERR__TRANSPORT || e == RdKafka::ERR__ALL_BROKERS_DOWN ||
         e == RdKafka::ERR__PURGE_QUEUE || e == RdKafka::ERR__PURGE_INFLIGHT || e == RdKafka::ERR__RESOLVE ||
         e == RdKafka::ERR__TIMED_OUT;
}

// Delivery reports and client errors, counted on the producing thread
// (librdkafka calls both from poll() and flush()).
class Reports : public RdKafka::DeliveryReportCb, public RdKafka::EventCb {
 public:
  void dr_cb(RdKafka::Message& m) override {
    if (m.err() == RdKafka::ERR_NO_ERROR) {
      ++delivered;
      return;
    }
    ++failed;
    if (!isTransient(m.err())) all_transient = false;
    if (first_error.empty()) first_error = m.errstr();
  }
  void event_cb(RdKafka::Event& e) override {
    if (e.type() != RdKafka::Event::EVENT_ERROR) return;
    if (e.err() == RdKafka::ERR__ALL_BROKERS_DOWN) all_down = true;
    // The broker-level reason ("Connect to ipv4#127.0.0.1:1 failed: Connection refused").
    if (e.err() == RdKafka::ERR__TRANSPORT || e.err() == RdKafka::ERR__RESOLVE || broker_error.empty())
      broker_error = e.str();
  }

  std::int64_t delivered = 0;
  std::int64_t failed = 0;
  bool all_transient = true;
  bool all_down = false;
  std::string first_error;
  std::string broker_error;
};

std::unique_ptr<RdKafka::Producer> makeProducer(const ProduceOptions& o, Reports& reports) {
  std::string err;
  std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
  const std::map<std::string, std::string> props{{"bootstrap.servers", o.brokers},
                                                 {"enable.idempotence", "true"},
                                                 {"acks", "all"},
                                                 {"linger.ms", "5"},
                                                 {"message.timeout.ms", std::to_string(o.timeout_ms)},
                                                 {"client.id", "pacerctl-produce"}};
  for (const auto& [k, v] : props)
    if (conf->set(k, v, err) != RdKafka::Conf::CONF_OK)
      throw InvalidValueError(fmt::format("librdkafka refused {}={}: {}", k, v, err));
  if (conf->set("dr_cb", static_cast<RdKafka::DeliveryReportCb*>(&reports), err) != RdKafka::Conf::CONF_OK ||
      conf->set("event_cb", static_cast<RdKafka::EventCb*>(&reports), err) != RdKafka::Conf::CONF_OK)
    throw InvalidValueError("librdkafka: " + err);
  std::unique_ptr<RdKafka::Producer> producer(RdKafka::Producer::create(conf.get(), err));
  if (!producer) throw InvalidValueError(fmt::format("--brokers '{}': librdkafka refused it: {}", o.brokers, err));
  return producer;
}

// One run: pacing, producing, passing deliveries on, and the result.
class Run {
 public:
  explicit Run(const ProduceOptions& o) : o_(o), producer_(makeProducer(o, reports_)) {}

  ProduceResult run() {
    start_ = Clock::now();
    try {
      for (std::int64_t i = 0; i < o_.count && !hopeless(); ++i) {
        if (o_.rate)
          waitUntil(start_ + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(produceDueS(i, *o_.rate))));
        produceOne(i);
        ++produced_;
        producer_->poll(0);
        report(false);
      }
      // Wait for every report; poll in slices so an unreachable cluster ends it early.
      while (producer_->outq_len() > 0 && !hopeless()) {
        producer_->poll(50);
        report(false);
      }
      if (hopeless()) purge();
      report(true);
    } catch (...) {
      purge();
      throw;
    }
    return result();
  }

 private:
  // Nothing acknowledged and every broker down: waiting for message.timeout.ms
  // would only delay the same answer.
  bool hopeless() const { return reports_.all_down && reports_.delivered == 0; }

  void purge() {
    producer_->purge(RdKafka::Producer::PURGE_QUEUE | RdKafka::Producer::PURGE_INFLIGHT);
    producer_->flush(1000);
  }

  // Above 1,000 messages/s the wait is under a millisecond: poll(0) in a loop
  // spun a core (a bench's producer took one of the pacerd's two), so the
  // rest of such a wait is slept. A late wake-up delays this message only:
  // due times count from the start, so the next ones catch up.
  void waitUntil(Clock::time_point due) {
    for (auto now = Clock::now(); now < due && !hopeless(); now = Clock::now()) {
      const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(due - now).count();
      if (ms == 0) {
        std::this_thread::sleep_until(due);
        return;
      }
      producer_->poll(static_cast<int>(std::min<std::int64_t>(ms, 100)));
    }
  }

  // Deliveries go to on_delivered at most once a second (and at the end).
  void report(bool force) {
    if (!o_.on_delivered || reports_.delivered == reported_) return;
    if (!force && Clock::now() - last_report_ < std::chrono::seconds(1)) return;
    const std::int64_t delivered = reports_.delivered;
    last_report_ = Clock::now();
    o_.on_delivered(delivered - reported_);
    reported_ = delivered;
  }

  void produceOne(std::int64_t i) {
    const std::int32_t partition = o_.partition.value_or(RdKafka::Topic::PARTITION_UA);
    const std::string id = o_.id_prefix + std::to_string(i);
    const std::string recipient = recipientOf(o_, i);
    const std::string_view tz = timeZoneOf(o_, i);
    for (;;) {
      RdKafka::Headers* headers = RdKafka::Headers::create();
      headers->add("message-id", id);
      if (!recipient.empty()) headers->add("recipient", recipient);
      if (!tz.empty()) headers->add("tz", tz.data(), tz.size());
      const RdKafka::ErrorCode e =
          producer_->produce(o_.topic, partition, RdKafka::Producer::RK_MSG_COPY, const_cast<char*>(o_.payload.data()),
                             o_.payload.size(), o_.campaign.data(), o_.campaign.size(), 0, headers, nullptr);
      if (e == RdKafka::ERR_NO_ERROR) return;
      delete headers;  // librdkafka keeps them only on success
      if (e != RdKafka::ERR__QUEUE_FULL) {
        // Refused locally (unknown partition, message too large): counted
        // as failed like a refused delivery.
        ++reports_.failed;
        reports_.all_transient = false;
        if (reports_.first_error.empty()) reports_.first_error = RdKafka::err2str(e);
        return;
      }
      producer_->poll(10);
    }
  }

  ProduceResult result() const {
    ProduceResult r;
    r.seconds = std::chrono::duration<double>(Clock::now() - start_).count();
    r.delivered = reports_.delivered;
    // Messages never handed to librdkafka (stopped early) count as failed.
    r.failed = reports_.failed + (o_.count - produced_);
    r.unreachable = hopeless();
    r.transient = reports_.all_transient;
    r.error = r.unreachable && !reports_.broker_error.empty() ? reports_.broker_error : reports_.first_error;
    if (r.error.empty() && r.failed > 0) r.error = reports_.broker_error;
    return r;
  }

  const ProduceOptions& o_;
  Reports reports_;  // before producer_: the producer's callbacks point at it
  std::unique_ptr<RdKafka::Producer> producer_;
  Clock::time_point start_;
  Clock::time_point last_report_ = Clock::now();
  std::int64_t reported_ = 0;  // deliveries already passed to on_delivered
  std::int64_t produced_ = 0;
};

}  // namespace

std::string recipientOf(const ProduceOptions& o, std::int64_t index) {
  if (o.recipient_prefix.empty()) return "";
  const std::int64_t n = o.recipients && *o.recipients > 0 ? index % *o.recipients : index;
  return o.recipient_prefix + std::to_string(n);
}

std::string_view timeZoneOf(const ProduceOptions& o, std::int64_t index) noexcept {
  if (o.time_zones.empty() || index < 0) return {};
  return o.time_zones[static_cast<std::size_t>(index) % o.time_zones.size()];
}

ProduceResult produceMessages(const ProduceOptions& o) { return Run(o).run(); }

}  // namespace pacer::control
