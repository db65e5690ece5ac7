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

#include "pacer/control/tokens.h"
#include "pacer/control/values.h"

namespace pacer::control {

struct ConnectOptions {
  std::string conninfo;  // libpq: "host=... dbname=..." or postgresql://...
  int connect_timeout_s = 5;
};

struct LedgerCounts {
  std::int64_t sent = 0;
  std::int64_t failed = 0;
  std::int64_t rejected = 0;
  std::int64_t invalid_token = 0;  // the recipient's push token was dead
  std::string last_recorded_at;    // empty: no row
  std::int64_t suppressed = 0;     // a frequency cap refused the message
};

// Delivery receipts of a campaign's sent messages (SMPP): matched to the
// ledger's rows by the provider's message id.
struct ReceiptCounts {
  std::int64_t delivered = 0, undelivered = 0, expired = 0, rejected = 0, unknown = 0;
  std::int64_t pending = 0;  // sent with a provider id, no receipt yet
};

struct CampaignDetail {
  CampaignRow campaign;
  LedgerCounts ledger;
  std::int64_t parked = 0;  // messages waiting in `parked`
  ReceiptCounts receipts;   // all 0 before schema 6
};

struct StatusReport {
  int schema_version = 0;                                                // the database's
  int build_schema_version = 0;                                          // the newest this build knows
  std::vector<std::pair<std::string, std::int64_t>> campaigns_by_state;  // all four states, in order
  std::int64_t providers = 0;
  LedgerCounts ledger;
  std::int64_t parked = 0;
  std::int64_t parked_claimed = 0;  // claimed back by a live worker (lease not expired)
};

// Which dead push tokens `pacerctl tokens export|count` reads.
struct TokenFilter {
  std::optional<std::string> provider;  // nullopt: every provider
  std::optional<std::string> since;     // last_seen at or after it (parseSinceTime's form); nullopt: any
};

template <typename Row>
struct Change {
  Row before;
  Row after;
  bool changed = false;  // false: it already was so; nothing written, nothing announced
};

// Priority and recipient rules to write, as parse*Text (values.h) returns
// them: nullopt leaves the column as it is (its default on create); "" is NULL.
struct CampaignRules {
  std::optional<std::string> priority_class;
  std::optional<std::string> quiet_hours;
  std::optional<std::string> time_zone;
  std::optional<std::string> frequency_cap;
  std::optional<std::string> cap_policy;  // never "": suppress or defer
  bool any() const noexcept { return priority_class || quiet_hours || time_zone || frequency_cap || cap_policy; }
};

struct NewCampaign {
  std::string id;
  std::string name;
  Limit limit;
  double weight = 1;
  std::string provider;               // empty: none
  std::optional<std::int64_t> total;  // nullopt: unknown
  CampaignRules rules;                // each field nullopt: the column's default
};

// One sample of the active and paused campaigns for `pacerctl top`, read in
// one snapshot with one statement.
struct TopSnapshot {
  double at_epoch_s = 0;  // the database's now(), seconds since the epoch
  std::string at_utc;     // the same, 2026-11-23T13:40:05Z
  struct Campaign {
    std::string id;
    std::string state;
    std::string provider;  // empty: none
    std::optional<double> send_rate;
    std::optional<std::int64_t> total;
    std::int64_t sent = 0;
    std::int64_t failed = 0;
    std::int64_t rejected = 0;
    std::int64_t invalid_token = 0;
    std::int64_t suppressed = 0;
    std::string priority_class;       // empty: the default class
    std::int64_t sent_in_window = 0;  // sent rows with recorded_at in (now - window, now]
    std::int64_t parked = 0;          // counted only when the total is unknown (else 0)
    bool has_receipts = false;        // some sent row carries a provider message id
    std::int64_t delivered = 0, undelivered = 0, receipts_pending = 0;
  };
  std::vector<Campaign> campaigns;  // by id
  struct Provider {
    std::string id;
    std::optional<double> rate;
  };
  std::vector<Provider> providers;  // by id
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
