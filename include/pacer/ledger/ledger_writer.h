// A LedgerWriterInterface that runs a LedgerInterface's record() and
// recordReceipts() on a thread of its own, so the loop that hands it batches
// never waits on a commit (a PostgreSQL commit with its fsync takes 4 ms on
// average and up to 70 ms, while lease tokens falling due are forfeited
// after 7.5 ms late). The store it owns is used by that thread only (for
// PostgreSQL: a connection of its own, beside the loop's). Batches are
// written one at a time, in the order handed over. Destroying it waits for
// the batch being written and leaves the others unwritten (never reported
// durable, so never committed).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "pacer/ledger.h"

namespace pacer::ledger {

// `on_error`, if given, hears why a batch failed (called on the writer's thread, at most once
// per 10 s, with how many failed since the last call): the core only counts them.
using LedgerWriterErrorFn = std::function<void(const std::string& reason, std::uint64_t failures)>;
LedgerWriterInterfacePtr makeThreadedLedgerWriter(LedgerInterfacePtr store, LedgerWriterErrorFn on_error = {});

}  // namespace pacer::ledger
