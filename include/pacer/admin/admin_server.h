// pacerd's admin listener: GET /metrics (Prometheus text), GET /healthz,
// GET /readyz, and POST /admin/drain behind a bearer token; with AdminRoutes,
// more endpoints (the console and its JSON API, docs/console.md), answers
// given later from another thread (PendingReply) and Server-Sent Events
// (EventHub).
//
// Threads: the daemon loop publishes into AdminState (a snapshot at most every
// ~250 ms, a heartbeat each turn); libmicrohttpd's one thread answers requests
// from AdminState alone and never touches the worker core. A drain request
// only sets a flag the loop reads. Nothing on that thread blocks on I/O: an
// answer that needs a database is a PendingReply, its connection suspended
// until another thread completes it, and an idle event stream is a suspended
// connection that EventHub::publish() resumes.
//
// AdminHandler decides every answer without sockets (unit-tested on a
// simulated clock); AdminServer puts it on libmicrohttpd.
#pragma once

#include "pacer/error.h"

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "pacer/admin/metrics.h"
#include "pacer/time.h"

struct MHD_Daemon;

namespace pacer::admin {

// What the loop shares with the listener. Thread-safe.
class AdminState {
 public:
  void publish(std::shared_ptr<const MetricsSnapshot> snapshot);
  // The last snapshot published; null before the first.
  std::shared_ptr<const MetricsSnapshot> snapshot() const;
  // The loop turned at `now` (the steady clock's time).
  void heartbeat(MonoTime now) noexcept { last_turn_.store(now.time_since_epoch().count(), std::memory_order_relaxed); }
  std::optional<MonoTime> lastTurn() const noexcept;
  void requestDrain() noexcept { drain_.store(true, std::memory_order_relaxed); }
  bool drainRequested() const noexcept { return drain_.load(std::memory_order_relaxed); }
  // POST /admin/reload, as SIGHUP: the loop takes the request once.
  void requestReload() noexcept { reload_.store(true, std::memory_order_relaxed); }
  bool takeReloadRequest() noexcept { return reload_.exchange(false, std::memory_order_relaxed); }
  // The loop has stopped and pacerd is shutting down (bounded by its shutdown
  // deadline): not ready any more, and no longer expected to turn.
  void stopping() noexcept { stopping_.store(true, std::memory_order_relaxed); }
  bool isStopping() const noexcept { return stopping_.load(std::memory_order_relaxed); }

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<const MetricsSnapshot> snapshot_;
  std::atomic<Nanos::rep> last_turn_{kNoTurn};
  std::atomic<bool> drain_{false};
  std::atomic<bool> reload_{false};
  std::atomic<bool> stopping_{false};
  static constexpr Nanos::rep kNoTurn = Nanos::min().count();
};

enum class TokenCheck {
  kOk,
  kDisabled,  // no token configured: state changes are off (403)
  kMissing,   // no "Authorization: Bearer ..." header (401)
  kWrong,     // a token that is not the configured one (401)
};

// Checks an Authorization header value (nullopt: no header) against the
// configured token. The comparison takes the same time wherever the first
// difference is.
TokenCheck checkBearer(std::optional<std::string_view> authorization, std::string_view token) noexcept;

// Equal in content and length; the time taken depends only on `given`'s length.
bool constantTimeEquals(std::string_view given, std::string_view expected) noexcept;

// Whether a request's Host header names this listener (against DNS
// rebinding: a page of another site whose name resolves to 127.0.0.1 must
// not read the API as if it were this origin). Accepted: no header (not a
// browser), an IP literal (v4, or v6 in brackets), `localhost`, and any name
// in `allowed` (case-insensitive; the port is ignored); `*` in `allowed`
// accepts every name.
bool hostAllowed(std::optional<std::string_view> host, const std::vector<std::string>& allowed);

// Whether a request reads what AdminServerOptions::reads_need_token guards:
// GET or HEAD of /metrics or of anything under /api/ (the event stream too).
// /healthz, /readyz and the console's pages and assets stay open.
bool isGuardedRead(std::string_view method, std::string_view path) noexcept;

// Whether an Accept-Encoding header's value accepts gzip: a "gzip" (or "*")
// coding, any case, whose q is not 0 ("br, gzip;q=0.8": yes; "gzip;q=0": no).
bool acceptsGzip(std::string_view accept_encoding);

struct AdminRequest {
  std::string_view method;
  std::string_view path;  // without the query string; percent-escapes as sent (not decoded)
  std::optional<std::string_view> authorization;
  std::string_view body{};    // at most AdminServerOptions::max_body bytes
  std::string_view remote{};  // the client's HOST:PORT, for logs; may be empty
  bool accepts_gzip = false;  // its Accept-Encoding names gzip
};

struct AdminResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::string allow;              // for 405: the methods allowed
  bool www_authenticate = false;  // for 401
  std::string location{};         // for 30x: where to
  std::string cache_control = "no-store";
  int retry_after_s = 0;  // > 0: a Retry-After header (503: try again then)
  // Set when `body` is encoded ("gzip"): sent as Content-Encoding, with
  // Vary: Accept-Encoding.
  std::string content_encoding{};
};

