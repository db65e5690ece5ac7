#include "pacer/sinks/http_sink.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "pacer/error.h"

namespace pacer::sink {
namespace {

constexpr std::size_t kKeepBodyBytes = 64 * 1024;

// One reusable request slot: a curl easy handle configured once, and the
// buffers and header list its requests use, kept between requests so that a
// request in steady state allocates nothing.
struct Transfer {
  CURL* easy = nullptr;
  std::uint64_t ticket = 0;
  std::size_t index = 0;  // position in HttpSink::active_
  std::string body;
  std::string url;              // only when the URL template has placeholders
  std::string key_header;       // "Idempotency-Key: <id>"
  std::string campaign_header;  // "Pacer-Campaign: <campaign>"
  std::string expires_header;   // "Pacer-Expires-At: <deadline>"; "Pacer-Expires-At:" (not sent) without one
  // The request's header list, built here rather than with curl_slist_append
  // (one malloc per header per request). libcurl only reads the list.
  std::vector<curl_slist> headers;
  std::string response;               // the first bytes of the answer, for the reason
  std::size_t keep = kMaxReasonBody;  // how many bytes of the answer to keep
  bool own = false;                   // the codec's own request (a credential), not a message
  HttpRequest request;                // with a codec: what it built for this transfer
};

std::size_t onBody(char* data, std::size_t size, std::size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::size_t room = t->keep > t->response.size() ? t->keep - t->response.size() : 0;
  t->response.append(data, std::min(room, size * n));
  return size * n;
}

void appendUrlEncoded(std::string& out, const std::string& s) {
  static const char* kHex = "0123456789ABCDEF";
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
}

// Writes `url_template` with {recipient} and {campaign} filled in to `out`,
// reusing its capacity.
void expandUrlInto(std::string& out, const std::string& url_template, const Message& m) {
  static constexpr std::string_view kRecipient = "{recipient}";
  static constexpr std::string_view kCampaign = "{campaign}";
  out.clear();
  const std::string_view t = url_template;
  std::size_t i = 0;
  while (i < t.size()) {
    const std::size_t brace = t.find('{', i);
    if (brace == std::string_view::npos) {
      out.append(t.substr(i));
      break;
    }
    out.append(t.substr(i, brace - i));
    if (t.compare(brace, kRecipient.size(), kRecipient) == 0) {
      appendUrlEncoded(out, m.recipient);
      i = brace + kRecipient.size();
    } else if (t.compare(brace, kCampaign.size(), kCampaign) == 0) {
      appendUrlEncoded(out, m.campaign);
      i = brace + kCampaign.size();
    } else {
      out += '{';
      i = brace + 1;
    }
  }
}

void setHeaderLine(std::string& line, std::string_view name, const std::string& value) {
  line.assign(name);
  line.append(": ");
  line.append(value);
}

class HttpSink final : public SinkInterface {
 public:
  explicit HttpSink(HttpSinkOptions options) : options_(std::move(options)) {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    url_is_template_ = options_.url.find('{') != std::string::npos;
    for (const auto& [name, value] : options_.headers) static_headers_.push_back(fmt::format("{}: {}", name, value));
    // A codec names its own content type (JSON for a push, a form for a token).
    if (!options_.codec) static_headers_.push_back(fmt::format("Content-Type: {}", options_.content_type));
    static_headers_.push_back("Expect:");  // no 100-continue round trip
    multi_ = curl_multi_init();
    if (multi_ == nullptr) throw Error(ErrorKind::kUnavailable, "curl_multi_init failed");
    const std::size_t connections = options_.max_connections != 0 ? options_.max_connections : options_.max_in_flight;
    curl_multi_setopt(multi_, CURLMOPT_MAX_TOTAL_CONNECTIONS, static_cast<long>(connections));
    curl_multi_setopt(multi_, CURLMOPT_MAX_HOST_CONNECTIONS, static_cast<long>(connections));
    curl_multi_setopt(multi_, CURLMOPT_PIPELINING, static_cast<long>(CURLPIPE_MULTIPLEX));
    curl_multi_setopt(multi_, CURLMOPT_MAX_CONCURRENT_STREAMS, static_cast<long>(options_.max_streams));
    active_.reserve(options_.max_in_flight + 1);
  }

  ~HttpSink() override {
    for (Transfer* t : active_) {
      curl_multi_remove_handle(multi_, t->easy);
      pool_.emplace_back(t);
    }
    for (auto& t : pool_) curl_easy_cleanup(t->easy);
    curl_multi_cleanup(multi_);
  }

