#include "produce.h"

#include <fmt/format.h>
#include <librdkafka/rdkafkacpp.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>

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

}  // namespace

ProduceResult produceMessages(const ProduceOptions& o) {
  Reports reports;
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

  ProduceResult result;
  std::int64_t reported = 0;  // deliveries already passed to on_delivered
  auto last_report = Clock::now();
  const auto report = [&](bool force) {
    if (!o.on_delivered || reports.delivered == reported) return;
    if (!force && Clock::now() - last_report < std::chrono::seconds(1)) return;
    const std::int64_t now_delivered = reports.delivered;
    last_report = Clock::now();
    o.on_delivered(now_delivered - reported);
    reported = now_delivered;
  };
  // Nothing acknowledged and every broker down: waiting for message.timeout.ms
  // would only delay the same answer.
  const auto hopeless = [&] { return reports.all_down && reports.delivered == 0; };

  const auto start = Clock::now();
  const std::int32_t partition = o.partition.value_or(RdKafka::Topic::PARTITION_UA);
  std::int64_t produced = 0;
  try {
    for (std::int64_t i = 0; i < o.count && !hopeless(); ++i) {
      if (o.rate) {
        const auto due =
            start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(produceDueS(i, *o.rate)));
        for (auto now = Clock::now(); now < due && !hopeless(); now = Clock::now())
          producer->poll(static_cast<int>(std::clamp<std::int64_t>(
              std::chrono::duration_cast<std::chrono::milliseconds>(due - now).count(), 0, 100)));
      }
      const std::string id = o.id_prefix + std::to_string(i);
      const std::string recipient = o.recipient_prefix.empty() ? "" : o.recipient_prefix + std::to_string(i);
      for (;;) {
        RdKafka::Headers* headers = RdKafka::Headers::create();
        headers->add("message-id", id);
        if (!recipient.empty()) headers->add("recipient", recipient);
        const RdKafka::ErrorCode e =
            producer->produce(o.topic, partition, RdKafka::Producer::RK_MSG_COPY, const_cast<char*>(o.payload.data()),
                              o.payload.size(), o.campaign.data(), o.campaign.size(), 0, headers, nullptr);
        if (e == RdKafka::ERR_NO_ERROR) break;
        delete headers;  // librdkafka keeps them only on success
        if (e != RdKafka::ERR__QUEUE_FULL) {
          // Refused locally (unknown partition, message too large): counted
          // as failed like a refused delivery.
          ++reports.failed;
          reports.all_transient = false;
          if (reports.first_error.empty()) reports.first_error = RdKafka::err2str(e);
          break;
        }
        producer->poll(10);
      }
      ++produced;
      producer->poll(0);
      report(false);
    }
    // Wait for every report; poll in slices so an unreachable cluster ends it early.
    while (producer->outq_len() > 0 && !hopeless()) {
      producer->poll(50);
      report(false);
    }
    if (hopeless()) {
      producer->purge(RdKafka::Producer::PURGE_QUEUE | RdKafka::Producer::PURGE_INFLIGHT);
      producer->flush(1000);
    }
    report(true);
  } catch (...) {
    producer->purge(RdKafka::Producer::PURGE_QUEUE | RdKafka::Producer::PURGE_INFLIGHT);
    producer->flush(1000);
    throw;
  }
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  result.delivered = reports.delivered;
  // Messages never handed to librdkafka (stopped early) count as failed.
  result.failed = reports.failed + (o.count - produced);
  result.unreachable = reports.all_down && reports.delivered == 0;
  result.transient = reports.all_transient;
  result.error = result.unreachable && !reports.broker_error.empty() ? reports.broker_error : reports.first_error;
  if (result.error.empty() && result.failed > 0) result.error = reports.broker_error;
  return result;
}

}  // namespace pacer::control
