// The outcome events' drainer: publishes the outbox rows this worker wrote
// (pacer/ledger/pg_outbox.h) to a Kafka topic with librdkafka's idempotent
// producer, key = campaign, value = encodeOutcomeEvent(), and moves the
// worker's published-up-to cursor past a row only after its delivery report
// says the broker has it. Published rows are deleted in bulk, at most once
// per prune_interval. A crash loses nothing (the rows above the cursor stay)
// and duplicates only what was produced and not yet covered by the stored
// cursor; the same worker id publishes what is left when it starts again.
//
// The running drainer (start()) is pipelined (pacer/outbox_window.h): it
// reads and produces the next batches while up to `in_flight` batches wait
// for their reports, and stores the cursor in the same statement as its next
// read. It has its own PostgreSQL connection and thread: it never shares the
// ledger writer's.
//
// Thread-safety: start()/stop() and stats() may be called from any thread;
// publish(), acknowledge() and drainOnce() belong to one thread at a time
// (the drainer's own once started).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "pacer/ledger/pg_ledger.h"
#include "pacer/logging/logging.h"

namespace pacer {
struct OutcomeEvent;
}

namespace pacer::events {

struct OutcomeDrainerOptions {
  std::string brokers;                      // bootstrap.servers
  std::string topic;                        // the events topic (not empty)
  ledger::PgLedgerOptions pg;               // with outbox_worker: whose rows to publish
  std::size_t batch = 1000;                 // rows per read, produce and delete
  std::size_t in_flight = 4;                // batches produced and not yet acknowledged, at most (not 0)
  std::chrono::milliseconds poll{20};       // how long an empty outbox waits before it is read again
  std::chrono::milliseconds prune_interval{5000};  // published rows are deleted in bulk this often
  std::chrono::milliseconds ack_timeout{30000};  // a batch waits this long for its reports (message.timeout.ms)
  std::map<std::string, std::string> kafka;      // any other producer property
};

struct OutcomeDrainerStats {
  std::uint64_t published = 0;      // events the broker acknowledged (covered by the stored cursor, or deleted)
  std::uint64_t failed = 0;         // produce or delivery failures (the rows stay and go again)
  std::uint64_t errors = 0;         // outbox reads/deletes that failed (PostgreSQL)
  std::int64_t depth = 0;           // this worker's outbox rows now (read at most once a second)
  double lag_seconds = 0;           // age of the oldest of them (0: none)
};

class OutcomeDrainer {
 public:
  // Throws InvalidError for a bad topic, batch, in_flight or producer property.
  OutcomeDrainer(OutcomeDrainerOptions options, logging::LoggerPtr log);
  ~OutcomeDrainer();  // stop()s
  OutcomeDrainer(const OutcomeDrainer&) = delete;
  OutcomeDrainer& operator=(const OutcomeDrainer&) = delete;

  // Runs the drain loop on a thread of its own until stop(). Throws
  // InvalidError when the database has no outbox (schema before 11); an
  // unreachable PostgreSQL is logged and retried by the loop.
  void start();
  // Stops the loop after it has published and deleted what is waiting (at
  // most 10 s, then the reports of what is in flight); rows left stay in the
  // outbox.
  void stop();

  // One round by hand: produces the next batch (at most `batch` rows above
  // the stored cursor, in id order) and waits for their reports (at most ack_timeout). Returns the ids
  // the broker acknowledged, ascending. Throws Ledger*Error when the outbox
  // cannot be read.
  std::vector<std::int64_t> publish();
  // Marks those rows published: the cursor moves up to the round's first row
  // without an ack, acknowledged rows above it are deleted. Throws Ledger*Error.
  void acknowledge(const std::vector<std::int64_t>& ids);
  // publish() then acknowledge(): how many rows were published.
  std::size_t drainOnce();

  OutcomeDrainerStats stats() const;

 private:
  void loop();
  // One step of the running drainer: takes the reports that arrived, deletes
  // what they acknowledged and reads and produces the next batch when the
  // window has room. Returns whether it did anything. Throws Ledger*Error.
  bool pump(std::chrono::steady_clock::time_point now);
  // At the loop's end: waits for the reports in flight, deletes the acked.
  void finish();
  // Before the first read: waits for the writers that were running, and
  // starts the window from the stored cursor. Throws Ledger*Error.
  void resume();
  // Stores the window's cursor if it moved (and with `settle`, deletes the
  // acked rows stranded above a failed one). Returns whether it wrote.
  bool storeCursor(bool settle);
  // Deletes the rows at or below the stored cursor, at most once per
  // prune_interval unless `force`. Throws Ledger*Error.
  void prune(std::chrono::steady_clock::time_point now, bool force);
  void produceEvents(const std::vector<OutcomeEvent>& events);
  void refreshDepth(bool force);

  struct Impl;
  std::unique_ptr<Impl> impl_;
  OutcomeDrainerOptions options_;
  logging::LoggerPtr log_;
  std::atomic<bool> stop_{false};
  std::mutex wake_mu_;
  std::condition_variable wake_;
  std::thread thread_;
  std::atomic<std::uint64_t> published_{0}, failed_{0}, errors_{0};
  std::atomic<std::int64_t> depth_{0};
  std::atomic<double> lag_seconds_{0};
  std::chrono::steady_clock::time_point next_depth_{};
  // The running drainer's state (its thread only).
  bool resumed_ = false;                                // the window starts from the stored cursor
  std::int64_t pruned_up_to_ = 0;                       // the cursor the last prune deleted up to
  std::chrono::steady_clock::time_point next_prune_{};  // no prune before (but at the stop)
  bool caught_up_ = false;                              // the last read came short
  std::chrono::steady_clock::time_point next_read_{};  // no read before (poll after a short one)
  std::chrono::steady_clock::time_point retry_at_{};   // after a failure, no rewind before
  std::chrono::steady_clock::time_point store_retry_at_{};  // after a PostgreSQL error, no statement before
};

}  // namespace pacer::events
