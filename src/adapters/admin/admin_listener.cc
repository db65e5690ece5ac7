// AdminServer on libmicrohttpd: one internal thread (epoll), the slow-client
// guard, request bodies, answers given later (suspended connections) and
// Server-Sent Events (EventHub, event_hub.cc, suspended between frames). Nothing here
// blocks the thread: a suspended connection costs no wake-ups until another
// thread resumes it.
#include <fmt/format.h>
#include <microhttpd.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <list>
#include <map>
#include <set>
#include <thread>

#include "event_hub_impl.h"
#include "pacer/admin/admin_server.h"
#include "pacer/log_limiter.h"
#include "pending.h"
#include "socket_address.h"
#include "tarpit.h"
#include "token_guard.h"

namespace pacer::admin {

namespace {

// One HTTP request.
struct Exchange {
  std::string body;
  bool too_large = false;
  std::shared_ptr<Pending> pending;
};

// One TCP connection, for the slow-client guard.
struct Slot {
  MHD_Connection* connection = nullptr;
  std::list<Slot*>::iterator at;
  bool waiting = false;    // no request in progress
  bool shortened = false;  // its timeout is the guard's 1 s
};

void respond(MHD_Connection* c, const AdminResponse& a) {
  MHD_Response* r =
      MHD_create_response_from_buffer(a.body.size(), const_cast<char*>(a.body.data()), MHD_RESPMEM_MUST_COPY);
  if (r == nullptr) return;
  MHD_add_response_header(r, "Content-Type", a.content_type.c_str());
  MHD_add_response_header(r, "Cache-Control", a.cache_control.c_str());
  MHD_add_response_header(r, "Content-Security-Policy", kContentSecurityPolicy);
  MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
  MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
  if (!a.allow.empty()) MHD_add_response_header(r, "Allow", a.allow.c_str());
  if (!a.location.empty()) MHD_add_response_header(r, "Location", a.location.c_str());
  if (a.www_authenticate) MHD_add_response_header(r, "WWW-Authenticate", "Bearer realm=\"pacerd\"");
  if (a.retry_after_s > 0) MHD_add_response_header(r, "Retry-After", std::to_string(a.retry_after_s).c_str());
  if (!a.content_encoding.empty()) {
    MHD_add_response_header(r, "Content-Encoding", a.content_encoding.c_str());
    MHD_add_response_header(r, "Vary", "Accept-Encoding");
  }
  MHD_queue_response(c, static_cast<unsigned>(a.status), r);
  MHD_destroy_response(r);
}

AdminResponse plain(int status, std::string body) {
  return AdminResponse{status, "text/plain; charset=utf-8", std::move(body), {}};
}

// Paths reach the routes as sent: each route decodes the segments it takes
// (a campaign id may hold an encoded '/').
std::size_t keepEscapes(void*, MHD_Connection*, char* s) { return std::strlen(s); }

ssize_t streamRead(void* cls, std::uint64_t, char* buf, std::size_t max);
void streamFree(void* cls);

}  // namespace

struct AdminServer::Guts {
  // The listener's thread only.
  std::list<Slot*> waiting;                           // oldest first
  LogLimiter refused_lines{std::chrono::seconds(1)};  // one line a second per status
  std::map<int, std::uint64_t> refused_total;         // refused requests per status, since start
  std::unique_ptr<TokenGuard> guessers;               // wrong tokens per client address
  std::unique_ptr<Tarpit> tarpit;                     // their 429s, held back a while
  // Replies suspended until completed; the destructor completes them.
  std::mutex pending_mutex;
  std::set<std::shared_ptr<Pending>> pending;
  bool stopping = false;
  std::shared_ptr<EventHub> events;
  std::atomic<bool> closing{false};  // the destructor runs: no more guard work
};

namespace {

struct StreamCookie {
  EventHub::Impl* hub;
  EventHub::Impl::Stream* stream;
  std::shared_ptr<EventHub> keep;  // the hub outlives its streams
};

ssize_t streamRead(void* cls, std::uint64_t, char* buf, std::size_t max) {
  auto* k = static_cast<StreamCookie*>(cls);
  return k->hub->read(*k->stream, buf, max);
}

void streamFree(void* cls) {
  auto* k = static_cast<StreamCookie*>(cls);
  k->hub->release(k->stream);
  delete k;
}

}  // namespace

struct AdminServerCallbacks {
  static Slot* slotOf(MHD_Connection* c) {
    const MHD_ConnectionInfo* info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info ? static_cast<Slot*>(info->socket_context) : nullptr;
  }

