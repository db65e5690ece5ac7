// pacerctl's PostgreSQL side (libpqxx 6.4): reads and changes the campaigns
// and providers tables, and announces every change on the pacer_control
// channel with NOTIFY in the same transaction, so a listener sees it exactly
// when it is committed. One connection, opened by the constructor. Not
// thread-safe: one owner. Every error is a ControlError (control/values.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pacer/control/rows.h"
#include "pacer/control/tokens.h"
#include "pacer/control/values.h"

namespace pacer::control {

struct ConnectOptions {
  std::string conninfo;  // libpq: "host=... dbname=..." or postgresql://...
  int connect_timeout_s = 5;
};

// topSnapshot() counts a ledger row once and for all when it was recorded at
// least this long before the refresh: pacerd's ledger transactions (one
// INSERT batch, or unpark-and-record) take milliseconds, so no row with an
// older recorded_at commits later.
inline constexpr double kTopSettleS = 60;

class PgControl {
 public:
  // Connects and checks that the database has Pacer's schema. Throws
  // UnreachableError, or DatabaseError when it has not been migrated.
  explicit PgControl(const ConnectOptions& options);
  ~PgControl();
  PgControl(const PgControl&) = delete;
  PgControl& operator=(const PgControl&) = delete;

  int schemaVersion() const noexcept;  // as found by the constructor

  // Throws RefusedError (the id exists) or NotFoundError (the provider).
  CampaignRow createCampaign(const NewCampaign& c);
  std::vector<CampaignRow> campaigns();            // by id
  CampaignDetail campaign(const std::string& id);  // NotFoundError
  // NotFoundError; RefusedError when the campaign is cancelled or completed.
  Change<CampaignRow> setCampaignLimit(const std::string& id, const Limit& limit);
  // Writes the rules `rules` sets and announces "set-rules" (nothing written
  // when every one is already so). The row after must pass campaignInfoOf's
  // checks (quiet hours need a time zone): InvalidValueError otherwise.
  // NotFoundError; RefusedError when the campaign is cancelled or completed.
  Change<CampaignRow> setCampaignRules(const std::string& id, const CampaignRules& rules);
  // pause, resume or cancel (decideTransition). NotFoundError, RefusedError.
  Change<CampaignRow> changeCampaignState(const std::string& id, CampaignAction action);
  // The campaign row alone, without counting its ledger. NotFoundError.
  CampaignRow campaignRow(const std::string& id);
  // Sets the total (nullopt: unknown) in any state and announces "set-total".
  // NotFoundError.
  Change<CampaignRow> setCampaignTotal(const std::string& id, std::optional<std::int64_t> total);
  // Adds `delta` (may be negative; the total never goes below 0) to a known
  // total and announces "set-total"; an unknown total stays unknown and
  // nothing is written. Returns the row after. NotFoundError.
  CampaignRow addToCampaignTotal(const std::string& id, std::int64_t delta);

  // Counts for `pacerctl top`: each active or paused campaign's ledger rows by
  // status, its sent rows of the last `window_s` seconds, and (total unknown)
  // its parked rows. Served by the index deliveries (campaign, recorded_at)
  // INCLUDE (status) of migration 4. Incremental: the first call (and the
  // first for a campaign) counts all of a campaign's rows; later calls read
  // only the rows recorded since max(window_s, 60) s before the previous call
  // and add them to what this object has kept. A row whose recorded_at is
  // over 60 s older than its commit would be missed (pacerd's ledger
  // transactions take milliseconds). `settle_s` is that 60 s; tests shorten it.
  TopSnapshot topSnapshot(double window_s, double settle_s = kTopSettleS);

  ProviderRow createProvider(const std::string& id, const Limit& limit);            // RefusedError
  std::vector<ProviderRow> providers();                                             // by id
  Change<ProviderRow> setProviderLimit(const std::string& id, const Limit& limit);  // NotFoundError

  StatusReport status();

  // Hands every invalid_tokens row that `filter` lets through to `each`, by
  // (provider, token), from one snapshot read in pages (memory stays bounded
  // however many tokens there are). `each` may throw; nothing is written.
  void invalidTokens(const TokenFilter& filter, const std::function<void(const InvalidTokenRow&)>& each);
  // How many invalid_tokens rows `filter` lets through.
  std::int64_t countInvalidTokens(const TokenFilter& filter);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The error texts for ids that do not exist, with the command that lists them.
std::string campaignNotFound(const std::string& id);
std::string providerNotFound(const std::string& id);

}  // namespace pacer::control
