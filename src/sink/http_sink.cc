#include "sink/http_sink.h"

#include <curl/curl.h>

#include <algorithm>
#include <ctime>
#include <memory>
#include <mutex>
#include <stdexcept>

#include <fmt/format.h>

namespace pacer::sink {
namespace {

constexpr std::size_t kMaxReasonBody = 200;

struct Transfer {
  CURL* easy = nullptr;
  std::uint64_t ticket = 0;
  std::string body;
  curl_slist* headers = nullptr;
  std::string retry_after;
  std::string response;  // the first bytes of the answer, for the reason
};

std::size_t onHeader(char* data, std::size_t size, std::size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::string_view line(data, size * n);
  constexpr std::string_view kName = "retry-after:";
  if (line.size() > kName.size()) {
    std::string lower(line.substr(0, kName.size()));
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    if (lower == kName) {
      std::string_view v = line.substr(kName.size());
      while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
      while (!v.empty() && (v.back() == '\r' || v.back() == '\n' || v.back() == ' ')) v.remove_suffix(1);
      t->retry_after = std::string(v);
    }
  }
  return size * n;
}

std::size_t onBody(char* data, std::size_t size, std::size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::size_t room = kMaxReasonBody > t->response.size() ? kMaxReasonBody - t->response.size() : 0;
  t->response.append(data, std::min(room, size * n));
  return size * n;
}

std::string urlEncode(const std::string& s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

void replaceAll(std::string& s, const std::string& what, const std::string& with) {
  for (std::size_t pos = s.find(what); pos != std::string::npos; pos = s.find(what, pos + with.size())) {
    s.replace(pos, what.size(), with);
  }
}

class HttpSink final : public SinkInterface {
 public:
  explicit HttpSink(HttpSinkOptions options) : options_(std::move(options)) {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    multi_ = curl_multi_init();
    if (multi_ == nullptr) throw std::runtime_error("curl_multi_init failed");
    curl_multi_setopt(multi_, CURLMOPT_MAX_TOTAL_CONNECTIONS, static_cast<long>(options_.max_in_flight));
  }

  ~HttpSink() override {
    for (Transfer* t : active_) {
      curl_multi_remove_handle(multi_, t->easy);
      release(t);
    }
    for (auto& t : pool_) curl_easy_cleanup(t->easy);
    curl_multi_cleanup(multi_);
  }

  bool submit(const Message& m, std::uint64_t ticket) override {
    if (active_.size() >= options_.max_in_flight) return false;
    Transfer* t = acquire();
    t->ticket = ticket;
    t->body = m.payload;
    t->retry_after.clear();
    t->response.clear();
    curl_slist* h = nullptr;
    for (const auto& [name, value] : options_.headers) h = curl_slist_append(h, fmt::format("{}: {}", name, value).c_str());
    h = curl_slist_append(h, fmt::format("Idempotency-Key: {}", m.id).c_str());
    h = curl_slist_append(h, fmt::format("Pacer-Campaign: {}", m.campaign).c_str());
    h = curl_slist_append(h, fmt::format("Content-Type: {}", options_.content_type).c_str());
    h = curl_slist_append(h, "Expect:");  // no 100-continue round trip
    t->headers = h;

    CURL* e = t->easy;
    curl_easy_reset(e);
    curl_easy_setopt(e, CURLOPT_URL, expandUrl(options_.url, m).c_str());
    curl_easy_setopt(e, CURLOPT_PRIVATE, t);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    if (options_.method == "POST") {
      curl_easy_setopt(e, CURLOPT_POST, 1L);
    } else {
      curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, options_.method.c_str());
    }
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, t->body.data());
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(t->body.size()));
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.connect_timeout.count()));
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(options_.total_timeout.count()));
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, onHeader);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, t);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, onBody);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, t);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, options_.http2 ? CURL_HTTP_VERSION_2TLS : CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);  // prefer multiplexing on an existing HTTP/2 connection
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, options_.verify_tls ? 1L : 0L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, options_.verify_tls ? 2L : 0L);
    if (!options_.ca_file.empty()) curl_easy_setopt(e, CURLOPT_CAINFO, options_.ca_file.c_str());
    curl_multi_add_handle(multi_, e);
    active_.push_back(t);
    return true;
  }

  void poll(std::vector<SendResult>& out) override {
    int running = 0;
    curl_multi_perform(multi_, &running);
    int left = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi_, &left)) {
      if (msg->msg != CURLMSG_DONE) continue;
      Transfer* t = nullptr;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &t);
      out.push_back(resultOf(*t, msg->data.result));
      curl_multi_remove_handle(multi_, t->easy);
      active_.erase(std::find(active_.begin(), active_.end(), t));
      release(t);
    }
  }

  std::size_t inFlight() const override { return active_.size(); }
  std::size_t maxInFlight() const override { return options_.max_in_flight; }

  void wait(Nanos max) override {
    if (active_.empty()) return;
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(max).count();
    int numfds = 0;
    curl_multi_poll(multi_, nullptr, 0, static_cast<int>(std::clamp<std::int64_t>(ms, 0, 1000)), &numfds);
  }

 private:
  SendResult resultOf(const Transfer& t, CURLcode code) const {
    SendResult r;
    r.ticket = t.ticket;
    if (code != CURLE_OK) {
      r.outcome = SendOutcome::kRetry;
      r.reason = code == CURLE_OPERATION_TIMEDOUT
                     ? fmt::format("timeout after {} ms: {}", options_.total_timeout.count(), curl_easy_strerror(code))
                     : fmt::format("connection error: {}", curl_easy_strerror(code));
      return r;
    }
    long status = 0;
    curl_easy_getinfo(t.easy, CURLINFO_RESPONSE_CODE, &status);
    r.status = static_cast<int>(status);
    r.outcome = classifyStatus(r.status);
    if (r.outcome == SendOutcome::kDelivered) return r;
    if (r.status == 429 || r.status == 503) r.retry_after = parseRetryAfter(t.retry_after, std::time(nullptr));
    r.reason = fmt::format("HTTP {}{}{}", r.status, t.response.empty() ? "" : ": ", t.response);
    return r;
  }

  Transfer* acquire() {
    if (!pool_.empty()) {
      Transfer* t = pool_.back().release();
      pool_.pop_back();
      return t;
    }
    auto* t = new Transfer;
    t->easy = curl_easy_init();
    if (t->easy == nullptr) {
      delete t;
      throw std::bad_alloc();
    }
    return t;
  }

  void release(Transfer* t) {
    curl_slist_free_all(t->headers);
    t->headers = nullptr;
    t->body.clear();
    pool_.emplace_back(t);
  }

  HttpSinkOptions options_;
  CURLM* multi_ = nullptr;
  std::vector<Transfer*> active_;
  std::vector<std::unique_ptr<Transfer>> pool_;
};

}  // namespace

