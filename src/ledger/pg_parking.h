// ParkingInterface on PostgreSQL (the `parked` table, migration 002), and the
// campaign/provider directory (the `campaigns` and `providers` tables).
// Each object holds one connection, opened lazily and again after it breaks.
// Not thread-safe: one owner thread each.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ledger/pg_ledger.h"
#include "pacer/worker.h"

namespace pacer::ledger {

struct PgParkingOptions {
  PgLedgerOptions connection;
  std::string owner;                          // this worker's name in claims: unique per process
  std::chrono::seconds lease{60};             // a claim not renewed for this long is free again
};

ParkingInterfacePtr makePgParking(const PgParkingOptions& options);

// Reads and writes campaigns and providers. Throws LedgerUnavailableError /
// LedgerRejectedError; a row with a state the code does not know is skipped
// with its id in `problems`.
class PgDirectory {
 public:
  explicit PgDirectory(PgLedgerOptions options);
  ~PgDirectory();
  PgDirectory(const PgDirectory&) = delete;
  PgDirectory& operator=(const PgDirectory&) = delete;

  std::vector<ProviderInfo> providers();
  std::vector<CampaignInfo> campaigns(std::vector<std::string>* problems = nullptr);
  // One row (a NOTIFY names what changed): nullopt when there is no such row,
  // or for a campaign whose state is unknown (then *unknown_state is set).
  std::optional<ProviderInfo> provider(const std::string& id);
  std::optional<CampaignInfo> campaign(const std::string& id, bool* unknown_state = nullptr);
  // Inserts or replaces (tests, the demo, pacerctl).
  void putProvider(const ProviderInfo& p);
  void putCampaign(const CampaignInfo& c);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pacer::ledger
