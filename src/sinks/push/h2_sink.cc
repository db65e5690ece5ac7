// The h2 transport: requests from the codec, spread over the origin's
// connections (H2Link), answers back through the codec. One thread, poll(2).
#include "h2_sink.h"

#include <fmt/format.h>
#include <poll.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <unordered_map>
#include <vector>

#include "h2_link.h"
#include "pacer/error.h"

namespace pacer::sink {
namespace {

// A request sent again this many times because the server did not process
// it (GOAWAY, REFUSED_STREAM) then fails as a fault, so that a server that
// refuses everything cannot keep it here for ever. Which requests a server
// takes before its GOAWAY is its choice (nghttp2 servers see them complete in
// the order the client's DATA frames go out, not in stream order), so under
// frequent GOAWAYs (every 50 requests in integration.pacerd_apns_goaway) one
// request may be moved many times; 5 was too few there.
constexpr int kMaxMoves = 20;
constexpr std::uint32_t kRefusedStream = 0x7;  // HTTP/2 REFUSED_STREAM (RFC 9113 §7)

struct Origin {
  std::string scheme, host, port;
  std::string key() const { return scheme + "://" + host + ":" + port; }
};

// Splits "https://host:port/path" into its origin and path; false if it is not one.
bool splitUrl(const std::string& url, Origin& origin, std::string& path) {
  const std::size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return false;
  origin.scheme = url.substr(0, scheme_end);
  const std::size_t host_start = scheme_end + 3;
  const std::size_t path_start = url.find('/', host_start);
  const std::string authority = url.substr(host_start, path_start - host_start);
  path = path_start == std::string::npos ? "/" : url.substr(path_start);
  if (!authority.empty() && authority.front() == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string::npos) return false;
    origin.host = authority.substr(1, close - 1);
    origin.port = close + 1 < authority.size() && authority[close + 1] == ':' ? authority.substr(close + 2) : "";
  } else {
    const std::size_t colon = authority.rfind(':');
    origin.host = authority.substr(0, colon);
    origin.port = colon == std::string::npos ? "" : authority.substr(colon + 1);
  }
  if (origin.port.empty()) origin.port = origin.scheme == "https" ? "443" : "80";
  return !origin.host.empty();
}

struct Pending {
  std::uint64_t ticket = 0;
  bool own = false;  // the codec's own request (a credential)
  HttpRequest request;
  MonoTime started{};
  MonoTime deadline{};
  int moves = 0;
  H2Link* link = nullptr;
};

class H2PushSink final : public SinkInterface {
 public:
  explicit H2PushSink(H2SinkOptions o) : options_(std::move(o)) {
    tls_ = makeH2TlsContext(options_.ca_file, options_.verify_tls);
  }
  ~H2PushSink() override {
    if (options_.log)
      options_.log(fmt::format("event=push_h2_stats connections_opened={} resets_sent={} goaways={} moved={}",
                               stats_.connections_opened, stats_.resets_sent + resetsOfOpenLinks(), stats_.goaways,
                               stats_.moved_not_processed));
    links_.clear();
    SSL_CTX_free(tls_);
  }

  bool submit(const Message& m, std::uint64_t ticket) override {
    if (inFlight() >= options_.max_in_flight) return false;
    const WallTime wall = wallNow();
    if (!options_.codec->ready(wall, waiting_why_)) {
      if (options_.log && waiting_why_ != last_logged_why_) options_.log(waiting_why_);
      last_logged_why_ = waiting_why_;
      return false;
    }
    last_logged_why_.clear();
    Pending p;
    p.ticket = ticket;
    SendResult refused;
    if (!options_.codec->build(m, wall, p.request, refused)) {
      refused.ticket = ticket;
      done_.push_back(std::move(refused));
      return true;
    }
    start(std::move(p));
    return true;
  }

  void poll(std::vector<SendResult>& out) override {
    for (SendResult& r : done_) out.push_back(std::move(r));
    done_.clear();
    const MonoTime now = monoNow();
    if (!own_in_flight_) startOwnRequest();
    expire(now);
    for (auto& [key, links] : links_) {
      // By index: collecting may move requests to a new link of this origin,
      // appended to `links` (each link stays put: the vector holds pointers).
      for (std::size_t i = 0; i < links.size(); ++i) {
        H2Link& link = *links[i];
        link.io(now);
        collect(link, now, out);
      }
    }
    prune();
  }

