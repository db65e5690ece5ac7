// libFuzzer target for the I/O-free HTTP/2 client session (push/h2_client.h):
// the input is a script of calls (submit, server frames built from the input
// with a valid frame header, raw server bytes, send, time passing, cancel,
// shutdown, a lost connection). Whatever the server sends:
// - every request the session took ends exactly once, as an answer or a
//   failure, and nothing ends that it never took: after connectionLost()
//   nothing is open, queued or pending;
// - no more streams open than our own cap, no answer body above its bound;
// - a dead session or one going away takes no new request.
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "fuzz_input.h"
#include "pacer/push/h2_client.h"

namespace {

using pacer::push::H2Answer;
using pacer::push::H2ClientOptions;
using pacer::push::H2ClientSession;
using pacer::push::H2Failure;
using pacer::push::H2Request;

// A frame as the server would write it: 9-byte header, then the payload.
std::string frame(std::uint8_t type, std::uint8_t flags, std::uint32_t stream_id, const std::string& payload) {
  std::string f;
  const std::size_t n = payload.size();
  f.push_back(static_cast<char>((n >> 16) & 0xff));
  f.push_back(static_cast<char>((n >> 8) & 0xff));
  f.push_back(static_cast<char>(n & 0xff));
  f.push_back(static_cast<char>(type));
  f.push_back(static_cast<char>(flags));
  const std::uint32_t id = stream_id & 0x7fffffffu;  // the reserved bit clear
  for (int shift = 24; shift >= 0; shift -= 8) f.push_back(static_cast<char>((id >> shift) & 0xff));
  return f + payload;
}

class Script {
 public:
  explicit Script(pacer::fuzz::Input& in) : in_(in), options_(optionsFrom(in)), session_(options_, now_) {}

  void run() {
    for (int step = 0; step < 256 && !in_.empty(); ++step) {
      call(in_.byte() % 9);
      collect();
      if (session_.openStreams() > options_.max_streams) std::abort();
    }
    session_.connectionLost("end of input");
    collect();
    if (session_.openStreams() != 0 || session_.queued() != 0 || !session_.pendingTags().empty()) std::abort();
    for (const auto& [tag, ends] : ends_)
      if (ends != 1) std::abort();  // each request taken ends exactly once
  }

 private:
  static H2ClientOptions optionsFrom(pacer::fuzz::Input& in) {
    H2ClientOptions o;
    o.authority = "127.0.0.1:443";
    o.max_streams = 1 + in.byte() % 8;
    o.max_body_bytes = 1 + in.byte() * 4;
    o.ping_interval = std::chrono::milliseconds(100);
    o.ping_timeout = std::chrono::milliseconds(50);
    return o;
  }

  void call(std::uint8_t op) {
    switch (op) {
      case 0: submit(); break;
      case 1: {  // one frame from the server, of any type, flags and payload
        const std::uint8_t type = in_.byte() % 11, flags = in_.byte(), sid = in_.byte();
        const std::uint32_t stream_id = sid == 0 ? 0 : 2u * (sid % 16) + 1;  // ours are odd
        session_.receive(frame(type, flags, stream_id, in_.text()), now_);
        break;
      }
      case 2: session_.receive(in_.text(), now_); break;
      case 3: {
        std::string out;
        session_.send(out, now_);
        break;
      }
      case 4: now_ += std::chrono::milliseconds(in_.number(2)); break;
      case 5: session_.cancel(in_.byte() % (next_tag_ + 1), "fuzz"); break;
      case 6: session_.connectionLost("fuzz"); break;
      case 7: session_.shutdown(); break;
      default: break;  // collect() runs after every call
    }
  }

  void submit() {
    H2Request r;
    r.tag = next_tag_++;
    r.path = "/" + in_.text(32);
    r.body = in_.text(64);
    if (in_.byte() & 1) r.headers.emplace_back("apns-expiration", in_.text(16));
    const bool closed = session_.dead() || session_.goingAway();
    if (!session_.submit(std::move(r))) return;
    if (closed) std::abort();  // taken by a session that can take nothing
    ends_[next_tag_ - 1] = 0;
  }

  void collect() {
    answers_.clear();
    failures_.clear();
    session_.takeAnswers(answers_);
    session_.takeFailures(failures_);
    for (const H2Answer& a : answers_) {
      if (a.body.size() > options_.max_body_bytes) std::abort();
      ended(a.tag);
    }
    for (const H2Failure& f : failures_) ended(f.tag);
  }

  void ended(std::uint64_t tag) {
    const auto it = ends_.find(tag);
    if (it == ends_.end()) std::abort();  // an outcome for a request never taken
    ++it->second;
  }

  pacer::fuzz::Input& in_;
  pacer::MonoTime now_ = pacer::monoAt(std::chrono::seconds(1));
  H2ClientOptions options_;
  H2ClientSession session_;
  std::uint64_t next_tag_ = 1;
  std::map<std::uint64_t, int> ends_;  // tag -> outcomes seen
  std::vector<H2Answer> answers_;
  std::vector<H2Failure> failures_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  pacer::fuzz::Input in(data, size);
  Script(in).run();
  return 0;
}