  bool submit(const Message& m, std::uint64_t ticket) override {
    if (inFlight() >= options_.max_in_flight) return false;
    if (options_.codec) return submitCoded(m, ticket);
    Transfer* t = acquire();
    t->ticket = ticket;
    t->body.assign(m.payload);
    t->response.clear();
    setHeaderLine(t->key_header, "Idempotency-Key", m.id);
    setHeaderLine(t->campaign_header, "Pacer-Campaign", m.campaign);
    // A header with nothing after its colon is not sent (libcurl).
    setHeaderLine(t->expires_header, "Pacer-Expires-At", m.expires_at_ms > 0 ? formatDeadline(m.expires_at_ms) : "");
    // Their buffers may have moved: point the list at them again.
    const std::size_t n = t->headers.size();
    t->headers[n - 3].data = t->expires_header.data();
    t->headers[n - 2].data = t->key_header.data();
    t->headers[n - 1].data = t->campaign_header.data();
    CURL* e = t->easy;
    if (url_is_template_) {
      expandUrlInto(t->url, options_.url, m);
      curl_easy_setopt(e, CURLOPT_URL, t->url.c_str());
    }
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, t->body.data());
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(t->body.size()));
    if (curl_multi_add_handle(multi_, e) != CURLM_OK) {
      pool_.emplace_back(t);
      return false;
    }
    t->index = active_.size();
    active_.push_back(t);
    return true;
  }