// The Content-Security-Policy every answer of the listener carries: scripts,
// styles and images from the listener itself only, no inline script or
// style, no other origin, no framing.
inline constexpr const char* kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

// An answer given later, from another thread (one that may block on a
// database). The connection waits suspended, so the listener's thread goes on
// answering others meanwhile.
class PendingReply {
 public:
  virtual ~PendingReply() = default;
  // Sends `response`. Thread-safe and non-blocking; the first call counts,
  // later calls (and calls after the client left or the listener stopped) do
  // nothing.
  virtual void complete(AdminResponse response) noexcept = 0;
};
using PendingReplyPtr = std::shared_ptr<PendingReply>;

// Endpoints beyond the built-in ones, asked first for every request.
class AdminRoutes {
 public:
  enum class Kind {
    kNotMine,  // not one of its paths: the built-in handler answers
    kNow,      // `response` is the answer
    kLater,    // it took a PendingReply from `later` and completes it from another thread
    kEvents,   // subscribe the client to the listener's EventHub (text/event-stream)
  };
  struct Answer {
    Kind kind = Kind::kNotMine;
    AdminResponse response;  // kNow
  };
  virtual ~AdminRoutes() = default;
  // Called on the listener's thread: must not block (no I/O). `later` makes
  // the PendingReply for this request; call it only when answering kLater.
  virtual Answer route(const AdminRequest& request, const std::function<PendingReplyPtr()>& later) = 0;
};

// Server-Sent Events: the newest frame, shared by every open stream. A stream
// gets the frame current when it opens, then each newer one; a slow client
// skips to the newest (frames are whole states, not deltas). Streams waiting
// for a frame cost nothing until publish() resumes them.
class EventHub {
 public:
  EventHub();
  ~EventHub();
  EventHub(const EventHub&) = delete;
  EventHub& operator=(const EventHub&) = delete;
  // Replaces the frame (complete SSE text: "event: x\ndata: ...\n\n") and
  // wakes every waiting stream. Thread-safe; never blocks on I/O.
  void publish(std::string frame);
  // Streams open now. Thread-safe.
  std::size_t streams() const;

  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

// Why /readyz answers 503 ("; "-joined), or nullopt when ready.
std::optional<std::string> notReadyReason(const Readiness& r);

class AdminHandler {
 public:
  // `max_turn_age`: /healthz answers 503 once the loop's last turn is older.
  AdminHandler(AdminState& state, const TimeSource& clock, std::string token, Nanos max_turn_age);
  // Thread-safe (reads AdminState only).
  AdminResponse handle(const AdminRequest& request) const;

