// H2ClientSession over nghttp2's client session (nghttp2_session_mem_recv /
// mem_send: no sockets). Streams finish through nghttp2's normal close, which
// sends no RST_STREAM for a stream both sides ended; RST_STREAM goes out only
// from cancel().
#include "pacer/push/h2_client.h"

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <unordered_map>

namespace pacer::push {

namespace {

struct OpenStream {
  H2Request request;
  std::size_t sent = 0;  // body bytes handed to nghttp2
  H2Answer answer;
  std::string cancel_reason;  // set by cancel(): reported instead of the server's code
};

}  // namespace

struct H2ClientSession::Impl {
  H2ClientOptions options;
  nghttp2_session* session = nullptr;
  std::deque<H2Request> queue;
  std::unordered_map<std::int32_t, OpenStream> open;
  std::vector<H2Answer> answers;
  std::vector<H2Failure> failures;
  bool dead = false;
  bool going_away = false;
  bool goaway_received = false;
  bool settings_received = false;  // nothing is sent before the server's limit is known
  std::string why;
  MonoTime last_input{};
  MonoTime ping_sent_at{};
  bool ping_outstanding = false;
  std::uint64_t resets_sent = 0;
  std::uint64_t pings_sent = 0;

  void fail(std::uint64_t tag, std::int32_t id, H2FailureKind kind, std::uint32_t code, std::string reason) {
    failures.push_back(H2Failure{tag, id, kind, code, std::move(reason)});
  }
  void kill(std::string_view reason) {
    if (dead) return;
    dead = true;
    why.assign(reason);
  }
  std::uint32_t limit() const {
    if (!settings_received) return 0;
    const std::uint32_t server =
        session == nullptr ? 100 : nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS);
    return std::min(options.max_streams, server);
  }
  void startQueued();
  bool start(H2Request&& r);
  void streamClosed(std::int32_t id, std::uint32_t code);
};

namespace {

using Impl = H2ClientSession::Impl;

nghttp2_nv header(const std::string& name, const std::string& value, std::uint8_t flags = NGHTTP2_NV_FLAG_NONE) {
  nghttp2_nv nv;
  nv.name = reinterpret_cast<std::uint8_t*>(const_cast<char*>(name.data()));
  nv.namelen = name.size();
  nv.value = reinterpret_cast<std::uint8_t*>(const_cast<char*>(value.data()));
  nv.valuelen = value.size();
  nv.flags = flags;
  return nv;
}

ssize_t readBody(nghttp2_session*, std::int32_t id, std::uint8_t* buf, std::size_t length, std::uint32_t* flags,
                 nghttp2_data_source*, void* user) {
  auto* s = static_cast<Impl*>(user);
  auto it = s->open.find(id);
  if (it == s->open.end()) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  OpenStream& o = it->second;
  const std::size_t n = std::min(length, o.request.body.size() - o.sent);
  std::memcpy(buf, o.request.body.data() + o.sent, n);
  o.sent += n;
  if (o.sent == o.request.body.size()) *flags |= NGHTTP2_DATA_FLAG_EOF;
  return static_cast<ssize_t>(n);
}

int onHeader(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name, std::size_t namelen,
             const std::uint8_t* value, std::size_t valuelen, std::uint8_t, void* user) {
  auto* s = static_cast<Impl*>(user);
  if (frame->hd.type != NGHTTP2_HEADERS) return 0;
  auto it = s->open.find(frame->hd.stream_id);
  if (it == s->open.end()) return 0;
  std::string_view n(reinterpret_cast<const char*>(name), namelen);
  std::string_view v(reinterpret_cast<const char*>(value), valuelen);
  H2Answer& a = it->second.answer;
  if (n == ":status") {
    int status = 0;
    for (char c : v) status = c >= '0' && c <= '9' ? status * 10 + (c - '0') : status;
    // A 1xx answer is interim; the final one replaces it.
    a.status = status;
  } else if (!n.empty() && n.front() != ':') {
    a.headers.emplace_back(std::string(n), std::string(v));
  }
  return 0;
}

int onData(nghttp2_session*, std::uint8_t, std::int32_t id, const std::uint8_t* data, std::size_t len, void* user) {
  auto* s = static_cast<Impl*>(user);
  auto it = s->open.find(id);
  if (it == s->open.end()) return 0;
  std::string& body = it->second.answer.body;
  const std::size_t room = s->options.max_body_bytes > body.size() ? s->options.max_body_bytes - body.size() : 0;
  body.append(reinterpret_cast<const char*>(data), std::min(room, len));
  return 0;
}

int onFrameRecv(nghttp2_session*, const nghttp2_frame* frame, void* user) {
  auto* s = static_cast<Impl*>(user);
  if (frame->hd.type == NGHTTP2_GOAWAY) {
    s->going_away = true;
    s->goaway_received = true;
  } else if (frame->hd.type == NGHTTP2_PING && (frame->hd.flags & NGHTTP2_FLAG_ACK) != 0) {
    s->ping_outstanding = false;
  } else if (frame->hd.type == NGHTTP2_SETTINGS && (frame->hd.flags & NGHTTP2_FLAG_ACK) == 0) {
    s->settings_received = true;
    s->startQueued();  // the server's limit may have grown
  }
  return 0;
}

int onFrameSend(nghttp2_session*, const nghttp2_frame* frame, void* user) {
  auto* s = static_cast<Impl*>(user);
  if (frame->hd.type == NGHTTP2_RST_STREAM) ++s->resets_sent;
  if (frame->hd.type == NGHTTP2_GOAWAY) s->going_away = true;
  return 0;
}

int onStreamClose(nghttp2_session*, std::int32_t id, std::uint32_t code, void* user) {
  static_cast<Impl*>(user)->streamClosed(id, code);
  return 0;
}

}  // namespace