  // The slow-client guard: a connection without a request in progress is
  // waiting. When a new connection comes and more than the reserve are
  // waiting, the oldest of them close after 1 s of silence. Only then: at a
  // connection's start no other connection is half-closed (libmicrohttpd
  // accepts before it processes and cleans up in each turn), and changing a
  // closed one's timeout would corrupt libmicrohttpd's lists.
  static void markWaiting(AdminServer& s, Slot* slot) {
    if (slot == nullptr || slot->waiting || s.guts_->closing.load()) return;
    slot->waiting = true;
    slot->at = s.guts_->waiting.insert(s.guts_->waiting.end(), slot);
  }

  static void evictIdle(AdminServer& s) {
    AdminServer::Guts& g = *s.guts_;
    if (g.closing.load() || g.waiting.size() <= s.options_.idle_reserve) return;
    std::size_t over = g.waiting.size() - s.options_.idle_reserve;
    for (Slot* old : g.waiting) {
      if (over-- == 0) break;
      if (!old->shortened) {
        old->shortened = true;
        MHD_set_connection_option(old->connection, MHD_CONNECTION_OPTION_TIMEOUT, 1u);
      }
    }
  }

  static void markBusy(AdminServer& s, Slot* slot) {
    if (slot == nullptr || !slot->waiting) return;
    s.guts_->waiting.erase(slot->at);
    slot->waiting = false;
    if (slot->shortened) {
      slot->shortened = false;
      MHD_set_connection_option(slot->connection, MHD_CONNECTION_OPTION_TIMEOUT, s.options_.idle_timeout_s);
    }
  }

  static void onConnection(void* cls, MHD_Connection* c, void** socket_context, MHD_ConnectionNotificationCode code) {
    auto& s = *static_cast<AdminServer*>(cls);
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
      auto* slot = new Slot{c, {}, false, false};
      *socket_context = slot;
      markWaiting(s, slot);
      evictIdle(s);
      return;
    }
    auto* slot = static_cast<Slot*>(*socket_context);
    if (slot == nullptr) return;
    if (slot->waiting) s.guts_->waiting.erase(slot->at);
    delete slot;
    *socket_context = nullptr;
  }

