// Parking: durable storage for the excess of campaigns that cannot keep up
// (ParkingInterface; PostgreSQL's in pacer/ledger/pg_parking.h), and the writer
// that does its I/O off the worker loop's thread (ParkWriterInterface;
// pacerd's in pacer/ledger/park_writer.h). WorkerCore (pacer/worker.h) uses both.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "pacer/message.h"
#include "pacer/wall_time.h"

namespace pacer {

// Durable storage for the excess of campaigns that cannot keep up, so their
// Kafka offsets can advance and a slow campaign does not hold back a fast one
// sharing its partition. A parked message leaves parking in the same
// transaction that writes its ledger row (DeliveryRecord::unpark).
// Errors: LedgerUnavailableError / LedgerRejectedError, as the ledger.
class ParkingInterface {
 public:
  virtual ~ParkingInterface() = default;
  // Stores `messages` durably (all or nothing), with their `time_zone`. A
  // message whose id is already in the ledger, or parked and not claimed by
  // this worker, is left as it is; one this worker claimed is handed back
  // (unclaimed) with its new not_before. `not_before` is empty (every message may go at once) or one instant
  // per message: no claim hands it out before then (quiet hours, a deferred
  // frequency cap); WallTime{} (the epoch) means no wait. Returns how many
  // were new.
  virtual std::size_t park(std::span<const Message> messages, std::span<const WallTime> not_before) = 0;
  // Claims up to `max` of `campaign`'s parked messages for this worker, oldest
  // first, skipping those another live worker holds and those whose
  // not_before is after `now` (the caller's wall clock). A claim lasts a
  // lease; renew() extends this worker's claims.
  virtual std::vector<Message> claim(const std::string& campaign, std::size_t max, WallTime now) = 0;
  // Parked messages no live worker holds, per campaign (after a crash, or
  // parked by this worker and not yet claimed), counting only those whose
  // not_before has passed (by the store's own clock: a hint to claim).
  virtual std::vector<std::pair<std::string, std::size_t>> unclaimed() = 0;
  // Extends the lease of every claim this worker holds.
  virtual void renew() = 0;
  // Gives back every claim this worker holds (a graceful stop): the messages
  // stay parked and any worker may claim them at once, without waiting for
  // the lease to run out. Returns how many were given back.
  virtual std::size_t release() = 0;
};
using ParkingInterfacePtr = std::unique_ptr<ParkingInterface>;

// Park writes, claims, lease renewals and the scan for unclaimed parked
// messages off the loop's thread (pacerd: a thread with its own PostgreSQL
// connection, see pacer/ledger/park_writer.h): a claim or a renewal of a few
// thousand rows takes 100-400 ms, which the loop would spend not sending. The
// core hands it batches and claims and learns through poll() which batches
// are durable and what was claimed; a message's offset may be committed only
// after its batch is durable. Thread-safety: every call comes from the core's
// one thread; the work is done elsewhere.
struct ParkClaimAnswer {
  std::vector<Message> messages;  // ParkingInterface::claim's answer
  bool failed = false;            // the claim failed: nothing was claimed
};
struct ParkWriterReport {
  // One entry per batch that finished since the last poll(), in the order
  // submitted: true when durable (ParkingInterface::park returned), false
  // when the write failed (nothing of it may be taken as parked; the caller
  // submits it again, which park() tolerates).
  std::vector<bool> batches;
  // One entry per claim that finished since the last poll(), in the order asked.
  std::vector<ParkClaimAnswer> claims;
  // The answer to requestUnclaimed(), once it came (ParkingInterface::unclaimed).
  std::optional<std::vector<std::pair<std::string, std::size_t>>> unclaimed;
  bool unclaimed_failed = false;  // the scan asked for failed (no answer follows)
  std::size_t renewals = 0;         // renewals asked for that finished since the last poll()
  std::size_t renewals_failed = 0;  // ... of them, those that failed
};

class ParkWriterInterface {
 public:
  virtual ~ParkWriterInterface() = default;
  // Hands a batch to be parked (ParkingInterface::park); returns at once.
  // Batches are written and reported in the order submitted.
  virtual void submit(std::vector<Message> messages, std::vector<WallTime> not_before) = 0;
  // Asks for ParkingInterface::claim(campaign, max, now); the answer comes
  // through poll(), claims in the order asked. A claim goes before the
  // batches waiting to be written (the caller never asks one while a batch of
  // the same campaign is with the writer), so that a backlog being parked
  // does not hold up the claims of campaigns that are sending.
  virtual void requestClaim(std::string campaign, std::size_t max, WallTime now) = 0;
  // Asks for ParkingInterface::renew(), also before the batches waiting; poll() tells when it finished.
  virtual void requestRenew() = 0;
  // Asks for ParkingInterface::unclaimed(); the answer comes through poll().
  virtual void requestUnclaimed() = 0;
  // Moves what finished since the last call into `out` (cleared first).
  virtual void poll(ParkWriterReport& out) = 0;
  // Blocks until every batch, claim and renewal asked for so far has
  // finished; a scan asked for may still be running.
  virtual void wait() = 0;
};
using ParkWriterInterfacePtr = std::unique_ptr<ParkWriterInterface>;

}  // namespace pacer
