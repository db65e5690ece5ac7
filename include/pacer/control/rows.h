// The campaigns, providers and ledger as pacerctl, the console and the API
// see them: the values PgControl reads and writes, and the JSON documents
// (json_docs.h) are built from. Plain values: no I/O; thread-safe to copy.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pacer/control/values.h"

namespace pacer::control {

struct LedgerCounts {
  std::int64_t sent = 0;
  std::int64_t failed = 0;
  std::int64_t rejected = 0;
  std::int64_t invalid_token = 0;  // the recipient's push token was dead
  std::string last_recorded_at;    // empty: no row
  std::int64_t suppressed = 0;     // a frequency cap refused the message
  std::int64_t expired = 0;        // past its deadline before it could be sent
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
  std::optional<std::int64_t> default_ttl_ms;  // parseTtlText's milliseconds; 0: none (NULL)
  std::optional<std::vector<std::string>> failover;  // parseFailoverText's list; empty: none
  std::optional<std::vector<PrefixRoute>> routes;    // parseRoutesText's routes; empty: none
  std::optional<std::string> callback_url;           // parseCallbackUrlText's URL; "": none (NULL)
  bool any() const noexcept {
    return priority_class || quiet_hours || time_zone || frequency_cap || cap_policy || default_ttl_ms || failover ||
           routes || callback_url;
  }
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
    std::int64_t parked = 0;          // rows in `parked` (the backlog uses them only when the total is unknown)
    // Of them, those waiting for a time (not_before later than now): for
    // their recipients' quiet hours to end (the campaign has quiet hours and
    // the time is a whole minute, as the end of a quiet window always is),
    // or else for a deferred frequency cap (a cap's time is to the millisecond).
    std::int64_t parked_quiet = 0, parked_capped = 0;
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

}  // namespace pacer::control
