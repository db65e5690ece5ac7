// pacerd's writers to PostgreSQL off the loop's thread: parking and its
// writer, and the ledger writer, each on a connection of its own.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>

#include "daemon_parts.h"
#include "pacer/ledger/ledger_writer.h"
#include "pacer/ledger/park_writer.h"
#include "pacer/ledger/pg_ledger.h"
#include "pacer/ledger/pg_parking.h"

namespace pacer::worker {

ParkingInterfacePtr makeParking(const DaemonOptions& o, const ledger::PgLedgerOptions& pg,
                                ParkWriterInterfacePtr& writer, const logging::LoggerPtr& log) {
  if (!o.parking) return nullptr;
  ledger::PgParkingOptions po;
  po.connection = pg;
  char host[256] = "host";
  ::gethostname(host, sizeof host - 1);
  po.owner = fmt::format("{}:{}:{}", host, ::getpid(), std::chrono::steady_clock::now().time_since_epoch().count());
  po.lease = o.parking_lease;
  auto told = [log](const std::string& why, std::uint64_t n) {
    log->warn("event=park_write_failed failures={} reason=\"{}\"", n, why);
  };
  if (o.park_writer) writer = ledger::makeThreadedParkWriter(ledger::makePgParking(po), told);
  return ledger::makePgParking(po);
}

// The loop hands its batches over and goes on: a commit's fsync (4 ms on
// average, up to 70 ms) would otherwise hold up lease tokens falling due.
// The writer's ledger has the loop's options: its statements write the
// outbox and callback rows of the same batch.
LedgerWriterInterfacePtr makeLedgerWriter(const ledger::PgLedgerOptions& pg, const logging::LoggerPtr& log) {
  auto told = [log](const std::string& why, std::uint64_t n) {
    log->warn("event=ledger_write_failed failures={} reason=\"{}\"", n, why);
  };
  return ledger::makeThreadedLedgerWriter(ledger::makePgLedger(pg), told);
}

}  // namespace pacer::worker