  std::size_t inFlight() const override { return pending_.size() - (own_in_flight_ ? 1 : 0) + done_.size(); }
  std::size_t maxInFlight() const override { return options_.max_in_flight; }

  void wait(Nanos max) override {
    if (pending_.empty() || !done_.empty()) return;
    std::vector<pollfd> fds;
    for (auto& [key, links] : links_)
      for (auto& link : links)
        if (!link->closed()) fds.push_back(pollfd{link->fd(), link->events(), 0});
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(max).count();
    ::poll(fds.data(), fds.size(), static_cast<int>(std::clamp<std::int64_t>(ms, 0, 1000)));
  }

 private:
  static MonoTime monoNow() { return MonoTime(std::chrono::steady_clock::now().time_since_epoch()); }
  static WallTime wallNow() {
    return std::chrono::time_point_cast<std::chrono::milliseconds>(std::chrono::system_clock::now());
  }

  std::uint64_t resetsOfOpenLinks() const {
    std::uint64_t n = 0;
    for (const auto& [key, links] : links_)
      for (const auto& link : links) n += link->session().resetsSent();
    return n;
  }

  void startOwnRequest() {
    Pending p;
    if (!options_.codec->ownRequest(wallNow(), p.request)) return;
    p.own = true;
    own_in_flight_ = true;
    start(std::move(p));
  }

  // Registers `p` and hands it to a connection of its origin.
  void start(Pending&& p) {
    const std::uint64_t tag = next_tag_++;
    p.started = monoNow();
    p.deadline = p.started + options_.timeout;
    pending_.emplace(tag, std::move(p));
    dispatch(tag);
  }

  void dispatch(std::uint64_t tag) {
    Pending& p = pending_.at(tag);
    Origin origin;
    push::H2Request r;
    r.tag = tag;
    if (!splitUrl(p.request.url, origin, r.path)) {
      fail(tag, SendOutcome::kPermanent, fmt::format("not an absolute URL: '{}'", p.request.url));
      return;
    }
    for (const std::string& line : p.request.headers) {
      const std::size_t colon = line.find(':');
      if (colon == std::string::npos || colon + 1 == line.size()) continue;  // "Expect:" style: nothing to send
      std::string name = line.substr(0, colon);
      std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
      std::size_t v = colon + 1;
      while (v < line.size() && line[v] == ' ') ++v;
      r.headers.emplace_back(std::move(name), line.substr(v));
    }
    r.body = p.request.body;
    H2Link& link = linkFor(origin);
    p.link = &link;
    if (!link.session().submit(std::move(r))) {
      fail(tag, SendOutcome::kFault, fmt::format("connection error: {}", link.session().why()));
    }
  }

  // The least loaded usable connection of the origin, opening one while
  // there are fewer than options_.connections.
  H2Link& linkFor(const Origin& origin) {
    auto& links = links_[origin.key()];
    H2Link* best = nullptr;
    std::size_t usable = 0;
    for (auto& link : links) {
      if (!link->usable()) continue;
      ++usable;
      if (best == nullptr || link->load() < best->load()) best = link.get();
    }
    if (best != nullptr && (usable >= options_.connections || best->load() == 0)) return *best;
    H2LinkOptions lo;
    lo.host = origin.host;
    lo.port = origin.port;
    lo.connect_timeout = options_.connect_timeout;
    lo.session.authority = origin.port == "443" ? origin.host : origin.host + ":" + origin.port;
    lo.session.scheme = origin.scheme;
    lo.session.max_streams = static_cast<std::uint32_t>(options_.max_streams);
    lo.session.connection_window = options_.connection_window;
    lo.session.max_body_bytes = kCodecBodyBytes;
    lo.session.ping_interval = options_.ping_interval;
    links.push_back(std::make_unique<H2Link>(lo, tls_, monoNow()));
    ++stats_.connections_opened;
    return *links.back();
  }

  void collect(H2Link& link, MonoTime now, std::vector<SendResult>& out) {
    answers_.clear();
    failures_.clear();
    link.session().takeAnswers(answers_);
    link.session().takeFailures(failures_);
    for (push::H2Answer& a : answers_) answered(a, now, out);
    // Moved only on the server's word (its GOAWAY, or REFUSED_STREAM): a
    // connection that failed or ended without one may fail the same way
    // again at once, so its requests are faults and back off in the worker.
    const bool goaway = link.session().goawayReceived();
    for (push::H2Failure& f : failures_) failed(f, goaway || f.error_code == kRefusedStream, out);
  }

