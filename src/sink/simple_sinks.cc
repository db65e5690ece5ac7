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

class NullSink final : public QueueingSink {
 public:
  using QueueingSink::QueueingSink;
  bool submit(const Message&, std::uint64_t ticket) override {
    if (full()) return false;
    finish(SendResult{ticket, SendOutcome::kDelivered, Nanos{0}, 0, {}});
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
      finish(SendResult{ticket, SendOutcome::kRetry, Nanos{0}, 0,
                        fmt::format("writing to the output failed: {}", std::strerror(errno))});
    } else {
      finish(SendResult{ticket, SendOutcome::kDelivered, Nanos{0}, 0, {}});
    }
    return true;
  }

 private:
  std::FILE* out_;
};

// Length of the valid UTF-8 sequence starting at s[i] (>= 2 bytes), or 0.
std::size_t utf8Sequence(const std::string& s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  std::size_t n = 0;
  if (c >= 0xc2 && c <= 0xdf)
    n = 2;
  else if ((c & 0xf0) == 0xe0)
    n = 3;
  else if (c >= 0xf0 && c <= 0xf4)
    n = 4;
  if (n == 0 || i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return 0;
  return n;
}

}  // namespace

std::string escapeForLine(const std::string& bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (std::size_t i = 0; i < bytes.size();) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else if (const std::size_t n = c >= 0x80 ? utf8Sequence(bytes, i) : 0; n > 0) {
      out.append(bytes, i, n);
      i += n;
      continue;
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
    ++i;
  }
  return out;
}

SinkInterfacePtr makeNullSink(std::size_t max_in_flight) { return std::make_unique<NullSink>(max_in_flight); }

SinkInterfacePtr makeStdoutSink(std::FILE* out, std::size_t max_in_flight) {
  return std::make_unique<StdoutSink>(out, max_in_flight);
}

}  // namespace pacer
