#include "pacer/ledger/pg_outbox.h"

#include <fmt/format.h>
#include <pqxx/pqxx>
#include <thread>

#include "pg_common.h"

namespace pacer::ledger {

struct PgOutbox::Impl {
  PgLedgerOptions options;
  std::unique_ptr<pqxx::connection> conn;
  bool locked = false;  // the worker id's advisory lock is held on `conn`

  // guarded(), on a connection that holds the worker id's lock: one drainer per id, or
  // one's cursor could pass rows the other's writer commits later (lost events).
  template <class Fn>
  auto run(Fn&& fn) {
    if (!conn || !conn->is_open()) locked = false;
    return guarded(conn, options, [&](pqxx::connection& c) {
      if (!locked) {
        pqxx::nontransaction tx(c);
        locked = tx.exec_params1("SELECT pg_try_advisory_lock(hashtextextended('pacer.outbox:' || $1, 0))",
                                 options.outbox_worker)[0]
                     .as<bool>();
        if (!locked)
          throw OutboxWorkerBusyError(fmt::format(
              "events.worker_id '{}' is in use by another running pacerd (it holds the id's PostgreSQL advisory "
              "lock); give each worker its own events.worker_id",
              options.outbox_worker));
      }
      return fn(c);
    });
  }
};

PgOutbox::PgOutbox(PgLedgerOptions options) : impl_(std::make_unique<Impl>()) {
  if (options.outbox_worker.empty()) throw LedgerRejectedError("outbox: the worker id is empty");
  impl_->options = std::move(options);
}

// The lock goes back before the connection closes: the server frees a closed session's locks
// only when its backend ends, a moment later, and a pacerd started at once (a restart) would
// find the id taken.
PgOutbox::~PgOutbox() {
  if (!impl_->locked || !impl_->conn || !impl_->conn->is_open()) return;
  try {
    pqxx::nontransaction tx(*impl_->conn);
    tx.exec_params("SELECT pg_advisory_unlock(hashtextextended('pacer.outbox:' || $1, 0))",
                   impl_->options.outbox_worker);
  } catch (const std::exception&) {  // closing anyway: the server frees it then
  }
}

namespace {

constexpr const char* kColumns =
    "id, kind, message_id, campaign, status, reason, provider, provider_message_id, attempts, "
    "(extract(epoch FROM recorded_at) * 1000)::bigint, coalesce((extract(epoch FROM done_at) * 1000)::bigint, 0)";

// kColumns with the callbacks' outbox under the alias o.
constexpr const char* kCallbackColumns =
    "o.id, o.kind, o.message_id, o.campaign, o.status, o.reason, o.provider, o.provider_message_id, o.attempts, "
    "(extract(epoch FROM o.recorded_at) * 1000)::bigint, coalesce((extract(epoch FROM o.done_at) * 1000)::bigint, 0)";

std::vector<OutcomeEvent> events(const pqxx::result& res) {
  std::vector<OutcomeEvent> out;
  out.reserve(res.size());
  for (const auto& row : res) {
    OutcomeEvent& e = out.emplace_back();
    e.id = row[0].as<std::int64_t>();
    e.kind = row[1].as<std::string>();
    e.message_id = row[2].as<std::string>();
    e.campaign = row[3].as<std::string>();
    e.status = row[4].as<std::string>();
    e.reason = row[5].as<std::string>();
    e.provider = row[6].as<std::string>();
    e.provider_message_id = row[7].as<std::string>();
    e.attempts = row[8].as<std::int32_t>();
    e.recorded_at_ms = row[9].as<std::int64_t>();
    e.done_at_ms = row[10].as<std::int64_t>();
  }
  return out;
}

}  // namespace

// Upserts the worker's cursor ($1, $2); it never goes back.
constexpr const char* kStoreCursor =
    "INSERT INTO outbox_cursor (worker, published_up_to, updated_at) VALUES ($1, $2, now()) "
    "ON CONFLICT (worker) DO UPDATE SET published_up_to = greatest(outbox_cursor.published_up_to, "
    "EXCLUDED.published_up_to), updated_at = EXCLUDED.updated_at";

// The worker ($1)'s stored cursor, as an SQL expression.
constexpr const char* kCursorOf =
    "coalesce((SELECT published_up_to FROM outbox_cursor WHERE worker = $1), 0)";

std::int64_t PgOutbox::storedCursor() {
  return impl_->run([&](pqxx::connection& c) {
    pqxx::read_transaction tx(c);
    return tx.exec_params1(fmt::format("SELECT {}", kCursorOf), impl_->options.outbox_worker)[0].as<std::int64_t>();
  });
}

bool PgOutbox::awaitEarlierWriters(std::chrono::milliseconds limit) {
  // Only a transaction that has written (it holds a transaction id) in this database can commit
  // an outbox row: a long reader, a backup or another database's work does not hold this up, as
  // the cluster-wide snapshot horizon did.
  const auto until = std::chrono::steady_clock::now() + limit;
  const std::string writers = impl_->run([&](pqxx::connection& c) {
    pqxx::nontransaction tx(c);
    return tx
        .exec1("SELECT coalesce(string_agg(backend_xid::text, ','), '') FROM pg_stat_activity "
               "WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_xid IS NOT NULL")[0]
        .as<std::string>();
  });
  if (writers.empty()) return true;
  for (;;) {
    const std::int64_t left = impl_->run([&](pqxx::connection& c) {
      pqxx::nontransaction tx(c);
      return tx
          .exec_params1("SELECT count(*) FROM pg_stat_activity WHERE backend_xid::text = ANY(string_to_array($1, ','))",
                        writers)[0]
          .as<std::int64_t>();
    });
    if (left == 0) return true;
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::vector<OutcomeEvent> PgOutbox::next(std::size_t limit) {
  return impl_->run([&](pqxx::connection& c) {
    pqxx::read_transaction tx(c);
    return events(tx.exec_params(
        fmt::format("SELECT {} FROM outbox WHERE worker = $1 AND id > {} ORDER BY id LIMIT $2", kColumns, kCursorOf),
        impl_->options.outbox_worker, static_cast<std::int64_t>(limit)));
  });
}

std::vector<OutcomeEvent> PgOutbox::next(std::int64_t after, std::size_t limit, std::optional<std::int64_t> cursor) {
  if (!cursor) {
    return impl_->run([&](pqxx::connection& c) {
      pqxx::read_transaction tx(c);
      return events(tx.exec_params(
          fmt::format("SELECT {} FROM outbox WHERE worker = $1 AND id > $2 ORDER BY id LIMIT $3", kColumns),
          impl_->options.outbox_worker, after, static_cast<std::int64_t>(limit)));
    });
  }
  return impl_->run([&](pqxx::connection& c) {
    pqxx::work tx(c);
    // One row updated per batch: the published rows stay until prune().
    pqxx::result res = tx.exec_params(
        fmt::format("WITH moved AS ({}) SELECT {} FROM outbox WHERE worker = $1 AND id > $3 ORDER BY id LIMIT $4",
                    kStoreCursor, kColumns),
        impl_->options.outbox_worker, *cursor, after, static_cast<std::int64_t>(limit));
    tx.commit();
    return events(res);
  });
}

void PgOutbox::store(std::int64_t cursor, std::span<const std::int64_t> remove) {
  const std::vector<std::int64_t> list(remove.begin(), remove.end());
  impl_->run([&](pqxx::connection& c) {
    pqxx::work tx(c);
    tx.exec_params(kStoreCursor, impl_->options.outbox_worker, cursor);
    if (!list.empty())
      tx.exec_params("DELETE FROM outbox WHERE worker = $1 AND id = ANY($2::bigint[])", impl_->options.outbox_worker,
                     numberArray(list));
    tx.commit();
    return 0;
  });
}

std::size_t PgOutbox::prune() {
  return impl_->run([&](pqxx::connection& c) {
    pqxx::work tx(c);
    const pqxx::result r = tx.exec_params(fmt::format("DELETE FROM outbox WHERE worker = $1 AND id <= {}", kCursorOf),
                                          impl_->options.outbox_worker);
    tx.commit();
    return static_cast<std::size_t>(r.affected_rows());
  });
}

OutboxDepth PgOutbox::depth() {
  return impl_->run([&](pqxx::connection& c) {
    pqxx::read_transaction tx(c);
    const pqxx::row row = tx.exec_params1(
        fmt::format("SELECT count(*), coalesce(extract(epoch FROM clock_timestamp() - min(recorded_at)), 0)::float8 "
                    "FROM outbox WHERE worker = $1 AND id > {}",
                    kCursorOf),
        impl_->options.outbox_worker);
    return OutboxDepth{row[0].as<std::int64_t>(), std::max(0.0, row[1].as<double>())};
  });
}

struct PgCallbackOutbox::Impl {
  PgLedgerOptions options;
  std::unique_ptr<pqxx::connection> conn;
};

PgCallbackOutbox::PgCallbackOutbox(PgLedgerOptions options) : impl_(std::make_unique<Impl>()) {
  if (options.callback_worker.empty()) throw LedgerRejectedError("callback outbox: the worker id is empty");
  impl_->options = std::move(options);
}

PgCallbackOutbox::~PgCallbackOutbox() = default;

std::vector<CallbackEvent> PgCallbackOutbox::next(std::int64_t after, std::size_t limit,
                                                  std::span<const std::int64_t> remove) {
  const std::vector<std::int64_t> list(remove.begin(), remove.end());
  return guarded(impl_->conn, impl_->options, [&](pqxx::connection& c) {
    pqxx::work tx(c);
    // The removed ids are all at most `after`, so the SELECT (which sees the
    // rows as before the DELETE) reads none of them again.
    const pqxx::result res = tx.exec_params(
        fmt::format("WITH gone AS (DELETE FROM callback_outbox WHERE worker = $1 AND id = ANY($4::bigint[])) "
                    "SELECT {}, coalesce(c.callback_url, '') FROM callback_outbox o LEFT JOIN campaigns c "
                    "ON c.id = o.campaign WHERE o.worker = $1 AND o.id > $2 ORDER BY o.id LIMIT $3",
                    kCallbackColumns),
        impl_->options.callback_worker, after, static_cast<std::int64_t>(limit), numberArray(list));
    tx.commit();
    std::vector<OutcomeEvent> read = events(res);
    std::vector<CallbackEvent> out;
    out.reserve(read.size());
    for (std::size_t i = 0; i < read.size(); ++i)
      out.push_back(
          CallbackEvent{std::move(read[i]), res[static_cast<pqxx::result::size_type>(i)][11].as<std::string>()});
    return out;
  });
}

std::size_t PgCallbackOutbox::remove(std::span<const std::int64_t> ids) {
  if (ids.empty()) return 0;
  const std::vector<std::int64_t> list(ids.begin(), ids.end());
  return guarded(impl_->conn, impl_->options, [&](pqxx::connection& c) {
    pqxx::work tx(c);
    const pqxx::result r = tx.exec_params("DELETE FROM callback_outbox WHERE worker = $1 AND id = ANY($2::bigint[])",
                                          impl_->options.callback_worker, numberArray(list));
    tx.commit();
    return static_cast<std::size_t>(r.affected_rows());
  });
}

OutboxDepth PgCallbackOutbox::depth() {
  return guarded(impl_->conn, impl_->options, [&](pqxx::connection& c) {
    pqxx::read_transaction tx(c);
    const pqxx::row row = tx.exec_params1(
        "SELECT count(*), coalesce(extract(epoch FROM clock_timestamp() - min(recorded_at)), 0)::float8 "
        "FROM callback_outbox WHERE worker = $1",
        impl_->options.callback_worker);
    return OutboxDepth{row[0].as<std::int64_t>(), std::max(0.0, row[1].as<double>())};
  });
}

}  // namespace pacer::ledger
