#include "pacer/fakes/fake_provider.h"
#include "pacer/error.h"

#include <fmt/format.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <thread>

#include "pacer/rate_limiter.h"
#include "pacer/time.h"

namespace pacer::fake {
namespace {

// A provider stand-in must take a burst of connections like a real server: a
// sink opening 50 connections at once overflowed a backlog of 5 on a busy CI
// machine, and each dropped SYN costs the client 1 s, then 3 s more.
constexpr int kListenBacklog = 1024;
// Idle keep-alive connections are closed after this long, as before.
constexpr unsigned kIdleTimeoutS = 30;
// pacerd keeps up to --in-flight connections open (1,000 by default); the
// library's own default is sized for select().
constexpr unsigned kMaxConnections = 16384;
// A dropped connection promises this many body bytes and sends a few of them.
constexpr std::uint64_t kPromisedBody = 64;
constexpr std::size_t kSentBeforeClose = 8;
constexpr std::string_view kOkBody = "{\"ok\":true}";

struct Request {
  std::int64_t at_ns;  // since start
  std::string campaign;
  std::string key;
  int status;
  std::string expires_at;  // the Pacer-Expires-At header; empty: none
};

std::uint64_t maxInWindow(std::vector<std::int64_t> times, std::int64_t window_ns) {
  std::sort(times.begin(), times.end());
  std::uint64_t best = 0;
  std::size_t lo = 0;
  for (std::size_t hi = 0; hi < times.size(); ++hi) {
    while (times[hi] - times[lo] >= window_ns) ++lo;
    best = std::max<std::uint64_t>(best, hi - lo + 1);
  }
  return best;
}

std::string httpDate(std::chrono::system_clock::time_point t) {
  const std::time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return buf;
}

const char* header(MHD_Connection* c, const char* name) {
  return MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
}

// State a request needs across the library's calls. Most requests need none
// and get kNothingToKeep instead, so the common path allocates nothing.
struct Exchange {
  bool waited = false;                // its added latency has passed
  MHD_PostProcessor* form = nullptr;  // /admin/quota with a form body
  std::map<std::string, std::string> fields;
  ~Exchange() {
    if (form != nullptr) MHD_destroy_post_processor(form);
  }
};
char kNothingToKeep;

MHD_Result onFormField(void* cls, MHD_ValueKind, const char* key, const char*, const char*, const char*,
                       const char* data, std::uint64_t, std::size_t size) {
  static_cast<Exchange*>(cls)->fields[key].append(data, size);
  return MHD_YES;
}

// The body of a dropped connection: a few bytes, then an error, on which the
// library closes the connection mid-response.
ssize_t dropMidBody(void*, std::uint64_t pos, char* buf, std::size_t max) {
  if (pos > 0 || max < kSentBeforeClose) return MHD_CONTENT_READER_END_WITH_ERROR;
  std::memset(buf, 'x', kSentBeforeClose);
  return static_cast<ssize_t>(kSentBeforeClose);
}

}  // namespace

// libmicrohttpd with one epoll thread serves every connection: a request costs
// a read and a write on a ready socket, and the answer is written in the same
// turn that read the request. (The thread-per-connection server it replaced
// spent two thirds of its time in the kernel switching 64 threads and polling
// each socket before every read and write.) Added latency suspends the
// connection and a timer thread resumes it, so a slow answer never holds up
// another request.
struct FakeProvider::Impl {
  FakeProviderOptions options;
  TimeSourcePtr clock = makeSteadyTimeSource();
  MonoTime started = clock->now();
  MHD_Daemon* daemon = nullptr;
  MHD_Response* ok = nullptr;  // every plain 200 shares it
  int port = 0;

  // Suspended connections and when to resume them (the latency hook).
  std::mutex timer_mu;
  std::condition_variable timer_cv;
  std::multimap<std::chrono::steady_clock::time_point, MHD_Connection*> due;
  bool stopping = false;
  std::thread timer;

  mutable std::mutex mu;  // guards everything below (the server's thread, report(), setQuota())
  RateLimitingInterfacePtr quota;
  std::deque<MonoTime> window;  // accepted requests of the last second (window_per_s)
  std::mt19937_64 rng;
  std::vector<Request> requests;