 private:
  AdminResponse healthz() const;
  AdminResponse readyz() const;
  AdminResponse metrics() const;
  // A state change (drain, reload): the token first; null when it passes.
  std::optional<AdminResponse> refuse(const AdminRequest& request) const;
  AdminState& state_;
  const TimeSource& clock_;
  std::string token_;
  Nanos max_turn_age_;
};

// A listen address pacerd cannot use ("HOST:PORT" malformed).
class AdminAddressError : public InvalidError {
 public:
  using InvalidError::InvalidError;
};
// The address could not be bound.
class AdminListenError : public InvalidError {
 public:
  using InvalidError::InvalidError;
};

struct ListenAddress {
  std::string host;  // an IPv4 or IPv6 literal (no brackets) or a name
  int port = 0;      // 0: any free port
};

// "HOST:PORT", "[V6]:PORT". Throws AdminAddressError.
ListenAddress parseListenAddress(std::string_view text);

struct AdminServerOptions {
  ListenAddress address;
  std::string token;  // empty: POST /admin/* answers 403
  Nanos max_turn_age = std::chrono::seconds(5);
  // Told of refused state changes and drains (level, text); may be empty.
  // Refused ones: at most one line per second per status, with the count of
  // those left out since (suppressed=N); accepted ones: every one.
  std::function<void(const char*, const std::string&)> log;
  // More endpoints (not owned; outlives the server); null: none.
  AdminRoutes* routes = nullptr;
  // Where AdminRoutes::Kind::kEvents subscribes; null: such requests get 404.
  std::shared_ptr<EventHub> events;
  std::size_t max_streams = 128;  // open event streams at most; more get 503
  // Of those, kept for console pages (streams asked with ?client=console):
  // other clients get 503 once they hold max_streams - console_streams, so a
  // crowd of scripts cannot leave an operator's console blank. Not a
  // defence against a hostile client, which can say it is a console: that is
  // what admin.read_token is for.
  std::size_t console_streams = 8;
  // Host names accepted besides IP literals and localhost (hostAllowed);
  // others get 403.
  std::vector<std::string> allowed_hosts;
  // Reads (isGuardedRead) need `Authorization: Bearer` with `token`, or
  // for /metrics with `scrape_token` too; without it they get 401.
  bool reads_need_token = false;
  std::string scrape_token;      // empty: /metrics takes only `token`
  std::size_t max_body = 16384;  // request bodies above this get 413
  // Wrong tokens (401 to a request that sent Authorization) per client
  // address (IPv4, or an IPv6 /64; a table of at most 1024 addresses):
  // `wrong_token_burst` are answered 401, then one more each
  // `wrong_token_refill`, and meanwhile 429 with Retry-After. A right token
  // is never held back. 0: no limit.
  std::size_t wrong_token_burst = 10;
  Nanos wrong_token_refill = std::chrono::seconds(6);
  // Each 429 in a row to one address is held back before it is answered:
  // `wrong_token_delay_first`, doubling, at most `wrong_token_delay_max`;
  // answers to one address leave that far apart however many connections it
  // opens, so a guesser that ignores the 429 is slowed too. At most
  // `wrong_token_held_max` answers are held in all (beyond, the connection
  // is closed unanswered). The listener's thread never waits for them.
  // delay_first 0: no delay.
  Nanos wrong_token_delay_first = std::chrono::milliseconds(100);
  Nanos wrong_token_delay_max = std::chrono::seconds(2);
  std::size_t wrong_token_held_max = 64;
  // Connections at most. Slow-client guard: when more than `idle_reserve`
  // connections are waiting for a request (connected and silent, slow to send
  // their headers, or idle between keep-alive requests), the oldest of them
  // are closed after 1 s of silence instead of `idle_timeout`, so silent
  // clients cannot hold every slot and /healthz still gets one.
  unsigned connection_limit = 256;
  std::size_t idle_reserve = 32;
  unsigned idle_timeout_s = 10;
};

struct AdminServerCallbacks;

class AdminServer {
 public:
  // Binds and starts serving on libmicrohttpd's own thread. Throws
  // AdminListenError if the address cannot be bound.
  AdminServer(AdminServerOptions options, AdminState& state, const TimeSource& clock);
  ~AdminServer();  // stops serving; in-flight requests finish first
  AdminServer(const AdminServer&) = delete;
  AdminServer& operator=(const AdminServer&) = delete;

  // "HOST:PORT" as bound (the port the kernel chose for port 0).
  const std::string& boundAddress() const { return bound_; }
  // Whether the bound address is a loopback one.
  bool loopback() const { return loopback_; }

  struct Guts;  // libmicrohttpd's side (admin_listener.cc)

 private:
  friend struct AdminServerCallbacks;
  AdminServerOptions options_;
  AdminHandler handler_;
  const TimeSource& clock_;
  std::unique_ptr<Guts> guts_;
  MHD_Daemon* daemon_ = nullptr;
  std::string bound_;
  bool loopback_ = true;
};

}  // namespace pacer::admin