  static void logRequest(AdminServer& s, const AdminRequest& req, const AdminResponse& a, MHD_Connection* c) {
    const AdminServerOptions& o = s.options_;
    // State changes, and every refused token or Host whatever the method
    // (429: a wrong token from an address that sent too many, slowToken).
    const bool refused = a.status == 401 || a.status == 403 || a.status == 429;
    if (refused) ++s.guts_->refused_total[a.status];
    if (!o.log || (req.method != "POST" && !refused)) return;
    std::string suppressed;
    if (refused) suppressed = fmt::format(" refused_total={}", s.guts_->refused_total[a.status]);
    if (a.status >= 300) {
      // Refused: one line per status per second, saying how many were left out.
      const auto admitted = s.guts_->refused_lines.admit(std::to_string(a.status), s.clock_.now());
      if (!admitted) return;
      if (*admitted > 0) suppressed = fmt::format(" suppressed={}", *admitted) + suppressed;
    }
    std::string remote = "?";
    if (const MHD_ConnectionInfo* info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS))
      remote = formatAddress(info->client_addr);
    // The path as sent, made safe for one log line (any path reaches here).
    std::string path(req.path.substr(0, 200));
    for (char& ch : path)
      if (static_cast<unsigned char>(ch) < 0x21 || ch == 0x7f || ch == '"') ch = '?';
    try {
      o.log(a.status < 300 ? "INFO" : "WARN", fmt::format("event=admin_request method={} path={} status={} remote={}{}",
                                                          req.method, path, a.status, remote, suppressed));
    } catch (...) {
    }
  }

  // A Host that does not name this listener (403), or a guarded read
  // without the token (401); nullopt: go on.
  static std::optional<AdminResponse> refuseAccess(AdminServer& s, MHD_Connection* c, const AdminRequest& req) {
    const AdminServerOptions& o = s.options_;
    const char* host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
    if (!hostAllowed(host ? std::optional<std::string_view>(host) : std::nullopt, o.allowed_hosts))
      return plain(403,
                   "forbidden: the Host header does not name this listener; add the name to admin.allowed_hosts\n");
    if (!o.reads_need_token || !isGuardedRead(req.method, req.path)) return std::nullopt;
    if (checkBearer(req.authorization, o.token) == TokenCheck::kOk) return std::nullopt;
    if (req.path == "/metrics" && checkBearer(req.authorization, o.scrape_token) == TokenCheck::kOk)
      return std::nullopt;
    AdminResponse a = plain(401, "unauthorized: reading needs Authorization: Bearer TOKEN (admin.reads_need_token)\n");
    a.www_authenticate = true;
    return a;
  }

  // A wrong token: 401 while its address has some left, else 429 with
  // Retry-After (TokenGuard). No route answers 429 itself: logRequest counts
  // every 429 as a refusal.
  // Returns how long to hold the 429 back (a guesser that ignores it is
  // slowed all the same: sendAnswer).
  static Nanos slowToken(AdminServer& s, MHD_Connection* c, const AdminRequest& req, AdminResponse& a,
                         std::string& address) {
    if (a.status != 401 || !req.authorization || !s.guts_->guessers) return Nanos::zero();
    const MHD_ConnectionInfo* info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    address = addressKey(info ? info->client_addr : nullptr);
    const TokenGuard::Verdict v = s.guts_->guessers->fail(address, s.clock_.now());
    if (v.retry_after_s == 0) return Nanos::zero();
    a = plain(429, fmt::format("too many wrong tokens from this address: try again in {} s\n", v.retry_after_s));
    a.retry_after_s = static_cast<int>(v.retry_after_s);
    return v.delay;
  }

  // A refusal, logged at once, then answered: now, or after `delay` from the
  // tarpit's thread (the connection suspended meanwhile, so the listener
  // goes on answering others). With the tarpit full the connection is
  // closed unanswered.
  static MHD_Result sendAnswer(AdminServer& s, MHD_Connection* c, Exchange* ex, const AdminRequest& req,
                               const AdminResponse& a, Nanos delay, const std::string& address) {
    logRequest(s, req, a, c);
    if (delay <= Nanos::zero() || !s.guts_->tarpit) {
      respond(c, a);
      return MHD_YES;
    }
    ex->pending = std::make_shared<Pending>(c);
    std::weak_ptr<Pending> weak = ex->pending;
    if (!s.guts_->tarpit->hold(address, delay, [weak, a] {
          if (auto p = weak.lock()) p->complete(a);
        })) {
      ex->pending.reset();
      return MHD_NO;
    }
    return later(s, c, ex->pending);
  }

  static MHD_Result later(AdminServer& s, MHD_Connection* c, const std::shared_ptr<Pending>& p) {
    AdminServer::Guts& g = *s.guts_;
    {
      std::lock_guard<std::mutex> lock(g.pending_mutex);
      if (g.stopping) {
        respond(c, plain(503, "stopping\n"));
        return MHD_YES;
      }
      if (p->suspendUnlessAnswered()) {
        g.pending.insert(p);
        return MHD_YES;
      }
    }
    auto a = p->take();
    respond(c, a ? *a : plain(500, "no answer\n"));
    return MHD_YES;
  }

  static MHD_Result openStream(AdminServer& s, MHD_Connection* c) {
    if (!s.guts_->events) {
      respond(c, plain(404, "no event stream here\n"));
      return MHD_YES;
    }
    EventHub::Impl& hub = s.guts_->events->impl();
    const char* client = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "client");
    const bool console = client != nullptr && std::string_view(client) == "console";
    const std::size_t kept = std::min(s.options_.console_streams, s.options_.max_streams);
    const std::size_t max = console ? s.options_.max_streams : s.options_.max_streams - kept;
    EventHub::Impl::Stream* stream = hub.open(c, s.options_.max_streams, console, max);
    if (stream == nullptr) {
      AdminResponse busy = plain(
          503, console ? fmt::format("too many open event streams (at most {}); close some consoles\n", max)
                       : fmt::format("too many open event streams (at most {} for clients other than the console, "
                                     "{} kept for console pages); close some, or poll /api/v1/state\n",
                                     max, kept));
      busy.retry_after_s = 5;
      respond(c, busy);
      return MHD_YES;
    }
    auto* cookie = new StreamCookie{&hub, stream, s.guts_->events};
    MHD_Response* r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 32 * 1024, &streamRead, cookie, &streamFree);
    if (r == nullptr) {
      streamFree(cookie);
      return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", "text/event-stream; charset=utf-8");
    MHD_add_response_header(r, "Cache-Control", "no-store");
    MHD_add_response_header(r, "Content-Security-Policy", kContentSecurityPolicy);
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
    MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);  // freed (streamFree) when the connection is done with it
    return MHD_YES;
  }

  static MHD_Result onRequest(void* cls, MHD_Connection* c, const char* url, const char* method, const char*,
                              const char* upload, std::size_t* upload_size, void** state) {
    auto& s = *static_cast<AdminServer*>(cls);
    if (*state == nullptr) {  // headers read; the body (if any) comes next
      *state = new Exchange;
      markBusy(s, slotOf(c));
      return MHD_YES;
    }
    auto* ex = static_cast<Exchange*>(*state);
    if (*upload_size != 0) {
      if (ex->body.size() + *upload_size > s.options_.max_body)
        ex->too_large = true;
      else
        ex->body.append(upload, *upload_size);
      *upload_size = 0;
      return MHD_YES;
    }
    if (ex->pending) {  // resumed: the answer is in (onCompleted forgets it once sent)
      auto a = ex->pending->take();
      respond(c, a ? *a : plain(503, "stopping\n"));
      return MHD_YES;
    }
    AdminRequest req;
    req.method = method;
    req.path = url;
    req.body = ex->body;
    if (const char* auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization")) req.authorization = auth;
    if (const char* enc = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept-Encoding"))
      req.accepts_gzip = acceptsGzip(enc);
    std::string address;
    if (auto refusal = refuseAccess(s, c, req)) {
      const Nanos delay = slowToken(s, c, req, *refusal, address);
      return sendAnswer(s, c, ex, req, *refusal, delay, address);
    }
    if (ex->too_large) {
      respond(c, plain(413, fmt::format("request body too large (at most {} bytes)\n", s.options_.max_body)));
      return MHD_YES;
    }
    std::optional<AdminResponse> a;
    if (s.options_.routes != nullptr) {
      std::string remote;
      if (const MHD_ConnectionInfo* info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS))
        remote = formatAddress(info->client_addr);
      req.remote = remote;
      try {
        AdminRoutes::Answer answer = s.options_.routes->route(req, [&] {
          ex->pending = std::make_shared<Pending>(c);
          return ex->pending;
        });
        switch (answer.kind) {
          case AdminRoutes::Kind::kNotMine: break;
          case AdminRoutes::Kind::kNow: a = std::move(answer.response); break;
          case AdminRoutes::Kind::kLater:
            if (ex->pending) return later(s, c, ex->pending);
            a = plain(500, "internal error: no reply\n");
            break;
          case AdminRoutes::Kind::kEvents: return openStream(s, c);
        }
      } catch (const std::exception& e) {
        a = plain(500, fmt::format("internal error: {}\n", e.what()));
      }
    }
    if (!a) a = s.handler_.handle(req);
    const Nanos delay = slowToken(s, c, req, *a, address);
    return sendAnswer(s, c, ex, req, *a, delay, address);
  }

  static void onCompleted(void* cls, MHD_Connection* c, void** state, MHD_RequestTerminationCode code) {
    auto& s = *static_cast<AdminServer*>(cls);
    auto* ex = static_cast<Exchange*>(*state);
    if (ex != nullptr && ex->pending) {
      ex->pending->gone();
      std::lock_guard<std::mutex> lock(s.guts_->pending_mutex);
      s.guts_->pending.erase(ex->pending);
    }
    delete ex;
    *state = nullptr;
    // Answered in full: with keep-alive, waiting for the next request (if it
    // closes instead, its slot goes with it).
    if (code == MHD_REQUEST_TERMINATED_COMPLETED_OK) markWaiting(s, slotOf(c));
  }
};