  static MHD_Result onRequest(void* cls, MHD_Connection* c, const char* url, const char* method, const char*,
                              const char* data, std::size_t* size, void** state) {
    return static_cast<Impl*>(cls)->route(c, url, method, data, size, state);
  }

  static void onCompleted(void*, MHD_Connection*, void** state, MHD_RequestTerminationCode) {
    if (*state != nullptr && *state != &kNothingToKeep) delete static_cast<Exchange*>(*state);
    *state = nullptr;
  }

  // The library calls this once with the headers, once per piece of body,
  // and once more at the end, where the answer is given.
  MHD_Result route(MHD_Connection* c, const char* url, const char* method, const char* data, std::size_t* size,
                   void** state) {
    const bool admin = std::strcmp(method, "POST") == 0 && std::strcmp(url, "/admin/quota") == 0;
    if (*state == nullptr) {
      if (admin) {
        auto* e = new Exchange;
        e->form = MHD_create_post_processor(c, 1024, onFormField, e);  // null: not a form
        *state = e;
      } else {
        *state = &kNothingToKeep;
      }
      return MHD_YES;
    }
    if (*size != 0) {
      if (admin && static_cast<Exchange*>(*state)->form != nullptr) {
        MHD_post_process(static_cast<Exchange*>(*state)->form, data, *size);
      }
      *size = 0;  // the payload itself is not kept
      return MHD_YES;
    }
    if (admin) return adminQuota(c, *static_cast<Exchange*>(*state));
    if (std::strcmp(method, "GET") == 0 && std::strcmp(url, "/report") == 0) {
      return send(c, 200, reportJson().dump(), "application/json");
    }
    const char* latency_header = header(c, "X-Fake-Latency-Ms");
    const int latency = latency_header != nullptr ? std::atoi(latency_header) : options.latency_ms;
    if (latency > 0 && (*state == &kNothingToKeep || !static_cast<Exchange*>(*state)->waited)) {
      if (*state == &kNothingToKeep) *state = new Exchange;
      static_cast<Exchange*>(*state)->waited = true;
      std::lock_guard<std::mutex> lock(timer_mu);
      if (!stopping) {  // stop() resumes what is suspended; nothing may be suspended after it
        MHD_suspend_connection(c);
        due.emplace(std::chrono::steady_clock::now() + std::chrono::milliseconds(latency), c);
        timer_cv.notify_one();
        return MHD_YES;
      }
    }
    return answer(c);
  }

  // rate and burst come from the query string or a form body (curl -d).
  MHD_Result adminQuota(MHD_Connection* c, Exchange& e) {
    auto field = [&](const char* name) {
      const auto it = e.fields.find(name);
      if (it != e.fields.end()) return std::atof(it->second.c_str());
      const char* v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
      return v != nullptr ? std::atof(v) : 0.0;
    };
    setQuota(field("rate"), field("burst"));
    return send(c, 200, "ok\n", "text/plain");
  }