void Impl::streamClosed(std::int32_t id, std::uint32_t code) {
  auto it = open.find(id);
  if (it == open.end()) return;
  OpenStream& o = it->second;
  if (!o.cancel_reason.empty()) {
    fail(o.request.tag, id, H2FailureKind::kReset, NGHTTP2_CANCEL, std::move(o.cancel_reason));
  } else if (code == NGHTTP2_NO_ERROR && o.answer.status >= 200) {
    o.answer.tag = o.request.tag;
    o.answer.stream_id = id;
    answers.push_back(std::move(o.answer));
  } else if (code == NGHTTP2_REFUSED_STREAM) {
    fail(o.request.tag, id, H2FailureKind::kNotProcessed, code,
         going_away ? "not processed: the server's GOAWAY names an earlier last stream" : "stream refused by the server");
  } else {
    fail(o.request.tag, id, H2FailureKind::kReset, code,
         std::string("stream reset by the server: ") + nghttp2_http2_strerror(code));
  }
  open.erase(it);
  startQueued();
}

bool Impl::start(H2Request&& r) {
  static const std::string kMethod = ":method", kPath = ":path", kScheme = ":scheme", kAuthority = ":authority";
  std::vector<nghttp2_nv> nva;
  nva.reserve(4 + r.headers.size());
  nva.push_back(header(kMethod, r.method));
  nva.push_back(header(kPath, r.path));
  nva.push_back(header(kScheme, options.scheme));
  nva.push_back(header(kAuthority, options.authority));
  for (const auto& [n, v] : r.headers) nva.push_back(header(n, v, NGHTTP2_NV_FLAG_NO_INDEX));
  nghttp2_data_provider body;
  body.source.ptr = nullptr;
  body.read_callback = readBody;
  const std::int32_t id = nghttp2_submit_request(session, nullptr, nva.data(), nva.size(),
                                                 r.body.empty() && r.method == "GET" ? nullptr : &body, nullptr);
  if (id < 0) {
    fail(r.tag, 0, H2FailureKind::kNotProcessed, 0, std::string("not sent: ") + nghttp2_strerror(id));
    return false;
  }
  OpenStream& o = open[id];
  o.request = std::move(r);
  return true;
}