// --- AdminServer ----------------------------------------------------------------

AdminServer::AdminServer(AdminServerOptions options, AdminState& state, const TimeSource& clock)
    : options_(std::move(options)),
      handler_(state, clock, options_.token, options_.max_turn_age),
      clock_(clock),
      guts_(std::make_unique<Guts>()) {
  guts_->events = options_.events;
  guts_->guessers = std::make_unique<TokenGuard>(options_.wrong_token_burst, options_.wrong_token_refill,
                                                 options_.wrong_token_delay_first, options_.wrong_token_delay_max);
  if (options_.wrong_token_delay_first > Nanos::zero())
    guts_->tarpit = std::make_unique<Tarpit>(options_.wrong_token_held_max);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(options_.address.port);
  const int gai = ::getaddrinfo(options_.address.host.c_str(), port.c_str(), &hints, &found);
  if (gai != 0 || found == nullptr)
    throw AdminListenError(fmt::format("admin listener {}:{}: cannot resolve the host: {}", options_.address.host,
                                       options_.address.port, ::gai_strerror(gai)));
  const int family = found->ai_family;
  const int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int err = fd < 0 ? errno : 0;
  if (fd >= 0) {
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, found->ai_addr, found->ai_addrlen) != 0 || ::listen(fd, 128) != 0) err = errno;
  }
  ::freeaddrinfo(found);
  if (err != 0) {
    if (fd >= 0) ::close(fd);
    throw AdminListenError(
        fmt::format("admin listener {}:{}: {}; give each pacerd its own --admin-listen "
                    "(HOST:0 picks a free port) or --admin-listen off",
                    options_.address.host, options_.address.port, std::strerror(err)));
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  bound_ = formatAddress(reinterpret_cast<const sockaddr*>(&bound));
  loopback_ = isLoopback(reinterpret_cast<const sockaddr*>(&bound));

  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_ALLOW_SUSPEND_RESUME;
  if (family == AF_INET6) flags |= MHD_USE_IPv6;
  daemon_ = MHD_start_daemon(flags, 0, nullptr, nullptr, &AdminServerCallbacks::onRequest, this,
                             MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_NOTIFY_COMPLETED,
                             &AdminServerCallbacks::onCompleted, this, MHD_OPTION_NOTIFY_CONNECTION,
                             &AdminServerCallbacks::onConnection, this, MHD_OPTION_UNESCAPE_CALLBACK, &keepEscapes,
                             nullptr, MHD_OPTION_CONNECTION_LIMIT, options_.connection_limit,
                             MHD_OPTION_CONNECTION_TIMEOUT, options_.idle_timeout_s, MHD_OPTION_END);
  if (daemon_ == nullptr) {
    ::close(fd);
    throw AdminListenError(fmt::format("admin listener {}: libmicrohttpd did not start", bound_));
  }
}

AdminServer::~AdminServer() {
  if (daemon_ == nullptr) return;
  guts_->closing = true;
  // Held 429s are in `pending` too: answered below, not by the tarpit.
  if (guts_->tarpit) guts_->tarpit->stop();
  // libmicrohttpd must not be stopped with suspended connections: end every
  // event stream and answer every pending reply first. No new ones suspend
  // from here on.
  if (guts_->events) guts_->events->impl().close();
  std::set<std::shared_ptr<Pending>> pending;
  {
    std::lock_guard<std::mutex> lock(guts_->pending_mutex);
    guts_->stopping = true;
    pending = guts_->pending;
  }
  for (const auto& p : pending) p->complete(plain(503, "stopping\n"));
  // Let those answers go out (each leaves the set once sent), briefly.
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
  while (std::chrono::steady_clock::now() < until) {
    {
      std::lock_guard<std::mutex> lock(guts_->pending_mutex);
      if (guts_->pending.empty()) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  MHD_stop_daemon(daemon_);  // also closes the listen socket
}

}  // namespace pacer::admin
