#include "pacer/control/pg_control.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <pqxx/pqxx>

#include "pacer/ledger/pg_ledger.h"
#include "pg_control_impl.h"
#include "table_rows.h"

namespace pacer::control {
namespace {

using ledger::campaignRowFrom;
using ledger::kCampaignColumns;
using ledger::kProviderColumns;
using ledger::providerRowFrom;

// A rate as two parameters: whether it is limited, and its value. In SQL:
// CASE WHEN $n THEN $n+1::double precision END (NULL is unlimited).
struct RateParams {
  bool limited;
  double value;
};
RateParams rateParams(const Limit& l) { return RateParams{l.rate.has_value(), l.rate.value_or(0)}; }

std::optional<CampaignRow> fetchCampaign(pqxx::transaction_base& tx, const std::string& id, bool for_update) {
  const pqxx::result r = tx.exec_params(
      fmt::format("SELECT {} FROM campaigns WHERE id = $1{}", kCampaignColumns, for_update ? " FOR UPDATE" : ""), id);
  if (r.empty()) return std::nullopt;
  return campaignRowFrom(r[0]);
}

std::optional<ProviderRow> fetchProvider(pqxx::transaction_base& tx, const std::string& id, bool for_update) {
  const pqxx::result r = tx.exec_params(
      fmt::format("SELECT {} FROM providers p WHERE id = $1{}", kProviderColumns, for_update ? " FOR UPDATE" : ""), id);
  if (r.empty()) return std::nullopt;
  return providerRowFrom(r[0]);
}

// Delivered to listeners when (and only if) the transaction commits.
void announce(pqxx::transaction_base& tx, std::string_view kind, const std::string& id, std::string_view change) {
  tx.exec_params("SELECT pg_notify($1, $2)", std::string(kControlChannel), notifyPayload(kind, id, change));
}

// The row `nc` would insert, for campaignInfoOf's checks before it is written.
CampaignRow rowOf(const NewCampaign& nc) {
  CampaignRow row;
  row.id = nc.id;
  row.state = "active";
  row.limit = nc.limit;
  row.weight = nc.weight;
  row.provider = nc.provider;
  row.priority_class = nc.rules.priority_class.value_or("");
  row.quiet_hours = nc.rules.quiet_hours.value_or("");
  row.time_zone = nc.rules.time_zone.value_or("");
  row.frequency_cap = nc.rules.frequency_cap.value_or("");
  row.cap_policy = nc.rules.cap_policy.value_or("suppress");
  row.failover = nc.rules.failover.value_or(std::vector<std::string>{});
  row.routes = nc.rules.routes.value_or(std::vector<PrefixRoute>{});
  row.callback_url = nc.rules.callback_url.value_or("");
  row.default_ttl_ms = nc.rules.default_ttl_ms.value_or(0);
  return row;
}

LedgerCounts ledgerFrom(const pqxx::row& r) {
  LedgerCounts l;
  l.sent = r[0].as<std::int64_t>();
  l.failed = r[1].as<std::int64_t>();
  l.rejected = r[2].as<std::int64_t>();
  l.invalid_token = r[3].as<std::int64_t>();
  if (!r[4].is_null()) l.last_recorded_at = r[4].as<std::string>();
  l.suppressed = r[5].as<std::int64_t>();
  l.expired = r[6].as<std::int64_t>();
  return l;
}

constexpr const char* kLedgerCounts =
    "SELECT count(*) FILTER (WHERE status = 'sent'), count(*) FILTER (WHERE status = 'failed'), "
    "count(*) FILTER (WHERE status = 'rejected'), "
    "count(*) FILTER (WHERE status = 'invalid_token'), " PACER_UTC("max(recorded_at)") ", "
    "count(*) FILTER (WHERE status = 'suppressed'), count(*) FILTER (WHERE status = 'expired') FROM deliveries";

}  // namespace

std::string campaignNotFound(const std::string& id) {
  return fmt::format("campaign '{}' not found; `pacerctl campaign list` shows the campaigns", id);
}

std::string providerNotFound(const std::string& id) {
  return fmt::format("provider '{}' not found; `pacerctl provider list` shows the providers", id);
}

// Every provider of a failover list exists (an array has no foreign key).
void checkFailoverProviders(pqxx::transaction_base& tx, const std::vector<std::string>& failover) {
  for (const std::string& id : failover)
    if (!fetchProvider(tx, id, false)) throw NotFoundError("failover: " + providerNotFound(id));
}

// Every provider of a campaign's prefix routes exists.
void checkRouteProviders(pqxx::transaction_base& tx, const std::vector<PrefixRoute>& routes) {
  for (const PrefixRoute& r : routes)
    if (!fetchProvider(tx, r.provider, false))
      throw NotFoundError(fmt::format("routes: prefix {}: {}", r.prefix, providerNotFound(r.provider)));
}

PgControl::PgControl(const ConnectOptions& options) : impl_(std::make_unique<Impl>()) {
  impl_->conninfo = options.conninfo;
  impl_->shown = redactConninfo(options.conninfo);
  impl_->guarded([&] {
    // libpq's messages may quote pieces of the string: unreachable() hides
    // its passwords, or the whole message when the string cannot be parsed.
    impl_->conn = std::make_unique<pqxx::connection>(withConnectTimeout(options.conninfo, options.connect_timeout_s));
    pqxx::read_transaction tx(*impl_->conn);
    const bool has_table = tx.exec("SELECT to_regclass('pacer_schema_migrations') IS NOT NULL")[0][0].as<bool>();
    impl_->schema_version =
        has_table ? tx.exec("SELECT coalesce(max(version), 0) FROM pacer_schema_migrations")[0][0].as<int>() : 0;
    return 0;
  });
  const int build = ledger::latestSchemaVersion();
  if (impl_->schema_version < build) {
    throw DatabaseError(fmt::format(
        "the database at '{}' has {} (this pacerctl needs version {}); run `pacerd migrate --postgres ...` first",
        impl_->shown,
        impl_->schema_version == 0 ? std::string("no Pacer schema")
                                   : fmt::format("Pacer schema version {}", impl_->schema_version),
        build));
  }
}

PgControl::~PgControl() = default;

int PgControl::schemaVersion() const noexcept { return impl_->schema_version; }

CampaignRow PgControl::createCampaign(const NewCampaign& nc) {
  return impl_->guarded([&] {
    pqxx::work tx(*impl_->conn);
    if (!nc.provider.empty() && !fetchProvider(tx, nc.provider, false))
      throw NotFoundError(providerNotFound(nc.provider));
    if (nc.rules.failover) checkFailoverProviders(tx, *nc.rules.failover);
    if (nc.rules.routes) checkRouteProviders(tx, *nc.rules.routes);
    const RateParams rate = rateParams(nc.limit);
    const CampaignRules& rules = nc.rules;
    if (std::string problem; !campaignInfoOf(rowOf(nc), &problem))
      throw InvalidValueError(fmt::format("campaign '{}' would not be usable: {}", nc.id, problem));
    const pqxx::result r = tx.exec_params(
        "INSERT INTO campaigns (id, name, send_rate, burst, weight, provider, total, priority_class, quiet_hours, "
        "time_zone, frequency_cap, cap_policy, default_ttl_ms, failover, routes, callback_url) "
        "VALUES ($1, $2, CASE WHEN $3 THEN $4::double precision END, $5, $6, NULLIF($7, ''), "
        "CASE WHEN $8 THEN $9::bigint END, NULLIF($10, ''), NULLIF($11, ''), NULLIF($12, ''), NULLIF($13, ''), $14, "
        "NULLIF($15::bigint, 0), string_to_array(NULLIF($16, 'none'), ','), string_to_array(NULLIF($17, 'none'), ','), NULLIF($18, '')) "
        "ON CONFLICT (id) DO NOTHING RETURNING id",
        nc.id, nc.name, rate.limited, rate.value, nc.limit.burst, nc.weight, nc.provider, nc.total.has_value(),
        nc.total.value_or(0), rules.priority_class.value_or(""), rules.quiet_hours.value_or(""),
        rules.time_zone.value_or(""), rules.frequency_cap.value_or(""), rules.cap_policy.value_or("suppress"),
        rules.default_ttl_ms.value_or(0), formatFailover(rules.failover.value_or(std::vector<std::string>{})),
        formatRoutes(rules.routes.value_or(std::vector<PrefixRoute>{})), rules.callback_url.value_or(""));
    if (r.empty())
      throw RefusedError(fmt::format(
          "campaign '{}' already exists; `pacerctl campaign show {}` shows it and `pacerctl campaign set-rate` "
          "changes its rate",
          nc.id, nc.id));
    announce(tx, "campaign", nc.id, "create");
    CampaignRow row = *fetchCampaign(tx, nc.id, false);
    tx.commit();
    return row;
  });
}

std::vector<CampaignRow> PgControl::campaigns() {
  return impl_->guarded([&] {
    pqxx::read_transaction tx(*impl_->conn);
    std::vector<CampaignRow> out;
    for (const auto& r : tx.exec(fmt::format("SELECT {} FROM campaigns ORDER BY id", kCampaignColumns)))
      out.push_back(campaignRowFrom(r));
    return out;
  });
}

CampaignDetail PgControl::campaign(const std::string& id) {
  return impl_->guarded([&] {
    SnapshotRead tx(*impl_->conn);
    CampaignDetail d;
    auto row = fetchCampaign(tx, id, false);
    if (!row) throw NotFoundError(campaignNotFound(id));
    d.campaign = std::move(*row);
    d.ledger = ledgerFrom(tx.exec_params(std::string(kLedgerCounts) + " WHERE campaign = $1", id)[0]);
    d.parked = tx.exec_params("SELECT count(*) FROM parked WHERE campaign = $1", id)[0][0].as<std::int64_t>();
    if (tx.exec1("SELECT to_regclass('delivery_receipts') IS NOT NULL")[0].as<bool>()) {
      const pqxx::row r = tx.exec_params1(
          "SELECT count(*) FILTER (WHERE receipt_status = 'delivered'), "
          "count(*) FILTER (WHERE receipt_status = 'undelivered'), count(*) FILTER (WHERE receipt_status = 'expired'), "
          "count(*) FILTER (WHERE receipt_status = 'rejected'), count(*) FILTER (WHERE receipt_status = 'unknown'), "
          "count(*) FILTER (WHERE receipt_status IS NULL AND provider_message_id IS NOT NULL) "
          "FROM delivery_receipts WHERE campaign = $1 AND send_status = 'sent'",
          id);
      d.receipts = ReceiptCounts{r[0].as<std::int64_t>(), r[1].as<std::int64_t>(), r[2].as<std::int64_t>(),
                                 r[3].as<std::int64_t>(), r[4].as<std::int64_t>(), r[5].as<std::int64_t>()};
    }
    return d;
  });
}

Change<CampaignRow> PgControl::setCampaignLimit(const std::string& id, const Limit& limit) {
  return impl_->guarded([&] {
    pqxx::work tx(*impl_->conn);
    auto before = fetchCampaign(tx, id, true);
    if (!before) throw NotFoundError(campaignNotFound(id));
    const Transition t = decideTransition(CampaignAction::kSetRate, before->state, id);
    if (t.kind == Transition::Kind::kRefused) throw RefusedError(t.reason);
    const RateParams rate = rateParams(limit);
    tx.exec_params(
        "UPDATE campaigns SET send_rate = CASE WHEN $2 THEN $3::double precision END, burst = $4, "
        "updated_at = now() WHERE id = $1",
        id, rate.limited, rate.value, limit.burst);
    announce(tx, "campaign", id, "set-rate");
    Change<CampaignRow> c{*before, *fetchCampaign(tx, id, false), true};
    tx.commit();
    return c;
  });
}

Change<CampaignRow> PgControl::setCampaignRules(const std::string& id, const CampaignRules& rules) {
  return impl_->guarded([&] {
    pqxx::work tx(*impl_->conn);
    auto before = fetchCampaign(tx, id, true);
    if (!before) throw NotFoundError(campaignNotFound(id));
    const Transition t = decideTransition(CampaignAction::kSetRules, before->state, id);
    if (t.kind == Transition::Kind::kRefused) throw RefusedError(t.reason);
    CampaignRow after = *before;
    after.priority_class = rules.priority_class.value_or(before->priority_class);
    after.quiet_hours = rules.quiet_hours.value_or(before->quiet_hours);
    after.time_zone = rules.time_zone.value_or(before->time_zone);
    after.frequency_cap = rules.frequency_cap.value_or(before->frequency_cap);
    after.cap_policy = rules.cap_policy.value_or(before->cap_policy);
    after.default_ttl_ms = rules.default_ttl_ms.value_or(before->default_ttl_ms);
    after.failover = rules.failover.value_or(before->failover);
    if (rules.failover) checkFailoverProviders(tx, after.failover);
    after.routes = rules.routes.value_or(before->routes);
    if (rules.routes) checkRouteProviders(tx, after.routes);
    after.callback_url = rules.callback_url.value_or(before->callback_url);
    if (std::string problem; !campaignInfoOf(after, &problem))
      throw InvalidValueError(fmt::format("campaign '{}' would not be usable: {}", id, problem));
    if (after.priority_class == before->priority_class && after.quiet_hours == before->quiet_hours &&
        after.time_zone == before->time_zone && after.frequency_cap == before->frequency_cap &&
        after.cap_policy == before->cap_policy && after.default_ttl_ms == before->default_ttl_ms &&
        after.failover == before->failover && after.routes == before->routes &&
        after.callback_url == before->callback_url)
      return Change<CampaignRow>{*before, *before, false};
    tx.exec_params(
        "UPDATE campaigns SET priority_class = NULLIF($2, ''), quiet_hours = NULLIF($3, ''), "
        "time_zone = NULLIF($4, ''), frequency_cap = NULLIF($5, ''), cap_policy = $6, "
        "default_ttl_ms = NULLIF($7::bigint, 0), failover = string_to_array(NULLIF($8, 'none'), ','), "
        "routes = string_to_array(NULLIF($9, 'none'), ','), callback_url = NULLIF($10, ''), updated_at = now() "
        "WHERE id = $1",
        id, after.priority_class, after.quiet_hours, after.time_zone, after.frequency_cap, after.cap_policy,
        after.default_ttl_ms, formatFailover(after.failover), formatRoutes(after.routes), after.callback_url);
    announce(tx, "campaign", id, actionName(CampaignAction::kSetRules));
    Change<CampaignRow> c{*before, *fetchCampaign(tx, id, false), true};
    tx.commit();
    return c;
  });
}

Change<CampaignRow> PgControl::changeCampaignState(const std::string& id, CampaignAction action) {
  return impl_->guarded([&] {
    pqxx::work tx(*impl_->conn);
    auto before = fetchCampaign(tx, id, true);
    if (!before) throw NotFoundError(campaignNotFound(id));
    const Transition t = decideTransition(action, before->state, id);
    switch (t.kind) {
      case Transition::Kind::kRefused: throw RefusedError(t.reason);
      case Transition::Kind::kAlready: return Change<CampaignRow>{*before, *before, false};
      case Transition::Kind::kChange: break;
    }
    tx.exec_params("UPDATE campaigns SET state = $2, updated_at = now() WHERE id = $1", id, t.next_state);
    announce(tx, "campaign", id, actionName(action));
    Change<CampaignRow> c{*before, *fetchCampaign(tx, id, false), true};
    tx.commit();
    return c;
  });
}

CampaignRow PgControl::campaignRow(const std::string& id) {
  return impl_->guarded([&] {
    pqxx::read_transaction tx(*impl_->conn);
    auto row = fetchCampaign(tx, id, false);
    if (!row) throw NotFoundError(campaignNotFound(id));
    return std::move(*row);
  });
}

Change<CampaignRow> PgControl::setCampaignTotal(const std::string& id, std::optional<std::int64_t> total) {
  return impl_->guarded([&] {
    pqxx::work tx(*impl_->conn);
    auto before = fetchCampaign(tx, id, true);
    if (!before) throw NotFoundError(campaignNotFound(id));
    if (before->total == total) return Change<CampaignRow>{*before, *before, false};
    tx.exec_params("UPDATE campaigns SET total = CASE WHEN $2 THEN $3::bigint END, updated_at = now() WHERE id = $1",
                   id, total.has_value(), total.value_or(0));
    announce(tx, "campaign", id, "set-total");
    Change<CampaignRow> c{*before, *fetchCampaign(tx, id, false), true};
    tx.commit();
    return c;
  });
}

CampaignRow PgControl::addToCampaignTotal(const std::string& id, std::int64_t delta) {
  return impl_->guarded([&] {
    pqxx::work tx(*impl_->conn);
    // One statement, so concurrent producers add up instead of overwriting.
    const pqxx::result r = tx.exec_params(
        "UPDATE campaigns SET total = greatest(0, total + $2), updated_at = now() "
        "WHERE id = $1 AND total IS NOT NULL RETURNING id",
        id, delta);
    if (!r.empty() && delta != 0) announce(tx, "campaign", id, "set-total");
    auto row = fetchCampaign(tx, id, false);
    if (!row) throw NotFoundError(campaignNotFound(id));
    tx.commit();
    return std::move(*row);
  });
}

ProviderRow PgControl::createProvider(const std::string& id, const Limit& limit) {
  return impl_->guarded([&] {
    pqxx::work tx(*impl_->conn);
    const RateParams rate = rateParams(limit);
    const pqxx::result r = tx.exec_params(
        "INSERT INTO providers (id, rate, burst) VALUES ($1, CASE WHEN $2 THEN $3::double precision END, $4) "
        "ON CONFLICT (id) DO NOTHING RETURNING id",
        id, rate.limited, rate.value, limit.burst);
    if (r.empty())
      throw RefusedError(fmt::format(
          "provider '{}' already exists; `pacerctl provider list` shows it and `pacerctl provider set-rate` changes "
          "its rate",
          id));
    announce(tx, "provider", id, "create");
    ProviderRow row = *fetchProvider(tx, id, false);
    tx.commit();
    return row;
  });
}

std::vector<ProviderRow> PgControl::providers() {
  return impl_->guarded([&] {
    pqxx::read_transaction tx(*impl_->conn);
    std::vector<ProviderRow> out;
    for (const auto& r : tx.exec(fmt::format("SELECT {} FROM providers p ORDER BY id", kProviderColumns)))
      out.push_back(providerRowFrom(r));
    return out;
  });
}

Change<ProviderRow> PgControl::setProviderLimit(const std::string& id, const Limit& limit) {
  return impl_->guarded([&] {
    pqxx::work tx(*impl_->conn);
    auto before = fetchProvider(tx, id, true);
    if (!before) throw NotFoundError(providerNotFound(id));
    const RateParams rate = rateParams(limit);
    tx.exec_params(
        "UPDATE providers SET rate = CASE WHEN $2 THEN $3::double precision END, burst = $4, updated_at = now() "
        "WHERE id = $1",
        id, rate.limited, rate.value, limit.burst);
    announce(tx, "provider", id, "set-rate");
    Change<ProviderRow> c{*before, *fetchProvider(tx, id, false), true};
    tx.commit();
    return c;
  });
}

StatusReport PgControl::status() {
  return impl_->guarded([&] {
    SnapshotRead tx(*impl_->conn);
    StatusReport s;
    s.schema_version = tx.exec("SELECT coalesce(max(version), 0) FROM pacer_schema_migrations")[0][0].as<int>();
    s.build_schema_version = ledger::latestSchemaVersion();
    for (const char* state : {"active", "paused", "cancelled", "completed"})
      s.campaigns_by_state.emplace_back(state, 0);
    for (const auto& r : tx.exec("SELECT state, count(*) FROM campaigns GROUP BY state")) {
      const std::string state = r[0].as<std::string>();
      bool known = false;
      for (auto& [name, n] : s.campaigns_by_state)
        if (name == state) n = r[1].as<std::int64_t>(), known = true;
      if (!known) s.campaigns_by_state.emplace_back(state, r[1].as<std::int64_t>());
    }
    s.providers = tx.exec("SELECT count(*) FROM providers")[0][0].as<std::int64_t>();
    s.ledger = ledgerFrom(tx.exec(kLedgerCounts)[0]);
    const pqxx::row parked =
        tx.exec("SELECT count(*), count(*) FILTER (WHERE owner IS NOT NULL AND lease_until >= now()) FROM parked")[0];
    s.parked = parked[0].as<std::int64_t>();
    s.parked_claimed = parked[1].as<std::int64_t>();
    return s;
  });
}

}  // namespace pacer::control

