// The JSON documents of Pacer's campaigns and providers, built by one set of
// functions for `pacerctl ... --json` and for pacerd's /api/v1 (docs/api.md),
// so the two cannot drift apart. Pure: no I/O, no clock; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "pacer/control/rows.h"
#include "pacer/control/top.h"

namespace pacer::control {

using Json = nlohmann::ordered_json;

// {"id", "name", "state", "send_rate" (null: unlimited), "burst", "weight",
// "provider" (null: none), "updated_at", "total" (null: unknown),
// "priority_class" (null: pacerd's default class), "quiet_hours" (null: none),
// "time_zone" (null: none), "frequency_cap" (null: none), "cap_policy",
// "invalid" (null: pacerd can use the row; else why it skips it)}. A number
// JSON cannot carry (NaN, Infinity, stored with the table's checks dropped)
// is its name as a string, never null.
Json campaignJson(const CampaignRow& c);
// {"id", "rate" (null: unlimited), "burst", "campaigns", "updated_at", "invalid"}
Json providerJson(const ProviderRow& p);
// {"sent", "failed", "rejected", "invalid_token", "suppressed", "last_recorded_at" (null: no row)}
Json ledgerJson(const LedgerCounts& l);

Json campaignListJson(const std::vector<CampaignRow>& rows);  // `campaign list --json`
Json providerListJson(const std::vector<ProviderRow>& rows);  // `provider list --json`
Json campaignDetailJson(const CampaignDetail& d);             // `campaign show --json`

// A change's document (`campaign set-rate|pause|resume|cancel|set-total
// --json`, `provider set-rate --json`): {"change", "changed", KIND: after,
// "previous": before}.
Json changeJson(std::string_view kind, std::string_view change, const Change<CampaignRow>& c);
Json changeJson(std::string_view kind, std::string_view change, const Change<ProviderRow>& c);

// `pacerctl top`'s frame from one database sample: the achieved rate from the
// sent count at the window's start and now.
TopFrame topFrameOf(const TopSnapshot& snap, double window_s);

// What holds a campaign failed over (failoverLimit, docs/routes.md), from the
// `worker` object of a campaign in a worker's state document (GET
// /api/v1/state): its route, route_reason and routes. nullopt when none of
// its routes is failed over, or the object does not say.
std::optional<LimitedBy> failoverLimitOfState(const Json& worker);

}  // namespace pacer::control