  void poll(std::vector<SendResult>& out) override {
    for (SendResult& r : done_) out.push_back(std::move(r));
    done_.clear();
    if (options_.codec && !own_in_flight_) startOwnRequest();
    int running = 0;
    curl_multi_perform(multi_, &running);
    int left = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi_, &left)) {
      if (msg->msg != CURLMSG_DONE) continue;
      Transfer* t = nullptr;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &t);
      const CURLcode code = msg->data.result;  // msg is invalid once the handle is removed
      if (t->own) {
        ownAnswered(*t, code);
      } else {
        out.push_back(resultOf(*t, code));
      }
      curl_multi_remove_handle(multi_, t->easy);
      release(t);
    }
  }

  std::size_t inFlight() const override { return active_.size() - (own_in_flight_ ? 1 : 0) + done_.size(); }
  std::size_t maxInFlight() const override { return options_.max_in_flight; }

  void wait(Nanos max) override {
    if (active_.empty() || !done_.empty()) return;
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(max).count();
    int numfds = 0;
    curl_multi_poll(multi_, nullptr, 0, static_cast<int>(std::clamp<std::int64_t>(ms, 0, 1000)), &numfds);
  }

 private:
  SendResult resultOf(const Transfer& t, CURLcode code) const {
    SendResult r;
    r.ticket = t.ticket;
    curl_off_t total_us = 0;  // request to answer: watched by the adaptive rate's latency threshold
    if (curl_easy_getinfo(t.easy, CURLINFO_TOTAL_TIME_T, &total_us) == CURLE_OK && total_us > 0)
      r.latency = std::chrono::microseconds(total_us);
    if (code != CURLE_OK) {
      r.outcome = SendOutcome::kFault;
      r.reason = code == CURLE_OPERATION_TIMEDOUT
                     ? fmt::format("timeout after {} ms: {}", options_.total_timeout.count(), curl_easy_strerror(code))
                     : fmt::format("connection error: {}", curl_easy_strerror(code));
      return r;
    }
    long status = 0;
    curl_easy_getinfo(t.easy, CURLINFO_RESPONSE_CODE, &status);
    if (options_.codec) {
      const Nanos latency = r.latency;
      const HeaderLookup header = [&t](const char* name) { return headerOf(t.easy, name); };
      r = options_.codec->classify(static_cast<int>(status), t.response, header, t.request, wallNow());
      r.ticket = t.ticket;
      r.latency = latency;
      return r;
    }
    // Read from the answer's headers only when it matters, instead of
    // inspecting every header line of every answer.
    const std::string_view retry_after =
        status == 429 || status == 503 ? headerOf(t.easy, "Retry-After") : std::string_view();
    const Nanos latency = r.latency;
    r = classifyHttpAnswer(static_cast<int>(status), retry_after, t.response, std::time(nullptr));
    r.ticket = t.ticket;
    r.latency = latency;
    return r;
  }

  WallTime wallNow() const {
    if (options_.wall_clock) return options_.wall_clock();
    return std::chrono::time_point_cast<std::chrono::milliseconds>(std::chrono::system_clock::now());
  }

  static std::string_view headerOf(CURL* easy, const char* name) {
    curl_header* h = nullptr;
    if (curl_easy_header(easy, name, 0, CURLH_HEADER, -1, &h) == CURLHE_OK && h != nullptr) return h->value;
    return {};
  }

  // Points the transfer's header list at the static headers and then the
  // codec's, reusing the list's storage.
  void linkHeaders(Transfer& t) {
    const std::size_t n = static_headers_.size() + t.request.headers.size();
    t.headers.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      const std::string& line =
          i < static_headers_.size() ? static_headers_[i] : t.request.headers[i - static_headers_.size()];
      t.headers[i].data = const_cast<char*>(line.c_str());
      t.headers[i].next = i + 1 < n ? &t.headers[i + 1] : nullptr;
    }
    curl_easy_setopt(t.easy, CURLOPT_HTTPHEADER, n == 0 ? nullptr : t.headers.data());
  }

  bool start(Transfer* t) {
    CURL* e = t->easy;
    t->response.clear();
    curl_easy_setopt(e, CURLOPT_URL, t->request.url.c_str());
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, t->request.body.data());
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(t->request.body.size()));
    linkHeaders(*t);
    if (curl_multi_add_handle(multi_, e) != CURLM_OK) {
      pool_.emplace_back(t);
      return false;
    }
    t->index = active_.size();
    active_.push_back(t);
    return true;
  }

  // A message through the codec: refused at once when it cannot go, held
  // back (false) while the credential is not usable.
  bool submitCoded(const Message& m, std::uint64_t ticket) {
    const WallTime now = wallNow();
    if (!options_.codec->ready(now, waiting_why_)) {
      if (options_.log && waiting_why_ != last_logged_why_) options_.log(waiting_why_);
      last_logged_why_ = waiting_why_;
      return false;
    }
    last_logged_why_.clear();
    Transfer* t = acquire();
    t->request.clear();
    SendResult refused;
    if (!options_.codec->build(m, now, t->request, refused)) {
      pool_.emplace_back(t);
      refused.ticket = ticket;
      done_.push_back(std::move(refused));
      return true;
    }
    t->ticket = ticket;
    t->own = false;
    t->keep = kCodecBodyBytes;
    return start(t);
  }

  void startOwnRequest() {
    Transfer* t = acquire();
    t->request.clear();
    if (!options_.codec->ownRequest(wallNow(), t->request)) {
      pool_.emplace_back(t);
      return;
    }
    t->own = true;
    t->keep = kCodecBodyBytes;
    own_in_flight_ = start(t);
  }

  void ownAnswered(Transfer& t, CURLcode code) {
    own_in_flight_ = false;
    long status = 0;
    if (code == CURLE_OK) curl_easy_getinfo(t.easy, CURLINFO_RESPONSE_CODE, &status);
    const std::string_view body = code == CURLE_OK ? std::string_view(t.response) : curl_easy_strerror(code);
    options_.codec->ownAnswer(static_cast<int>(status), body, wallNow());
    t.own = false;
  }

  Transfer* acquire() {
    if (!pool_.empty()) {
      Transfer* t = pool_.back().release();
      pool_.pop_back();
      return t;
    }
    auto t = std::make_unique<Transfer>();
    t->easy = curl_easy_init();
    if (t->easy == nullptr) throw std::bad_alloc();
    configure(*t);
    return t.release();
  }

  // Everything that is the same for every request, set once per handle:
  // options stay set on an easy handle from one transfer to the next.
  void configure(Transfer& t) {
    t.headers.resize(static_headers_.size() + 3);
    for (std::size_t i = 0; i < t.headers.size(); ++i) {
      t.headers[i].data = i < static_headers_.size() ? static_headers_[i].data() : nullptr;
      t.headers[i].next = i + 1 < t.headers.size() ? &t.headers[i + 1] : nullptr;
    }
    CURL* e = t.easy;
    if (!url_is_template_) curl_easy_setopt(e, CURLOPT_URL, options_.url.c_str());
    curl_easy_setopt(e, CURLOPT_PRIVATE, &t);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, t.headers.data());
    if (options_.method == "POST") {
      curl_easy_setopt(e, CURLOPT_POST, 1L);
    } else {
      curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, options_.method.c_str());
    }
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.connect_timeout.count()));
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(options_.total_timeout.count()));
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, onBody);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, options_.http2 ? CURL_HTTP_VERSION_2TLS : CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);  // prefer multiplexing on an existing HTTP/2 connection
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, options_.verify_tls ? 1L : 0L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, options_.verify_tls ? 2L : 0L);
    if (!options_.ca_file.empty()) curl_easy_setopt(e, CURLOPT_CAINFO, options_.ca_file.c_str());
  }

  void release(Transfer* t) {
    // Swap-remove from active_: O(1) whatever the number in flight.
    Transfer* last = active_.back();
    active_[t->index] = last;
    last->index = t->index;
    active_.pop_back();
    // Keep buffers for the usual small payload, not a rare large one per slot.
    if (t->body.capacity() > kKeepBodyBytes) std::string().swap(t->body);
    pool_.emplace_back(t);
  }

  HttpSinkOptions options_;
  bool url_is_template_ = false;
  std::vector<std::string> static_headers_;  // "Name: value", shared by every request's list
  CURLM* multi_ = nullptr;
  std::vector<Transfer*> active_;
  std::vector<std::unique_ptr<Transfer>> pool_;
  std::vector<SendResult> done_;  // codec refusals, handed out at the next poll()
  bool own_in_flight_ = false;
  std::string waiting_why_;
  std::string last_logged_why_;
};

}  // namespace