  void answered(push::H2Answer& a, MonoTime now, std::vector<SendResult>& out) {
    auto it = pending_.find(a.tag);
    if (it == pending_.end()) return;
    Pending& p = it->second;
    if (p.own) {
      own_in_flight_ = false;
      options_.codec->ownAnswer(a.status, a.body, wallNow());
    } else {
      const HeaderLookup header = [&a](const char* name) {
        std::string lower(name);
        std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
        return a.header(lower);
      };
      SendResult r = options_.codec->classify(a.status, a.body, header, p.request, wallNow());
      r.ticket = p.ticket;
      r.latency = now - p.started;
      out.push_back(std::move(r));
    }
    pending_.erase(it);
  }

  void failed(push::H2Failure& f, bool server_said, std::vector<SendResult>& out) {
    auto it = pending_.find(f.tag);
    if (it == pending_.end()) return;
    if (f.kind == push::H2FailureKind::kNotProcessed && server_said && it->second.moves < kMaxMoves) {
      ++it->second.moves;
      ++stats_.moved_not_processed;
      dispatch(f.tag);  // safe: the server says it never acted on it
      return;
    }
    fail(f.tag, SendOutcome::kFault, f.reason);
    for (SendResult& r : done_) out.push_back(std::move(r));
    done_.clear();
  }

  // Finishes `tag` with `outcome`; the result goes out with the next poll().
  void fail(std::uint64_t tag, SendOutcome outcome, std::string reason) {
    auto it = pending_.find(tag);
    if (it == pending_.end()) return;
    if (it->second.own) {
      own_in_flight_ = false;
      options_.codec->ownAnswer(0, reason, wallNow());
    } else {
      SendResult r;
      r.ticket = it->second.ticket;
      r.outcome = outcome;
      r.reason = std::move(reason);
      done_.push_back(std::move(r));
    }
    pending_.erase(it);
  }

  void expire(MonoTime now) {
    if (now < next_expiry_check_) return;
    next_expiry_check_ = now + std::chrono::milliseconds(50);
    expired_.clear();
    for (auto& [tag, p] : pending_)
      if (p.deadline <= now) expired_.push_back(tag);
    for (std::uint64_t tag : expired_) {
      Pending& p = pending_.at(tag);
      const std::string why = fmt::format("timeout after {} ms", options_.timeout.count());
      if (p.link == nullptr || !p.link->session().cancel(tag, why)) fail(tag, SendOutcome::kFault, why);
    }
  }

  // Drops connections that closed once their failures were collected.
  void prune() {
    for (auto& [key, links] : links_) {
      links.erase(std::remove_if(links.begin(), links.end(),
                                 [this](const std::unique_ptr<H2Link>& l) {
                                   if (!l->closed()) return false;
                                   stats_.resets_sent += l->session().resetsSent();
                                   if (l->session().goawayReceived()) ++stats_.goaways;
                                   for (auto& [tag, p] : pending_)
                                     if (p.link == l.get()) p.link = nullptr;
                                   return true;
                                 }),
                  links.end());
    }
  }

  H2SinkOptions options_;
  SSL_CTX* tls_ = nullptr;
  std::map<std::string, std::vector<std::unique_ptr<H2Link>>> links_;  // by origin
  std::unordered_map<std::uint64_t, Pending> pending_;                  // by tag
  std::uint64_t next_tag_ = 1;
  bool own_in_flight_ = false;
  std::vector<SendResult> done_;
  std::vector<push::H2Answer> answers_;
  std::vector<push::H2Failure> failures_;
  std::vector<std::uint64_t> expired_;
  MonoTime next_expiry_check_{};
  H2SinkStats stats_;
  std::string waiting_why_;
  std::string last_logged_why_;
};

}  // namespace

SinkInterfacePtr makeH2PushSink(H2SinkOptions options) {
  if (!options.codec) throw InvalidError("the h2 push transport needs a codec");
  if (options.max_in_flight == 0) throw InvalidError("sink max_in_flight must be at least 1");
  return std::make_unique<H2PushSink>(std::move(options));
}

}  // namespace pacer::sink
