// A ParkWriterInterface that runs a ParkingInterface's park() and
// unclaimed() on a thread of its own, so the loop that hands it batches never
// waits for them. The store it owns is used by that thread only (for
// PostgreSQL: a connection of its own, beside the loop's). Batches are
// written one at a time, in the order handed over; a requested scan goes
// before the next batch. Destroying it waits for the batch being written and
// leaves the others unwritten (never reported durable, so never committed).
#pragma once

#include <functional>
#include <string>

#include "pacer/worker.h"

namespace pacer::ledger {

// `on_error`, if given, hears why a batch or a scan failed (called on the writer's thread, at
// most once per 10 s, with how many failed since the last call): the core only counts them.
using ParkWriterErrorFn = std::function<void(const std::string& reason, std::uint64_t failures)>;
ParkWriterInterfacePtr makeThreadedParkWriter(ParkingInterfacePtr store, ParkWriterErrorFn on_error = {});

}  // namespace pacer::ledger
