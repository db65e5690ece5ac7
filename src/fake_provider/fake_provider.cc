#include "fake_provider/fake_provider.h"

#include <httplib.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include <sys/socket.h>

#include <fmt/format.h>

#include "pacer/rate_limiter.h"
#include "pacer/time.h"

namespace pacer::fake {
namespace {

struct Request {
  std::int64_t at_ns;  // since start
  std::string campaign;
  std::string key;
  int status;
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

}  // namespace

struct FakeProvider::Impl {
  FakeProviderOptions options;
  httplib::Server server;
  std::thread thread;
  int port = 0;
  int listen_fd = -1;  // the listening socket, to widen its backlog after bind
  TimeSourcePtr clock = makeSteadyTimeSource();
  MonoTime started = clock->now();

  mutable std::mutex mu;  // guards everything below
  RateLimitingInterfacePtr quota;
  std::mt19937_64 rng;
  std::vector<Request> requests;

  void handle(const httplib::Request& req, httplib::Response& res) {
    // Test hooks: a request may ask for a given answer.
    const int forced = req.has_header("X-Fake-Status") ? std::atoi(req.get_header_value("X-Fake-Status").c_str()) : 0;
    const int latency = req.has_header("X-Fake-Latency-Ms")
                            ? std::atoi(req.get_header_value("X-Fake-Latency-Ms").c_str())
                            : options.latency_ms;
    const bool force_close = req.has_header("X-Fake-Close");
    if (latency > 0) std::this_thread::sleep_for(std::chrono::milliseconds(latency));

    int status = 200;
    bool close = force_close;
    const MonoTime now = clock->now();
    {
      std::lock_guard<std::mutex> lock(mu);
      const double roll = std::uniform_real_distribution<double>(0, 1)(rng);
      if (forced != 0) {
        status = forced;
      } else if (!close && roll < options.close_rate) {
        close = true;
      } else if (roll < options.close_rate + options.fail_rate) {
        status = 500;
      } else if (quota && !quota->canDoWork(now)) {
        status = 429;
      }
      requests.push_back(Request{(now - started).count(), req.get_header_value("Pacer-Campaign"),
                                 req.get_header_value("Idempotency-Key"), close ? 0 : status});
    }
    if (close) {
      // Headers promise a body that never comes: the client sees the
      // connection drop mid-response.
      res.set_header("Connection", "close");
      res.set_content_provider(
          64, "text/plain", [](std::size_t, std::size_t, httplib::DataSink&) { return false; });
      return;
    }
    res.status = status;
    if (status == 429 || status == 503) {
      const std::string value =
          req.has_header("X-Fake-Retry-After") ? req.get_header_value("X-Fake-Retry-After")
          : options.retry_after_as_date
              ? httpDate(std::chrono::system_clock::now() +
                         std::chrono::seconds(static_cast<long>(std::ceil(options.retry_after_s))))
              : fmt::format("{:g}", options.retry_after_s);
      res.set_header("Retry-After", value);
    }
    res.set_content(status / 100 == 2 ? "{\"ok\":true}" : fmt::format("{{\"error\":{}}}", status), "application/json");
  }
};

FakeProvider::FakeProvider(FakeProviderOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = options;
  impl_->rng.seed(options.seed);
  setQuota(options.quota_per_s, options.quota_burst);
  const int threads = std::max(1, options.threads);
  impl_->server.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<std::size_t>(threads)); };
  impl_->server.set_keep_alive_max_count(1000000);
  impl_->server.set_keep_alive_timeout(30);
  impl_->server.set_tcp_nodelay(true);  // header and body go in two writes: no Nagle delay between them
  Impl* impl = impl_.get();
  // Remember the listening socket (this hook runs only for it) so start() can
  // widen its backlog; keep the library's own options (SO_REUSEADDR...).
  impl_->server.set_socket_options([impl](socket_t sock) {
    httplib::default_socket_options(sock);
    impl->listen_fd = sock;
  });
  impl_->server.Get("/report", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(report().dump(), "application/json");
  });
  impl_->server.Post("/admin/quota", [this](const httplib::Request& req, httplib::Response& res) {
    const double rate = req.has_param("rate") ? std::atof(req.get_param_value("rate").c_str()) : 0;
    const double burst = req.has_param("burst") ? std::atof(req.get_param_value("burst").c_str()) : 0;
    setQuota(rate, burst);
    res.set_content("ok\n", "text/plain");
  });
  auto any = [impl](const httplib::Request& req, httplib::Response& res) { impl->handle(req, res); };
  impl_->server.Post(".*", any);
  impl_->server.Put(".*", any);
  impl_->server.Patch(".*", any);
  impl_->server.Get(".*", any);
}

FakeProvider::~FakeProvider() { stop(); }

int FakeProvider::start() {
  impl_->port = impl_->options.port == 0 ? impl_->server.bind_to_any_port(impl_->options.host)
                                         : (impl_->server.bind_to_port(impl_->options.host, impl_->options.port)
                                                ? impl_->options.port
                                                : -1);
  if (impl_->port <= 0) throw std::runtime_error(fmt::format("cannot listen on {}:{}", impl_->options.host, impl_->options.port));
  // Debian's cpp-httplib is a compiled library that listens with a backlog of
  // 5. A sink opening 50 connections at once overflows that on a busy machine,
  // and each dropped SYN costs the client 1 s, then 3 s more. A provider
  // stand-in must take a burst of connections like a real server: listen()
  // again on the same socket only widens the queue.
  if (impl_->listen_fd >= 0 && ::listen(impl_->listen_fd, 1024) != 0)
    throw std::runtime_error(fmt::format("cannot widen the listen backlog on port {}", impl_->port));
  impl_->thread = std::thread([this] { impl_->server.listen_after_bind(); });
  // stop() before the accept loop runs would be lost and leave it running:
  // return only once it is serving.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!impl_->server.is_running()) {
    if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error("the HTTP server did not start");
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return impl_->port;
}

void FakeProvider::stop() {
  if (impl_->thread.joinable()) {
    impl_->server.stop();
    impl_->thread.join();
  }
}

void FakeProvider::setQuota(double per_s, double burst) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (per_s <= 0) {
    impl_->quota.reset();
    return;
  }
  const RateLimit limit{per_s, burst > 0 ? burst : std::max(1.0, per_s)};
  if (impl_->quota) {
    impl_->quota->setLimit(limit, impl_->clock->now());
  } else {
    impl_->quota = makeLimiter(LimiterOptions{}, limit, impl_->clock->now());
  }
}

nlohmann::json FakeProvider::report() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  struct Stats {
    std::uint64_t requests = 0;
    std::uint64_t accepted = 0;
    std::set<std::string> keys;
    std::map<std::string, int> accepted_keys;
    std::vector<std::int64_t> times;
    std::vector<std::int64_t> accepted_times;
  };
  std::map<std::string, Stats> by_campaign;
  for (const Request& r : impl_->requests) {
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
    out << fmt::format("{:.3f} {} {} {}\n", static_cast<double>(r.at_ns) / 1e6, r.campaign.empty() ? "-" : r.campaign,
                       r.key.empty() ? "-" : r.key, r.status);
  }
}

}  // namespace pacer::fake