void Impl::startQueued() {
  while (!queue.empty() && !going_away && !dead && open.size() < limit()) {
    H2Request r = std::move(queue.front());
    queue.pop_front();
    start(std::move(r));
  }
}

H2ClientSession::H2ClientSession(H2ClientOptions options, MonoTime now) : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.options = std::move(options);
  s.last_input = now;
  nghttp2_session_callbacks* cb = nullptr;
  nghttp2_session_callbacks_new(&cb);
  nghttp2_session_callbacks_set_on_header_callback(cb, onHeader);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, onData);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cb, onFrameRecv);
  nghttp2_session_callbacks_set_on_frame_send_callback(cb, onFrameSend);
  nghttp2_session_callbacks_set_on_stream_close_callback(cb, onStreamClose);
  nghttp2_option* opt = nullptr;
  nghttp2_option_new(&opt);
  // Until the server's SETTINGS arrive, assume the common limit of 100.
  nghttp2_option_set_peer_max_concurrent_streams(opt, 100);
  const int rv = nghttp2_session_client_new2(&s.session, cb, &s, opt);
  nghttp2_option_del(opt);
  nghttp2_session_callbacks_del(cb);
  if (rv != 0) {
    s.session = nullptr;
    s.kill("nghttp2 session: out of memory");
    return;
  }
  const nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, static_cast<std::uint32_t>(s.options.stream_window)},
  };
  nghttp2_submit_settings(s.session, NGHTTP2_FLAG_NONE, settings, 2);
  nghttp2_session_set_local_window_size(s.session, NGHTTP2_FLAG_NONE, 0, s.options.connection_window);
}

H2ClientSession::~H2ClientSession() {
  if (impl_->session != nullptr) nghttp2_session_del(impl_->session);
}

bool H2ClientSession::submit(H2Request&& request) {
  Impl& s = *impl_;
  if (s.dead || s.going_away) return false;
  s.queue.push_back(std::move(request));
  s.startQueued();
  return true;
}

void H2ClientSession::receive(std::string_view bytes, MonoTime now) {
  Impl& s = *impl_;
  if (s.dead || bytes.empty()) return;
  s.last_input = now;
  const ssize_t rv =
      nghttp2_session_mem_recv(s.session, reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  if (rv < 0) s.kill(std::string("HTTP/2 protocol error: ") + nghttp2_strerror(static_cast<int>(rv)));
}

void H2ClientSession::send(std::string& out, MonoTime now) {
  Impl& s = *impl_;
  if (s.dead) return;
  if (s.ping_outstanding && now - s.ping_sent_at >= s.options.ping_timeout) {
    s.kill("no PING answer within the ping timeout");
    return;
  }
  if (!s.ping_outstanding && now - s.last_input >= s.options.ping_interval) {
    nghttp2_submit_ping(s.session, NGHTTP2_FLAG_NONE, nullptr);
    s.ping_outstanding = true;
    s.ping_sent_at = now;
    ++s.pings_sent;
  }
  for (;;) {
    const std::uint8_t* data = nullptr;
    const ssize_t n = nghttp2_session_mem_send(s.session, &data);
    if (n < 0) {
      s.kill(std::string("HTTP/2 send error: ") + nghttp2_strerror(static_cast<int>(n)));
      return;
    }
    if (n == 0) break;
    out.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n));
  }
  if (!nghttp2_session_want_read(s.session) && !nghttp2_session_want_write(s.session) && s.open.empty())
    s.kill(s.going_away ? "the session ended (GOAWAY)" : "the session ended");
}