  // Decides the answer (after any added latency, as the quota sees the
  // request then), records it and sends it.
  MHD_Result answer(MHD_Connection* c) {
    const char* forced_header = header(c, "X-Fake-Status");
    const int forced = forced_header != nullptr ? std::atoi(forced_header) : 0;
    const char* campaign = header(c, "Pacer-Campaign");
    const char* key = header(c, "Idempotency-Key");
    const char* expires_at = header(c, "Pacer-Expires-At");
    int status = 200;
    bool close = header(c, "X-Fake-Close") != nullptr;
    const MonoTime now = clock->now();
    {
      std::lock_guard<std::mutex> lock(mu);
      const double roll = std::uniform_real_distribution<double>(0, 1)(rng);
      if (forced != 0) {
        status = forced;
      } else if (!close && roll < options.close_rate) {
        close = true;
      } else if (roll < options.close_rate + options.fail_rate) {
        status = options.fail_status;
      } else if (quota && !quota->canDoWork(now)) {
        status = 429;
      } else if (options.window_per_s > 0) {
        while (!window.empty() && now - window.front() >= std::chrono::seconds(1)) window.pop_front();
        if (window.size() >= static_cast<std::size_t>(options.window_per_s))
          status = 429;
        else
          window.push_back(now);
      }
      requests.push_back(Request{(now - started).count(), campaign != nullptr ? campaign : "",
                                 key != nullptr ? key : "", close ? 0 : status,
                                 expires_at != nullptr ? expires_at : ""});
    }
    if (close) {
      // Headers promise a body that never comes whole: the client sees the
      // connection drop mid-response.
      MHD_Response* r = MHD_create_response_from_callback(kPromisedBody, kPromisedBody, dropMidBody, nullptr, nullptr);
      MHD_add_response_header(r, "Content-Type", "text/plain");
      MHD_add_response_header(r, "Connection", "close");
      const MHD_Result queued = MHD_queue_response(c, 200, r);
      MHD_destroy_response(r);
      return queued;
    }
    if (status == 200) return MHD_queue_response(c, 200, ok);
    std::string retry_after;
    // 429 always names a pause; 503 only when a request asks for one.
    const char* forced_retry = header(c, "X-Fake-Retry-After");
    if (status == 503 && forced_retry != nullptr) {
      retry_after = forced_retry;
    } else if (status == 429) {
      retry_after = forced_retry != nullptr ? std::string(forced_retry)
                    : options.retry_after_as_date
                        ? httpDate(std::chrono::system_clock::now() +
                                   std::chrono::seconds(static_cast<long>(std::ceil(options.retry_after_s))))
                        : fmt::format("{:g}", options.retry_after_s);
    }
    const std::string body = status / 100 == 2 ? std::string(kOkBody) : fmt::format("{{\"error\":{}}}", status);
    return send(c, status, body, "application/json", retry_after);
  }

  static MHD_Result send(MHD_Connection* c, int status, std::string_view body, const char* type,
                         const std::string& retry_after = {}) {
    MHD_Response* r =
        MHD_create_response_from_buffer(body.size(), const_cast<char*>(body.data()), MHD_RESPMEM_MUST_COPY);
    if (r == nullptr) return MHD_NO;
    MHD_add_response_header(r, "Content-Type", type);
    if (!retry_after.empty()) MHD_add_response_header(r, "Retry-After", retry_after.c_str());
    const MHD_Result queued = MHD_queue_response(c, static_cast<unsigned>(status), r);
    MHD_destroy_response(r);
    return queued;
  }

  // Resumes each suspended connection when its latency has passed.
  void runTimer() {
    std::unique_lock<std::mutex> lock(timer_mu);
    while (!stopping) {
      if (due.empty()) {
        timer_cv.wait(lock);
        continue;
      }
      const auto next = due.begin()->first;
      if (std::chrono::steady_clock::now() < next) {
        timer_cv.wait_until(lock, next);
        continue;
      }
      std::vector<MHD_Connection*> ready;
      while (!due.empty() && due.begin()->first <= std::chrono::steady_clock::now()) {
        ready.push_back(due.begin()->second);
        due.erase(due.begin());
      }
      lock.unlock();
      for (MHD_Connection* c : ready) MHD_resume_connection(c);
      lock.lock();
    }
  }

  void setQuota(double per_s, double burst) {
    std::lock_guard<std::mutex> lock(mu);
    if (per_s <= 0) {
      quota.reset();
      return;
    }
    const RateLimit limit{per_s, burst > 0 ? burst : std::max(1.0, per_s)};
    if (quota) {
      quota->setLimit(limit, clock->now());
    } else {
      quota = makeLimiter(LimiterOptions{}, limit, clock->now());
    }
  }

  nlohmann::json reportJson() const;
};

FakeProvider::FakeProvider(FakeProviderOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = options;
  impl_->rng.seed(options.seed);
  setQuota(options.quota_per_s, options.quota_burst);
}

FakeProvider::~FakeProvider() { stop(); }

namespace {

// Binds host:port (port 0: the kernel picks) with the backlog above; -1 on failure.
int listenOn(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) return -1;
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int on = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, kListenBacklog) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  return fd;
}

int boundPort(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return -1;
  if (addr.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  return ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
}

}  // namespace

