#include "pacer/events/callback_worker.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "pacer/callback_queue.h"
#include "pacer/error.h"
#include "pacer/ledger/pg_outbox.h"
#include "pacer/outcome_event.h"
#include "pacer/validation.h"

namespace pacer::events {

using Clock = std::chrono::steady_clock;

namespace {

// The most rows one read takes (fewer when the queue has less room).
constexpr std::size_t kReadBatch = 500;
// An event whose campaign has no usable URL is given up with this status.
constexpr long kNoUrl = -1;
constexpr std::size_t kKeepAnswerBytes = 256;

MonoTime mono(Clock::time_point t) { return std::chrono::time_point_cast<Nanos>(t); }

std::size_t discard(char*, std::size_t size, std::size_t n, void*) { return size * n; }

// One event waiting for its answer: what it is POSTed as, and where.
struct Pending {
  std::string url;
  std::string body;
  std::string campaign;
  std::string event_header;  // "Pacer-Event-Id: <id>"
};

// One POST in flight: a reusable easy handle and its header list.
struct Transfer {
  CURL* easy = nullptr;
  std::int64_t id = 0;
  curl_slist* headers = nullptr;
  char error[CURL_ERROR_SIZE] = {};
};

}  // namespace

struct CallbackWorker::Impl {
  explicit Impl(const CallbackWorkerOptions& o)
      : outbox(o.pg),
        queue(CallbackPolicy{o.queue, o.max_attempts, o.first_backoff, o.max_backoff}),
        multi(curl_multi_init()) {}
  ~Impl() {
    for (auto& t : transfers) {
      if (t->id != 0) curl_multi_remove_handle(multi, t->easy);
      curl_slist_free_all(t->headers);
      curl_easy_cleanup(t->easy);
    }
    curl_multi_cleanup(multi);
  }

  ledger::PgCallbackOutbox outbox;
  CallbackQueue queue;
  CURLM* multi;
  std::unordered_map<std::int64_t, Pending> pending;
  std::vector<std::unique_ptr<Transfer>> transfers;  // all handles made; id 0: idle
  std::map<std::string, std::string> last_failure;   // campaign -> why its last event was given up on
  // The loop's own state.
  bool caught_up = false;
  Clock::time_point next_read{}, store_retry_at{}, next_depth{}, next_report{};
};

CallbackWorker::CallbackWorker(CallbackWorkerOptions options, logging::LoggerPtr log)
    : options_(std::move(options)), log_(std::move(log)) {
  if (options_.queue == 0) throw InvalidError("callbacks: queue is 0");
  if (options_.concurrency == 0) throw InvalidError("callbacks: concurrency is 0");
  if (options_.max_attempts < 1) throw InvalidError("callbacks: max_attempts is below 1");
  if (options_.timeout.count() <= 0) throw InvalidError("callbacks: timeout is not above 0");
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  impl_ = std::make_unique<Impl>(options_);
  if (!impl_->multi) throw InvalidError("callbacks: curl_multi_init failed");
}

CallbackWorker::~CallbackWorker() { stop(); }

void CallbackWorker::start() {
  if (thread_.joinable()) return;
  stop_ = false;
  try {
    const ledger::OutboxDepth d = impl_->outbox.depth();
    depth_ = d.rows;
    log_->info("event=callbacks_started worker={} queue={} concurrency={} max_attempts={} left_from_before={}",
               options_.pg.callback_worker, options_.queue, options_.concurrency, options_.max_attempts, d.rows);
  } catch (const LedgerRejectedError& e) {
    throw InvalidError(
        fmt::format("callbacks: the callbacks' outbox cannot be read ({}); the schema needs "
                    "migration 14: run pacerd migrate",
                    e.what()));
  } catch (const Error& e) {
    log_->warn("event=callbacks_store_failed reason=\"{}\"", e.what());
  }
  thread_ = std::thread([this] { loop(); });
}

void CallbackWorker::stop() {
  stop_ = true;
  if (impl_) curl_multi_wakeup(impl_->multi);
  if (thread_.joinable()) thread_.join();
}

CallbackWorkerStats CallbackWorker::stats() const {
  return CallbackWorkerStats{sent_.load(),   failed_.load(), retried_.load(),    errors_.load(),
                             queued_.load(), depth_.load(),  lag_seconds_.load()};
}

namespace {

// The parts of the loop, over the worker's Impl.
class Round {
 public:
  Round(CallbackWorker::Impl& impl, const CallbackWorkerOptions& o, const logging::LoggerPtr& log)
      : s_(impl), o_(o), log_(log) {}

