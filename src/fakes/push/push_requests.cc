// What the server does with a complete request: /_report, or the handler's
// decision counted, recorded and answered (now, or after --latency-ms).
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "pacer/fakes/fake_push.h"
#include "push_server.h"

namespace pacer::fake {

RecordFile::RecordFile(const std::string& path) {
  if (path.empty()) return;
  file_ = std::fopen(path.c_str(), "a");
  if (file_ == nullptr) throw FakePushConfigError("--record " + path + ": cannot open for appending");
  // Lines are written in the event loop's turn; a large buffer keeps that to a memcpy.
  std::setvbuf(file_, nullptr, _IOFBF, 1 << 20);
}

RecordFile::~RecordFile() {
  if (file_ != nullptr) std::fclose(file_);
}

void RecordFile::write(const Decision& d, const char* scope_name, std::int64_t wall_us, std::size_t body_len) {
  if (file_ == nullptr) return;
  std::string line = fmt::format("{{\"t_us\":{},\"id\":{},\"token\":{},\"{}\":{},\"body_len\":{}", wall_us,
                                 jsonString(d.id), jsonString(d.token), scope_name, jsonString(d.scope), body_len);
  // The lifetime the request carried, only when it carried one.
  if (!d.apns_expiration.empty()) line += ",\"apns_expiration\":" + jsonString(d.apns_expiration);
  if (!d.android_ttl.empty()) line += ",\"android_ttl\":" + jsonString(d.android_ttl);
  line += "}\n";
  std::fwrite(line.data(), 1, line.size(), file_);
}

void RecordFile::flush() {
  if (file_ != nullptr) std::fflush(file_);
}

std::string PushServer::reportJson() const {
  const PushCounters& c = counters_;
  nlohmann::json j = {{"requests", c.requests},
                      {"accepted", c.accepted},
                      {"throttled", c.throttled},
                      {"token_throttled", c.token_throttled},
                      {"noise_throttled", c.noise_throttled},
                      {"invalid", c.invalid},
                      {"faults", c.faults},
                      {"auth_failures", c.auth_failures},
                      {"bad_requests", c.bad_requests},
                      {"tokens_issued", c.tokens_issued},
                      {"streams_refused", c.streams_refused},
                      {"streams_refused_before_ack", c.streams_refused_before_ack},
                      {"connections", c.connections},
                      {"resets_on_completed_streams", c.resets_on_completed_streams},
                      {"resets_on_open_streams", c.resets_on_open_streams},
                      {"goaways_sent", c.goaways_sent},
                      {"refused_after_goaway", c.refused_after_goaway},
                      {"max_concurrent_streams", config_.max_concurrent_streams},
                      {"max_concurrent_streams_seen", c.max_concurrent_streams_seen},
                      {"busiest_1s_window", handler_->busiest()}};
  return j.dump();
}

void PushServer::onRequest(Connection& c, Stream& s) {
  const PushNow t = now();
  if (s.request.path == "/_report" && s.request.method == "GET") {
    s.response.body = reportJson();
    submitResponse(c, s);
    return;
  }
  if (c.goaway_last != 0 && s.id > c.goaway_last) {
    // Above the last stream id our GOAWAY named: not processed, as promised.
    ++counters_.refused_after_goaway;
    nghttp2_submit_rst_stream(c.session, NGHTTP2_FLAG_NONE, s.id, NGHTTP2_REFUSED_STREAM);
    return;
  }
  ++counters_.requests;
  if (config_.goaway_after != 0 && ++c.requests == config_.goaway_after) {
    c.goaway_last = s.id;
    ++counters_.goaways_sent;
    nghttp2_submit_goaway(c.session, NGHTTP2_FLAG_NONE, s.id, NGHTTP2_NO_ERROR, nullptr, 0);
  }
  Decision d;
  if (s.too_large) {
    d.outcome = Outcome::kBadRequest;
    d.response.status = 413;
    d.response.body = R"({"reason":"PayloadTooLarge"})";
  } else {
    try {
      d = handler_->handle(s.request, t);
    } catch (const std::exception&) {
      // Handlers do not throw by contract; should one, the request gets a 500,
      // and the exception never crosses nghttp2's C callbacks.
      d = Decision{};
      d.outcome = Outcome::kBadRequest;
      d.response.status = 500;
    }
  }
  switch (d.outcome) {
    case Outcome::kAccepted:
      ++counters_.accepted;
      record_->write(d, handler_->scopeName(), t.wall_us, s.request.body.size());
      break;
    case Outcome::kThrottled:
      ++counters_.throttled;
      if (d.per_token)
        ++counters_.token_throttled;
      else if (d.noise)
        ++counters_.noise_throttled;
      else
        d.response.headers.emplace_back("retry-after", std::to_string(config_.retry_after_s));
      break;
    case Outcome::kInvalid: ++counters_.invalid; break;
    case Outcome::kFault: ++counters_.faults; break;
    case Outcome::kAuthFailure: ++counters_.auth_failures; break;
    case Outcome::kBadRequest: ++counters_.bad_requests; break;
    case Outcome::kTokenIssued: ++counters_.tokens_issued; break;
  }
  s.response = std::move(d.response);
  if (config_.latency_ms > 0) {
    s.answered = true;
    c.delayed.emplace_back(t.mono + std::chrono::milliseconds(config_.latency_ms), s.id);
    return;
  }
  submitResponse(c, s);
}

void PushServer::releaseDelayed() {
  if (config_.latency_ms <= 0) return;
  const MonoTime t = now().mono;
  std::vector<int> to_close;
  for (auto& [fd, c] : conns_) {
    bool any = false;
    // One latency for every answer, so each connection's queue is in due order.
    while (!c->delayed.empty() && c->delayed.front().first <= t) {
      const auto id = c->delayed.front().second;
      c->delayed.pop_front();
      if (auto it = c->streams.find(id); it != c->streams.end()) {
        submitResponse(*c, *it->second);
        any = true;
      }
    }
    if (!any) continue;
    if (writeTls(*c))
      watch(*c);
    else
      to_close.push_back(fd);
  }
  for (int fd : to_close) close(fd);
}

int PushServer::nextTimeoutMs() const {
  if (config_.latency_ms <= 0) return -1;
  MonoTime earliest = MonoTime::max();
  for (const auto& [fd, c] : conns_)
    if (!c->delayed.empty()) earliest = std::min(earliest, c->delayed.front().first);
  if (earliest == MonoTime::max()) return -1;
  const auto wait = std::chrono::ceil<std::chrono::milliseconds>(earliest - now().mono).count();
  return static_cast<int>(std::max<std::int64_t>(wait, 0));
}

}  // namespace pacer::fake