int FakeProvider::start() {
  Impl& m = *impl_;
  if (m.daemon != nullptr) throw std::logic_error("the fake provider is already started");
  // Listening with our own backlog before the library takes the socket over.
  const int fd = listenOn(m.options.host, m.options.port);
  if (fd < 0) throw Error(ErrorKind::kUnavailable, fmt::format("cannot listen on {}:{}", m.options.host, m.options.port));
  m.port = boundPort(fd);
  m.ok = MHD_create_response_from_buffer(kOkBody.size(), const_cast<char*>(kOkBody.data()), MHD_RESPMEM_PERSISTENT);
  MHD_add_response_header(m.ok, "Content-Type", "application/json");
  m.stopping = false;
  m.daemon = MHD_start_daemon(MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME, 0, nullptr, nullptr,
                              Impl::onRequest, &m, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_TIMEOUT,
                              kIdleTimeoutS, MHD_OPTION_CONNECTION_LIMIT, kMaxConnections, MHD_OPTION_NOTIFY_COMPLETED,
                              Impl::onCompleted, &m, MHD_OPTION_END);
  if (m.daemon == nullptr) {
    ::close(fd);
    MHD_destroy_response(m.ok);
    m.ok = nullptr;
    throw Error(ErrorKind::kUnavailable, fmt::format("cannot serve HTTP on port {}", m.port));
  }
  m.timer = std::thread([&m] { m.runTimer(); });
  return m.port;
}

void FakeProvider::stop() {
  Impl& m = *impl_;
  if (m.daemon == nullptr) return;
  // The library refuses to stop with a suspended connection: resume them all
  // (they are answered at once) and suspend no more.
  std::vector<MHD_Connection*> suspended;
  {
    std::lock_guard<std::mutex> lock(m.timer_mu);
    m.stopping = true;
    for (const auto& [when, c] : m.due) suspended.push_back(c);
    m.due.clear();
  }
  m.timer_cv.notify_one();
  m.timer.join();
  for (MHD_Connection* c : suspended) MHD_resume_connection(c);
  MHD_stop_daemon(m.daemon);  // closes the listening socket and every connection
  m.daemon = nullptr;
  MHD_destroy_response(m.ok);
  m.ok = nullptr;
}

void FakeProvider::setQuota(double per_s, double burst) { impl_->setQuota(per_s, burst); }

nlohmann::json FakeProvider::report() const { return impl_->reportJson(); }

nlohmann::json FakeProvider::Impl::reportJson() const {
  std::lock_guard<std::mutex> lock(mu);
  struct Stats {
    std::uint64_t requests = 0;
    std::uint64_t accepted = 0;
    std::set<std::string> keys;
    std::map<std::string, int> accepted_keys;
    std::vector<std::int64_t> times;
    std::vector<std::int64_t> accepted_times;
  };
  std::map<std::string, Stats> by_campaign;
  for (const Request& r : requests) {
    for (const std::string& c : {r.campaign.empty() ? std::string("(none)") : r.campaign, std::string("(all)")}) {
      Stats& s = by_campaign[c];
      ++s.requests;
      s.keys.insert(r.key);
      s.times.push_back(r.at_ns);
      if (r.status / 100 == 2) {
        ++s.accepted;
        ++s.accepted_keys[r.key];
        s.accepted_times.push_back(r.at_ns);
      }
    }
  }
  nlohmann::json out = nlohmann::json::object();
  for (auto& [campaign, s] : by_campaign) {
    std::uint64_t duplicates = 0;
    for (const auto& [key, n] : s.accepted_keys) duplicates += static_cast<std::uint64_t>(n - 1);
    out[campaign] = {{"requests", s.requests},
                     {"accepted", s.accepted},
                     {"distinct_keys", s.keys.size()},
                     {"duplicates", duplicates},
                     {"max_requests_1s", maxInWindow(s.times, 1'000'000'000)},
                     {"max_accepted_1s", maxInWindow(s.accepted_times, 1'000'000'000)}};
  }
  return out;
}

void FakeProvider::writeRecord(const std::string& path) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  std::ofstream out(path);
  for (const Request& r : impl_->requests) {
    out << fmt::format("{:.3f} {} {} {} {}\n", static_cast<double>(r.at_ns) / 1e6,
                       r.campaign.empty() ? "-" : r.campaign, r.key.empty() ? "-" : r.key, r.status,
                       r.expires_at.empty() ? "-" : r.expires_at);
  }
}

}  // namespace pacer::fake
