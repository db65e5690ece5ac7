#include "h2_connection.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "push_server.h"

namespace pacer::fake {
namespace {

Connection& conn(void* user) { return *static_cast<Connection*>(user); }

Stream* findStream(Connection& c, std::int32_t id) {
  auto it = c.streams.find(id);
  return it == c.streams.end() ? nullptr : it->second.get();
}

int onBeginHeaders(nghttp2_session* session, const nghttp2_frame* frame, void* user) {
  if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
  Connection& c = conn(user);
  auto s = std::make_unique<Stream>();
  s->id = frame->hd.stream_id;
  if (c.open_streams >= c.server.maxConcurrentStreams()) {
    s->refused = true;
    nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_REFUSED_STREAM);
    c.server.onStreamRefused(c.settings_acked);
  } else {
    ++c.open_streams;
    c.server.onStreamOpened(c.open_streams);
  }
  c.streams[s->id] = std::move(s);
  return 0;
}

int onHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name, size_t namelen, const uint8_t* value,
             size_t valuelen, uint8_t, void* user) {
  if (frame->hd.type != NGHTTP2_HEADERS) return 0;
  Stream* s = findStream(conn(user), frame->hd.stream_id);
  if (s == nullptr || s->refused) return 0;
  const std::string_view n(reinterpret_cast<const char*>(name), namelen);
  const std::string_view v(reinterpret_cast<const char*>(value), valuelen);
  PushRequest& r = s->request;
  if (n == ":method")
    r.method = v;
  else if (n == ":path")
    r.path = v;
  else if (n == "authorization")
    r.authorization = v;
  else if (n == "apns-topic")
    r.apns_topic = v;
  else if (n == "apns-id")
    r.apns_id = v;
  else if (n == "apns-expiration")
    r.apns_expiration = v;
  else if (n == "content-type")
    r.content_type = v;
  return 0;
}

int onDataChunk(nghttp2_session*, uint8_t, int32_t stream_id, const uint8_t* data, size_t len, void* user) {
  Stream* s = findStream(conn(user), stream_id);
  if (s == nullptr || s->refused) return 0;
  if (s->request.body.size() + len > kMaxRequestBody) {
    s->too_large = true;
    return 0;
  }
  s->request.body.append(reinterpret_cast<const char*>(data), len);
  return 0;
}

int onFrameRecv(nghttp2_session*, const nghttp2_frame* frame, void* user) {
  if (frame->hd.type == NGHTTP2_SETTINGS && (frame->hd.flags & NGHTTP2_FLAG_ACK) != 0) {
    conn(user).settings_acked = true;
    return 0;
  }
  if (frame->hd.type == NGHTTP2_RST_STREAM) {
    // A stream no longer in the table was answered in full and closed by
    // both sides (refused streams are reset by us, never by the client).
    Connection& c = conn(user);
    c.server.onResetReceived(findStream(c, frame->hd.stream_id) == nullptr);
    return 0;
  }
  const bool request_end = (frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) &&
                           (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
  if (!request_end) return 0;
  Connection& c = conn(user);
  Stream* s = findStream(c, frame->hd.stream_id);
  if (s == nullptr || s->refused || s->answered) return 0;
  c.server.onRequest(c, *s);
  return 0;
}

int onStreamClose(nghttp2_session*, int32_t stream_id, uint32_t, void* user) {
  Connection& c = conn(user);
  auto it = c.streams.find(stream_id);
  if (it == c.streams.end()) return 0;
  if (!it->second->refused) --c.open_streams;
  c.streams.erase(it);
  return 0;
}

ssize_t readBody(nghttp2_session*, int32_t, uint8_t* buf, size_t length, uint32_t* flags, nghttp2_data_source* src,
                 void*) {
  auto* s = static_cast<Stream*>(src->ptr);
  const std::size_t n = std::min(length, s->response.body.size() - s->sent);
  std::memcpy(buf, s->response.body.data() + s->sent, n);
  s->sent += n;
  if (s->sent == s->response.body.size()) *flags |= NGHTTP2_DATA_FLAG_EOF;
  return static_cast<ssize_t>(n);
}

nghttp2_nv header(const std::string& name, const std::string& value) {
  return nghttp2_nv{reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
                    reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
                    NGHTTP2_NV_FLAG_NONE};
}

nghttp2_session_callbacks* makeCallbacks() {
  nghttp2_session_callbacks* cb = nullptr;
  if (nghttp2_session_callbacks_new(&cb) != 0) return nullptr;
  nghttp2_session_callbacks_set_on_begin_headers_callback(cb, onBeginHeaders);
  nghttp2_session_callbacks_set_on_header_callback(cb, onHeader);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, onDataChunk);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cb, onFrameRecv);
  nghttp2_session_callbacks_set_on_stream_close_callback(cb, onStreamClose);
  return cb;
}

}  // namespace

Connection::~Connection() {
  if (session != nullptr) nghttp2_session_del(session);
  if (ssl != nullptr) SSL_free(ssl);
  if (fd >= 0) ::close(fd);
}

bool startSession(Connection& c, std::uint32_t max_concurrent_streams) {
  static nghttp2_session_callbacks* callbacks = makeCallbacks();
  if (callbacks == nullptr || nghttp2_session_server_new(&c.session, callbacks, &c) != 0) return false;
  (void)max_concurrent_streams;  // advertised by patchMaxConcurrentStreams; enforced in onBeginHeaders
  const nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, kSessionStreamLimit},
                                       {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20}};
  return nghttp2_submit_settings(c.session, NGHTTP2_FLAG_NONE, iv, std::size(iv)) == 0;
}

void submitResponse(Connection& c, Stream& s) {
  s.answered = true;
  const std::string status = std::to_string(s.response.status);
  const std::string status_name = ":status", ct_name = "content-type", ct = "application/json",
                    len_name = "content-length", len = std::to_string(s.response.body.size());
  std::vector<nghttp2_nv> nva;
  nva.reserve(3 + s.response.headers.size());
  nva.push_back(header(status_name, status));
  if (!s.response.body.empty()) nva.push_back(header(ct_name, ct));
  nva.push_back(header(len_name, len));
  for (const auto& [n, v] : s.response.headers) nva.push_back(header(n, v));
  nghttp2_data_provider body{};
  body.source.ptr = &s;
  body.read_callback = readBody;
  // nghttp2 copies the header names and values; the body is read from the stream later.
  if (nghttp2_submit_response(c.session, s.id, nva.data(), nva.size(), s.response.body.empty() ? nullptr : &body) != 0)
    nghttp2_submit_rst_stream(c.session, NGHTTP2_FLAG_NONE, s.id, NGHTTP2_INTERNAL_ERROR);
}

bool patchMaxConcurrentStreams(std::string& out, std::uint32_t advertised) {
  constexpr std::size_t kHeader = 9, kEntry = 6;
  if (out.size() < kHeader) return false;
  const auto* b = reinterpret_cast<const unsigned char*>(out.data());
  const std::size_t len = (std::size_t{b[0]} << 16) | (std::size_t{b[1]} << 8) | b[2];
  if (b[3] != NGHTTP2_SETTINGS || out.size() < kHeader + len) return false;
  for (std::size_t at = kHeader; at + kEntry <= kHeader + len; at += kEntry) {
    const unsigned id = (unsigned{b[at]} << 8) | b[at + 1];
    if (id != NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS) continue;
    for (int i = 0; i < 4; ++i) out[at + 2 + i] = static_cast<char>((advertised >> (8 * (3 - i))) & 0xff);
  }
  return true;
}

}  // namespace pacer::fake