SendResult classifyHttpAnswer(int status, std::string_view retry_after, std::string_view body,
                              std::int64_t now_unix_s) {
  SendResult r;
  r.status = status;
  if (status >= 200 && status < 300) return r;
  while (!retry_after.empty() && (retry_after.back() == ' ' || retry_after.back() == '\t'))
    retry_after.remove_suffix(1);
  while (!retry_after.empty() && (retry_after.front() == ' ' || retry_after.front() == '\t'))
    retry_after.remove_prefix(1);
  const std::optional<Nanos> pause = retryAfterValue(retry_after, now_unix_s);
  if (status == 429 || (status == 503 && pause)) {
    r.outcome = SendOutcome::kThrottled;
    r.retry_after = pause.value_or(Nanos{0});
  } else if (status >= 400 && status < 500 && status != 408) {
    r.outcome = SendOutcome::kPermanent;
  } else {
    r.outcome = SendOutcome::kFault;
  }
  const std::string_view shown = body.substr(0, kMaxReasonBody);
  r.reason = fmt::format("HTTP {}{}{}", status, shown.empty() ? "" : ": ", escapeForLine(std::string(shown)));
  return r;
}

std::optional<Nanos> retryAfterValue(std::string_view value, std::int64_t now_unix_s) noexcept {
  if (value.empty()) return std::nullopt;
  if (std::all_of(value.begin(), value.end(), [](unsigned char c) { return std::isdigit(c); })) {
    if (value.size() > 9) return std::chrono::seconds(999'999'999);
    std::int64_t n = 0;
    for (char c : value) n = n * 10 + (c - '0');
    return std::chrono::seconds(n);
  }
  if (value.size() > 64) return std::nullopt;
  char buf[65];
  value.copy(buf, value.size());
  buf[value.size()] = '\0';
  const std::time_t at = curl_getdate(buf, nullptr);
  if (at < 0) return std::nullopt;
  // A date centuries ahead (found by the fuzzer: year 20260) is capped like
  // a number of seconds, so that the pause in nanoseconds cannot overflow.
  const std::int64_t ahead = std::clamp<std::int64_t>(static_cast<std::int64_t>(at) - now_unix_s, 0, 999'999'999);
  return std::chrono::seconds(ahead);
}

Nanos parseRetryAfter(const std::string& value, std::int64_t now_unix_s) noexcept {
  return retryAfterValue(value, now_unix_s).value_or(Nanos{0});
}

std::string expandUrl(const std::string& url_template, const Message& m) {
  std::string url;
  expandUrlInto(url, url_template, m);
  return url;
}

SinkInterfacePtr makeHttpSink(HttpSinkOptions options) {
  if (options.url.rfind("http://", 0) != 0 && options.url.rfind("https://", 0) != 0) {
    throw InvalidError(fmt::format("sink url must start with http:// or https://, got '{}'", options.url));
  }
  if (options.method.empty() || options.method.find_first_of(" \r\n") != std::string::npos) {
    throw InvalidError(fmt::format("sink method '{}' is not an HTTP method", options.method));
  }
  if (options.max_in_flight == 0) throw InvalidError("sink max_in_flight must be at least 1");
  return std::make_unique<HttpSink>(std::move(options));
}

}  // namespace pacer::sink