SendOutcome classifyStatus(int status) noexcept {
  if (status >= 200 && status < 300) return SendOutcome::kDelivered;
  if (status == 408 || status == 429) return SendOutcome::kRetry;
  if (status >= 400 && status < 500) return SendOutcome::kPermanent;
  return SendOutcome::kRetry;  // 5xx, and anything unexpected
}

Nanos parseRetryAfter(const std::string& value, std::int64_t now_unix_s) noexcept {
  if (value.empty()) return Nanos{0};
  if (std::all_of(value.begin(), value.end(), [](unsigned char c) { return std::isdigit(c); })) {
    if (value.size() > 9) return std::chrono::seconds(999'999'999);
    return std::chrono::seconds(std::stoll(value));
  }
  const std::time_t at = curl_getdate(value.c_str(), nullptr);
  if (at < 0) return Nanos{0};
  return std::chrono::seconds(std::max<std::int64_t>(0, static_cast<std::int64_t>(at) - now_unix_s));
}

std::string expandUrl(const std::string& url_template, const Message& m) {
  std::string url = url_template;
  replaceAll(url, "{recipient}", urlEncode(m.recipient));
  replaceAll(url, "{campaign}", urlEncode(m.campaign));
  return url;
}

SinkInterfacePtr makeHttpSink(HttpSinkOptions options) {
  if (options.url.rfind("http://", 0) != 0 && options.url.rfind("https://", 0) != 0) {
    throw std::invalid_argument(fmt::format("sink url must start with http:// or https://, got '{}'", options.url));
  }
  if (options.method.empty() || options.method.find_first_of(" \r\n") != std::string::npos) {
    throw std::invalid_argument(fmt::format("sink method '{}' is not an HTTP method", options.method));
  }
  if (options.max_in_flight == 0) throw std::invalid_argument("sink max_in_flight must be at least 1");
  return std::make_unique<HttpSink>(std::move(options));
}

}  // namespace pacer::sink
