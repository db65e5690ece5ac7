// LedgerInterface on PostgreSQL (libpqxx 6.4). One connection, opened lazily
// and opened again after it breaks. Batches go in as one INSERT ... SELECT
// FROM unnest(...) ON CONFLICT DO NOTHING statement (about 280k rows/s on
// loopback, see ENVIRONMENT.md). Not thread-safe: one owner thread.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "pacer/ledger.h"

namespace pacer::ledger {

struct PgLedgerOptions {
  std::string conninfo;     // libpq connection string, e.g. "host=127.0.0.1 port=5432 dbname=pacer"
  int connect_timeout_s = 5;
  // Non-empty: outcome events are on, and every ledger change (a new
  // deliveries row, a receipt that changed its row) also writes an outbox
  // row owned by this worker id, in the same statement (schema 011). Empty:
  // no outbox rows, and the statements are the ones without it.
  std::string outbox_worker{};
  // Non-empty: HTTP callbacks are on, and every such ledger change of a
  // campaign that has a callback URL also writes a callback_outbox row owned
  // by this worker id, in the same statement (schema 014), with the id of
  // its outbox row when events are on too.
  std::string callback_worker{};
  // With callback_worker set: whether any campaign has a callback URL now,
  // asked once per ledger write (from the writer's thread; must be cheap and
  // thread-safe). False: the statement leaves out the callbacks' CTE, so
  // callbacks cost nothing while no campaign uses them. Empty: always true.
  std::function<bool()> callbacks_wanted{};
};

LedgerInterfacePtr makePgLedger(const PgLedgerOptions& options);

// Applies the schema migrations in config/migrations (embedded at build
// time) that the database has not seen, each in its own transaction, and
// records them in pacer_schema_migrations. Safe to run from several workers
// at once (an advisory lock serialises them). Returns how many it applied.
// Throws LedgerUnavailableError / LedgerRejectedError.
int migrate(const PgLedgerOptions& options);

// The newest schema version this build knows.
int latestSchemaVersion() noexcept;

}  // namespace pacer::ledger
