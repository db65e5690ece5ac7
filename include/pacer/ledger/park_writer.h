// A ParkWriterInterface that runs a ParkingInterface's park(), claim(),
// renew() and unclaimed() on a thread of its own, so the loop that hands it
// work never waits for them. The store it owns is used by that thread only
// (for PostgreSQL: a connection of its own, beside the loop's). One thing at
// a time: a requested scan first, then the claims and renewals in the order
// asked, then the batches in the order handed over. Destroying it waits for
// what is being done and leaves the rest undone (a batch never reported
// durable, so never committed; a claim never answered, its rows left to the
// lease).
#pragma once

#include <functional>
#include <string>

#include "pacer/parking.h"

namespace pacer::ledger {

// `on_error`, if given, hears why a batch, claim, renewal or scan failed (called on the
// writer's thread, at most once per 10 s, with how many failed since the last call): the core
// only counts them.
using ParkWriterErrorFn = std::function<void(const std::string& reason, std::uint64_t failures)>;
ParkWriterInterfacePtr makeThreadedParkWriter(ParkingInterfacePtr store, ParkWriterErrorFn on_error = {});

}  // namespace pacer::ledger
