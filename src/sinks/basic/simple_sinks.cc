// The null and stdout sinks. Both finish a message as soon as it is
// submitted; poll() reports it.
#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include "pacer/sink.h"

namespace pacer {
namespace {

class QueueingSink : public SinkInterface {
 public:
  explicit QueueingSink(std::size_t max_in_flight) : max_(max_in_flight) {}
  void poll(std::vector<SendResult>& out) override {
    out.insert(out.end(), std::make_move_iterator(done_.begin()), std::make_move_iterator(done_.end()));
    done_.clear();
  }
  std::size_t inFlight() const override { return done_.size(); }
  std::size_t maxInFlight() const override { return max_; }

 protected:
  bool full() const { return done_.size() >= max_; }
  void finish(SendResult r) { done_.push_back(std::move(r)); }

 private:
  std::size_t max_;
  std::vector<SendResult> done_;
};

SendResult resultOf(std::uint64_t ticket, SendOutcome outcome, std::string reason) {
  SendResult r;
  r.ticket = ticket;
  r.outcome = outcome;
  r.reason = std::move(reason);
  return r;
}

class NullSink final : public QueueingSink {
 public:
  using QueueingSink::QueueingSink;
  bool submit(const Message&, std::uint64_t ticket) override {
    if (full()) return false;
    finish(resultOf(ticket, SendOutcome::kDelivered, {}));
    return true;
  }
};

class StdoutSink final : public QueueingSink {
 public:
  StdoutSink(std::FILE* out, std::size_t max_in_flight) : QueueingSink(max_in_flight), out_(out) {}
  bool submit(const Message& m, std::uint64_t ticket) override {
    if (full()) return false;
    const std::string line = fmt::format("{} {} {} {}\n", m.campaign, m.id, m.recipient.empty() ? "-" : m.recipient,
                                         escapeForLine(m.payload));
    if (std::fwrite(line.data(), 1, line.size(), out_) != line.size() || std::fflush(out_) != 0) {
      finish(
          resultOf(ticket, SendOutcome::kFault, fmt::format("writing to the output failed: {}", std::strerror(errno))));
    } else {
      finish(resultOf(ticket, SendOutcome::kDelivered, {}));
    }
    return true;
  }

 private:
  std::FILE* out_;
};

}  // namespace

SinkInterfacePtr makeNullSink(std::size_t max_in_flight) { return std::make_unique<NullSink>(max_in_flight); }

SinkInterfacePtr makeStdoutSink(std::FILE* out, std::size_t max_in_flight) {
  return std::make_unique<StdoutSink>(out, max_in_flight);
}

}  // namespace pacer