void H2ClientSession::connectionLost(std::string_view why) {
  Impl& s = *impl_;
  s.kill(why);
  for (auto& [id, o] : s.open) {
    // nghttp2 makes a stream when it writes the request's HEADERS: one it
    // never made was submitted (a slot freed) but never reached the wire.
    if (nghttp2_session_find_stream(s.session, id) == nullptr) {
      s.fail(o.request.tag, id, H2FailureKind::kNotProcessed, 0, std::string("not sent: ").append(why));
    } else {
      s.fail(o.request.tag, id, H2FailureKind::kLost, 0, std::string("connection lost: ").append(why));
    }
  }
  s.open.clear();
  for (H2Request& r : s.queue) s.fail(r.tag, 0, H2FailureKind::kNotProcessed, 0, std::string("not sent: ").append(why));
  s.queue.clear();
}

bool H2ClientSession::cancel(std::uint64_t tag, std::string_view why) {
  Impl& s = *impl_;
  for (auto it = s.queue.begin(); it != s.queue.end(); ++it) {
    if (it->tag != tag) continue;
    s.fail(tag, 0, H2FailureKind::kReset, NGHTTP2_CANCEL, std::string(why));
    s.queue.erase(it);
    return true;
  }
  for (auto& [id, o] : s.open) {
    if (o.request.tag != tag) continue;
    if (!o.cancel_reason.empty()) return true;  // already reset; its close is on the way
    o.cancel_reason = why.empty() ? "cancelled" : std::string(why);
    if (s.dead || nghttp2_submit_rst_stream(s.session, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL) != 0) {
      s.fail(tag, id, H2FailureKind::kReset, NGHTTP2_CANCEL, std::move(o.cancel_reason));
      s.open.erase(id);
    }
    return true;
  }
  return false;
}

void H2ClientSession::shutdown() {
  Impl& s = *impl_;
  if (s.dead || s.going_away) return;
  s.going_away = true;
  nghttp2_session_terminate_session(s.session, NGHTTP2_NO_ERROR);
}

void H2ClientSession::takeAnswers(std::vector<H2Answer>& out) {
  for (H2Answer& a : impl_->answers) out.push_back(std::move(a));
  impl_->answers.clear();
}

void H2ClientSession::takeFailures(std::vector<H2Failure>& out) {
  Impl& s = *impl_;
  // After GOAWAY nothing more starts: what still waits in the queue was never sent.
  if (s.going_away || s.dead) {
    for (H2Request& r : s.queue)
      s.fail(r.tag, 0, H2FailureKind::kNotProcessed, 0, "not sent: the session is ending (GOAWAY)");
    s.queue.clear();
  }
  for (H2Failure& f : s.failures) out.push_back(std::move(f));
  s.failures.clear();
}

bool H2ClientSession::dead() const { return impl_->dead; }
bool H2ClientSession::goingAway() const { return impl_->going_away || impl_->dead; }
bool H2ClientSession::goawayReceived() const { return impl_->goaway_received; }
const std::string& H2ClientSession::why() const { return impl_->why; }
std::size_t H2ClientSession::openStreams() const { return impl_->open.size(); }
std::size_t H2ClientSession::queued() const { return impl_->queue.size(); }
std::uint32_t H2ClientSession::serverMaxStreams() const {
  return impl_->session == nullptr
             ? 0
             : nghttp2_session_get_remote_settings(impl_->session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS);
}
std::vector<std::uint64_t> H2ClientSession::pendingTags() const {
  std::vector<std::uint64_t> tags;
  for (const auto& [id, o] : impl_->open) tags.push_back(o.request.tag);
  for (const H2Request& r : impl_->queue) tags.push_back(r.tag);
  return tags;
}
std::uint64_t H2ClientSession::resetsSent() const { return impl_->resets_sent; }
std::uint64_t H2ClientSession::pingsSent() const { return impl_->pings_sent; }

std::string_view H2Answer::header(std::string_view name) const {
  for (const auto& [n, v] : headers)
    if (n == name) return v;
  return {};
}

}  // namespace pacer::push