  // The answers that arrived: each goes to the queue.
  void collect(Clock::time_point now, std::atomic<std::uint64_t>& sent, std::atomic<std::uint64_t>& failed,
               std::atomic<std::uint64_t>& retried) {
    int running = 0;
    curl_multi_perform(s_.multi, &running);
    int left = 0;
    while (CURLMsg* m = curl_multi_info_read(s_.multi, &left)) {
      if (m->msg != CURLMSG_DONE) continue;
      Transfer* t = nullptr;
      curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, reinterpret_cast<char**>(&t));
      long status = 0;
      if (m->data.result == CURLE_OK) curl_easy_getinfo(m->easy_handle, CURLINFO_RESPONSE_CODE, &status);
      const std::string why =
          m->data.result == CURLE_OK
              ? fmt::format("HTTP {}", status)
              : fmt::format("no answer: {}", t->error[0] ? t->error : curl_easy_strerror(m->data.result));
      curl_multi_remove_handle(s_.multi, t->easy);
      const std::int64_t id = t->id;
      t->id = 0;
      answer(id, status, why, now, sent, failed, retried);
    }
  }

  void answer(std::int64_t id, long status, const std::string& why, Clock::time_point now,
              std::atomic<std::uint64_t>& sent, std::atomic<std::uint64_t>& failed,
              std::atomic<std::uint64_t>& retried) {
    const CallbackQueue::Verdict v = s_.queue.answer(id, status, mono(now));
    if (v == CallbackQueue::Verdict::kRetry) ++retried;
    if (v != CallbackQueue::Verdict::kDone && v != CallbackQueue::Verdict::kGaveUp) return;
    const auto it = s_.pending.find(id);
    if (v == CallbackQueue::Verdict::kDone) {
      ++sent;
    } else {
      ++failed;
      if (it != s_.pending.end()) s_.last_failure[it->second.campaign] = fmt::format("{} from {}", why, it->second.url);
    }
    if (it != s_.pending.end()) s_.pending.erase(it);
  }

  // Deletes what finished and reads more rows when the queue has room; both
  // in one round trip when both are due. Throws Ledger*Error.
  void read(Clock::time_point now) {
    if (now < s_.store_retry_at) return;
    std::vector<std::int64_t> done = s_.queue.takeFinished();
    const std::size_t want = std::min(kReadBatch, s_.queue.room());
    try {
      if (now < s_.next_read || want == 0) {
        if (!done.empty()) s_.outbox.remove(done);
        return;
      }
      std::vector<ledger::CallbackEvent> rows = s_.outbox.next(s_.queue.after(), want, done);
      done.clear();
      s_.caught_up = rows.size() < want;
      if (s_.caught_up) s_.next_read = now + o_.poll;
      for (ledger::CallbackEvent& r : rows) {
        const std::int64_t id = r.event.id;
        if (!s_.queue.admit(id, r.event.campaign, mono(now))) continue;
        s_.pending[id] = Pending{std::move(r.url), encodeOutcomeEvent(r.event), r.event.campaign,
                                 fmt::format("Pacer-Event-Id: {}", id)};
      }
      // Also finds a row that committed below the cursor.
      if (s_.caught_up) s_.queue.rewind();
    } catch (...) {
      s_.queue.giveBack(done);
      throw;
    }
  }

  // POSTs what is due, within the concurrency.
  void send(Clock::time_point now, std::atomic<std::uint64_t>& sent, std::atomic<std::uint64_t>& failed,
            std::atomic<std::uint64_t>& retried) {
    const std::size_t busy = s_.queue.inFlight();
    if (busy >= o_.concurrency) return;
    for (std::int64_t id : s_.queue.takeDue(mono(now), o_.concurrency - busy)) {
      const auto it = s_.pending.find(id);
      const std::string url = it == s_.pending.end() ? std::string() : it->second.url;
      std::optional<std::string> problem = url.empty() ? std::optional<std::string>("the campaign has no callback URL")
                                                       : validation::callbackUrlProblem("callback_url", url);
      if (problem) {
        answer(id, kNoUrl, "not sent: " + *problem, now, sent, failed, retried);
        continue;
      }
      post(id, it->second);
    }
  }

