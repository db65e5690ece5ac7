// The campaign/provider directory on PostgreSQL (the `campaigns` and
// `providers` tables): what pacerd reads its campaigns and providers from.
// Each object holds one connection, opened lazily and again after it breaks.
// Not thread-safe: one owner thread each.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pacer/ledger/pg_ledger.h"
#include "pacer/worker.h"

namespace pacer::ledger {

// Reads and writes campaigns and providers. Throws LedgerUnavailableError /
// LedgerRejectedError. A row that fails its checks (rowProblem in
// pacer/worker.h, or a state this build does not know) is skipped, never
// thrown for: the others still load, and it is named with its reason in
// `problems`.
class PgDirectory {
 public:
  explicit PgDirectory(PgLedgerOptions options);
  ~PgDirectory();
  PgDirectory(const PgDirectory&) = delete;
  PgDirectory& operator=(const PgDirectory&) = delete;

  std::vector<ProviderInfo> providers(std::vector<RowProblem>* problems = nullptr);
  std::vector<CampaignInfo> campaigns(std::vector<RowProblem>* problems = nullptr);
  // One row (a NOTIFY names what changed): nullopt when there is no such row,
  // or when it fails its checks (then *problem says why).
  std::optional<ProviderInfo> provider(const std::string& id, std::optional<std::string>* problem = nullptr);
  std::optional<CampaignInfo> campaign(const std::string& id, std::optional<std::string>* problem = nullptr);
  // Marks completed every active campaign whose total is reached: as many
  // ledger rows as its total, none of its messages parked. Each is announced
  // on the control channel in the same transaction, so every worker applies
  // it (and records a late message for it as rejected: "completed"). Returns
  // their ids. Safe from several workers at once: a row is completed once.
  std::vector<std::string> completeFinished();
  // Inserts or replaces (tests, the demo, pacerctl).
  void putProvider(const ProviderInfo& p);
  void putCampaign(const CampaignInfo& c);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pacer::ledger
