#include "pacer/sinks/routing_sink.h"
#include "pacer/error.h"

#include <span>
#include <stdexcept>
#include <utility>
#include <vector>

namespace pacer::sink {
namespace {

class RoutingSink final : public SinkInterface {
 public:
  RoutingSink(SinkInterfacePtr fallback, std::map<std::string, SinkInterfacePtr, std::less<>> by_provider,
              ProviderOfCampaign provider_of)
      : fallback_(std::move(fallback)), by_provider_(std::move(by_provider)), provider_of_(std::move(provider_of)) {
    if (!fallback_) throw InvalidError("routing sink: no default sink");
    if (!provider_of_) throw InvalidError("routing sink: no campaign-to-provider lookup");
    all_.push_back(fallback_.get());
    for (auto& [id, s] : by_provider_) {
      if (!s) throw InvalidError("routing sink: no sink for provider " + id);
      all_.push_back(s.get());
    }
  }

  bool submit(const Message& message, std::uint64_t ticket) override { return route(message).submit(message, ticket); }

  void poll(std::vector<SendResult>& out) override {
    for (SinkInterface* s : all_) s->poll(out);
  }

  void pollReceipts(std::vector<DeliveryReceipt>& out) override {
    for (SinkInterface* s : all_) s->pollReceipts(out);
  }

  // Every sink sees every receipt: each answers only its own handles (they
  // are unique in the process), so nothing has to remember which sink a
  // receipt came from.
  void receiptsRecorded(std::span<const DeliveryReceipt> receipts) override {
    for (SinkInterface* s : all_) s->receiptsRecorded(receipts);
  }

  std::size_t inFlight() const override {
    std::size_t n = 0;
    for (const SinkInterface* s : all_) n += s->inFlight();
    return n;
  }

  std::size_t maxInFlight() const override {
    std::size_t n = 0;
    for (const SinkInterface* s : all_) n += s->maxInFlight();
    return n;
  }

  // The wait is shared among the sinks with something in flight (each gets
  // its part in turn); with none, the default sink's wait as before.
  void wait(Nanos max) override {
    std::size_t busy = 0;
    for (const SinkInterface* s : all_) busy += s->inFlight() > 0 ? 1 : 0;
    if (busy == 0) {
      fallback_->wait(max);
      return;
    }
    const Nanos part = max / static_cast<Nanos::rep>(busy);
    for (SinkInterface* s : all_)
      if (s->inFlight() > 0) s->wait(part);
  }

 private:
  SinkInterface& route(const Message& m) {
    if (by_provider_.empty()) return *fallback_;
    const std::string_view provider = m.provider.empty() ? provider_of_(m.campaign) : std::string_view(m.provider);
    if (provider.empty()) return *fallback_;
    auto it = by_provider_.find(provider);
    return it == by_provider_.end() ? *fallback_ : *it->second;
  }

  SinkInterfacePtr fallback_;
  std::map<std::string, SinkInterfacePtr, std::less<>> by_provider_;
  ProviderOfCampaign provider_of_;
  std::vector<SinkInterface*> all_;  // fallback first
};

}  // namespace

SinkInterfacePtr makeRoutingSink(SinkInterfacePtr fallback,
                                 std::map<std::string, SinkInterfacePtr, std::less<>> by_provider,
                                 ProviderOfCampaign provider_of) {
  return std::make_unique<RoutingSink>(std::move(fallback), std::move(by_provider), std::move(provider_of));
}

}  // namespace pacer::sink