  void post(std::int64_t id, const Pending& p) {
    Transfer* t = idle();
    t->id = id;
    t->error[0] = '\0';
    curl_slist_free_all(t->headers);
    t->headers = curl_slist_append(nullptr, "Content-Type: application/json");
    t->headers = curl_slist_append(t->headers, p.event_header.c_str());
    curl_easy_setopt(t->easy, CURLOPT_URL, p.url.c_str());
    curl_easy_setopt(t->easy, CURLOPT_POSTFIELDS, p.body.c_str());
    curl_easy_setopt(t->easy, CURLOPT_POSTFIELDSIZE, static_cast<long>(p.body.size()));
    curl_easy_setopt(t->easy, CURLOPT_HTTPHEADER, t->headers);
    curl_multi_add_handle(s_.multi, t->easy);
  }

  Transfer* idle() {
    for (auto& t : s_.transfers)
      if (t->id == 0) return t.get();
    auto& t = s_.transfers.emplace_back(std::make_unique<Transfer>());
    t->easy = curl_easy_init();
    curl_easy_setopt(t->easy, CURLOPT_PRIVATE, t.get());
    curl_easy_setopt(t->easy, CURLOPT_ERRORBUFFER, t->error);
    curl_easy_setopt(t->easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(t->easy, CURLOPT_TIMEOUT_MS, static_cast<long>(o_.timeout.count()));
    curl_easy_setopt(t->easy, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(t->easy, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(t->easy, CURLOPT_USERAGENT, "pacer-callbacks");
    return t.get();
  }

  // One line per campaign that had events given up on, with the count.
  void report(Clock::time_point now, bool force, std::uint64_t failed_total) {
    if (!force && now < s_.next_report) return;
    s_.next_report = now + o_.report_every;
    for (const CallbackGiveUps& g : s_.queue.takeGiveUps())
      log_->warn("event=callback_gave_up campaign={} count={} failed_total={} last=\"{}\"", g.campaign, g.count,
                 failed_total, s_.last_failure[g.campaign]);
  }

  // How long the loop may wait for a socket before it has something to do.
  int waitMs(Clock::time_point now) const {
    Clock::time_point until = now + std::chrono::milliseconds(100);
    if (const auto due = s_.queue.nextDue(); due && s_.queue.inFlight() < o_.concurrency)
      until = std::min(until, Clock::time_point(std::chrono::duration_cast<Clock::duration>(due->time_since_epoch())));
    if (s_.queue.room() > 0) until = std::min(until, std::max(s_.next_read, s_.store_retry_at));
    return static_cast<int>(
        std::max<std::int64_t>(0, std::chrono::duration_cast<std::chrono::milliseconds>(until - now).count()));
  }

 private:
  CallbackWorker::Impl& s_;
  const CallbackWorkerOptions& o_;
  const logging::LoggerPtr& log_;
};

}  // namespace

void CallbackWorker::loop() {
  Round round(*impl_, options_, log_);
  logging::LimitedLog limited(log_, std::chrono::seconds(10));
  std::optional<Clock::time_point> stop_by;
  for (;;) {
    auto now = Clock::now();
    round.collect(now, sent_, failed_, retried_);
    if (stop_ && !stop_by) stop_by = now + options_.timeout + std::chrono::seconds(1);
    try {
      if (!stop_by) round.read(now);
      if (now >= impl_->next_depth) {
        impl_->next_depth = now + std::chrono::seconds(1);
        const ledger::OutboxDepth d = impl_->outbox.depth();
        depth_ = d.rows;
        lag_seconds_ = d.oldest_age_seconds;
      }
    } catch (const Error& e) {
      ++errors_;
      limited.write(spdlog::level::warn, "callbacks_store_failed",
                    fmt::format("event=callbacks_store_failed reason=\"{}\"", e.what()), mono(now));
      impl_->store_retry_at = now + std::chrono::seconds(1);
    }
    if (!stop_by) round.send(now, sent_, failed_, retried_);
    queued_ = static_cast<std::int64_t>(impl_->queue.held());
    round.report(now, false, failed_.load());
    if (stop_by && (impl_->queue.inFlight() == 0 || now >= *stop_by)) break;
    curl_multi_poll(impl_->multi, nullptr, 0, round.waitMs(Clock::now()), nullptr);
  }
  // What finished leaves the outbox; the rest (waiting for a retry, in
  // flight past the limit) stays for the next start.
  const std::vector<std::int64_t> done = impl_->queue.takeFinished();
  try {
    impl_->outbox.remove(done);
  } catch (const Error& e) {
    log_->warn("event=callbacks_store_failed reason=\"{}\"", e.what());
  }
  round.report(Clock::now(), true, failed_.load());
  log_->info("event=callbacks_stopped sent={} failed={} retried={} left_in_memory={}", sent_.load(), failed_.load(),
             retried_.load(), impl_->queue.held());
}

}  // namespace pacer::events
