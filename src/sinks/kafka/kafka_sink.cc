#include "pacer/sinks/kafka_sink.h"
#include "pacer/error.h"

#include <librdkafka/rdkafkacpp.h>

#include <memory>
#include <stdexcept>

namespace pacer::sink {
namespace {

class KafkaSink final : public SinkInterface, public RdKafka::DeliveryReportCb {
 public:
  explicit KafkaSink(const KafkaSinkOptions& o) : topic_(o.topic), max_in_flight_(std::max<std::size_t>(1, o.max_in_flight)) {
    if (o.topic.empty()) throw InvalidError("kafka sink: the outbound topic is empty");
    std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
    std::string err;
    std::map<std::string, std::string> props{{"bootstrap.servers", o.brokers},
                                             {"enable.idempotence", "true"},
                                             {"acks", "all"},
                                             {"linger.ms", "5"}};
    for (const auto& [k, v] : o.properties) props[k] = v;
    for (const auto& [k, v] : props)
      if (conf->set(k, v, err) != RdKafka::Conf::CONF_OK)
        throw InvalidError("kafka sink: " + k + "=" + v + ": " + err);
    if (conf->set("dr_cb", static_cast<RdKafka::DeliveryReportCb*>(this), err) != RdKafka::Conf::CONF_OK)
      throw InvalidError("kafka sink: " + err);
    producer_.reset(RdKafka::Producer::create(conf.get(), err));
    if (!producer_) throw InvalidError("kafka sink: " + err);
  }

  ~KafkaSink() override {
    // Whatever is still unacknowledged was never reported delivered, so its
    // offset was never committed: it is sent again after a restart.
    if (producer_) producer_->flush(2000);
  }

  bool submit(const Message& m, std::uint64_t ticket) override {
    if (in_flight_ >= max_in_flight_) return false;
    RdKafka::Headers* headers = RdKafka::Headers::create();
    headers->add("message-id", m.id);
    if (!m.recipient.empty()) headers->add("recipient", m.recipient);
    auto* opaque = reinterpret_cast<void*>(static_cast<std::uintptr_t>(ticket));
    const RdKafka::ErrorCode e = producer_->produce(
        topic_, RdKafka::Topic::PARTITION_UA, RdKafka::Producer::RK_MSG_COPY, const_cast<char*>(m.payload.data()),
        m.payload.size(), m.campaign.data(), m.campaign.size(), 0, headers, opaque);
    if (e != RdKafka::ERR_NO_ERROR) {
      delete headers;  // librdkafka keeps them only on success
      // Not taken: report it as a retry so the message comes back.
      SendResult r;
      r.ticket = ticket;
      r.outcome = SendOutcome::kFault;
      r.reason = "kafka produce: " + RdKafka::err2str(e);
      ready_.push_back(std::move(r));
      return true;
    }
    ++in_flight_;
    return true;
  }

  void poll(std::vector<SendResult>& out) override {
    producer_->poll(0);
    for (SendResult& r : ready_) out.push_back(std::move(r));
    ready_.clear();
  }

  std::size_t inFlight() const override { return in_flight_ + ready_.size(); }
  std::size_t maxInFlight() const override { return max_in_flight_; }
  void wait(Nanos max) override {
    producer_->poll(static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(max).count()));
  }

  void dr_cb(RdKafka::Message& m) override {
    --in_flight_;
    SendResult r;
    r.ticket = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(m.msg_opaque()));
    if (m.err() == RdKafka::ERR_NO_ERROR) {
      r.outcome = SendOutcome::kDelivered;
    } else {
      r.outcome = SendOutcome::kFault;
      r.reason = "kafka delivery: " + m.errstr();
    }
    ready_.push_back(std::move(r));
  }

 private:
  std::string topic_;
  std::size_t max_in_flight_;
  std::size_t in_flight_ = 0;
  std::vector<SendResult> ready_;
  std::unique_ptr<RdKafka::Producer> producer_;
};

}  // namespace

SinkInterfacePtr makeKafkaSink(const KafkaSinkOptions& options) { return std::make_unique<KafkaSink>(options); }

}  // namespace pacer::sink
