// The HTTP callbacks (docs/callbacks.md): POSTs each row of the callbacks'
// outbox this worker wrote (pacer/ledger/pg_outbox.h, migration 14) to its
// campaign's callback URL as the outcome event's JSON (encodeOutcomeEvent,
// the same event_id as on the events topic), and deletes the row once the
// URL has answered 2xx or the event was given up on (counted and logged once
// per campaign with counts). Retries and the bound on what is held in memory
// are pacer/callback_queue.h's: when the queue is full, rows wait in the
// outbox, nothing is dropped. A crash loses nothing and repeats only what
// was POSTed and not yet deleted.
//
// It has its own thread, PostgreSQL connection and libcurl multi handle, at
// most `concurrency` POSTs at once: it never runs on the sending thread and
// never makes the ledger writer wait.
//
// Thread-safety: start()/stop() and stats() may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "pacer/ledger/pg_ledger.h"
#include "pacer/logging/logging.h"

namespace pacer::events {

struct CallbackWorkerOptions {
  ledger::PgLedgerOptions pg;                     // with callback_worker: whose rows to POST
  std::size_t queue = 1000;                       // events held in memory at most (not 0)
  std::size_t concurrency = 8;                    // POSTs in flight at once, at most (not 0)
  int max_attempts = 5;                           // POSTs per event, the first included (>= 1)
  std::chrono::milliseconds timeout{5000};        // one POST, connecting included
  std::chrono::milliseconds first_backoff{1000};  // before the second POST; doubles each time
  std::chrono::milliseconds max_backoff{60000};
  std::chrono::milliseconds poll{200};    // an empty outbox is read again after this
  std::chrono::seconds report_every{10};  // give-ups are logged per campaign at most this often
};

struct CallbackWorkerStats {
  std::uint64_t sent = 0;     // events a URL accepted (2xx)
  std::uint64_t failed = 0;   // events given up on (refused, attempts spent, no usable URL)
  std::uint64_t retried = 0;  // POSTs that will be tried again
  std::uint64_t errors = 0;   // outbox reads/deletes that failed (PostgreSQL)
  std::int64_t queued = 0;    // events held in memory now
  std::int64_t depth = 0;     // this worker's callback rows now (read at most once a second)
  double lag_seconds = 0;     // age of the oldest of them (0: none)
};

class CallbackWorker {
 public:
  // Throws InvalidError for a queue, concurrency, attempts or timeout of 0.
  CallbackWorker(CallbackWorkerOptions options, logging::LoggerPtr log);
  ~CallbackWorker();  // stop()s
  CallbackWorker(const CallbackWorker&) = delete;
  CallbackWorker& operator=(const CallbackWorker&) = delete;

  // Runs on a thread of its own until stop(). Throws InvalidError when the
  // database has no callbacks' outbox (schema before 14).
  void start();
  // Stops after the POSTs in flight have their answers (at most `timeout`)
  // and the finished rows are deleted; the rest stay in the outbox.
  void stop();

  CallbackWorkerStats stats() const;

  struct Impl;  // the loop's state (callback_worker.cc)

 private:
  void loop();
  std::unique_ptr<Impl> impl_;
  CallbackWorkerOptions options_;
  logging::LoggerPtr log_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::atomic<std::uint64_t> sent_{0}, failed_{0}, retried_{0}, errors_{0};
  std::atomic<std::int64_t> queued_{0}, depth_{0};
  std::atomic<double> lag_seconds_{0};
};

}  // namespace pacer::events
