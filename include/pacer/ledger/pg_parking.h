// ParkingInterface on PostgreSQL (the `parked` table, migration 002). It
// holds one connection, opened lazily and again after it breaks. Not
// thread-safe: one owner thread.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "pacer/ledger/pg_ledger.h"
#include "pacer/worker.h"

namespace pacer::ledger {

struct PgParkingOptions {
  PgLedgerOptions connection;
  std::string owner;               // this worker's name in claims: unique per process
  std::chrono::seconds lease{60};  // a claim not renewed for this long is free again
};

ParkingInterfacePtr makePgParking(const PgParkingOptions& options);

}  // namespace pacer::ledger
