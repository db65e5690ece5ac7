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

LedgerCounts ledgerFrom(const pqxx::row& r) {
  LedgerCounts l;
  l.sent = r[0].as<std::int64_t>();
  l.failed = r[1].as<std::int64_t>();
  l.rejected = r[2].as<std::int64_t>();
  l.invalid_token = r[3].as<std::int64_t>();
  if (!r[4].is_null()) l.last_recorded_at = r[4].as<std::string>();
  return l;
}

constexpr const char* kLedgerCounts =
    "SELECT count(*) FILTER (WHERE status = 'sent'), count(*) FILTER (WHERE status = 'failed'), "
    "count(*) FILTER (WHERE status = 'rejected'), "
    "count(*) FILTER (WHERE status = 'invalid_token'), " PACER_UTC("max(recorded_at)") " FROM deliveries";

using SnapshotRead = pqxx::transaction<pqxx::repeatable_read, pqxx::read_only>;

// A PostgreSQL text[] literal: {"a","b\"c"} (ids are UTF-8 without control characters).
std::string textArrayLiteral(const std::vector<std::string>& items) {
  std::string out = "{";
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += ',';
    out += '"';
    for (char c : items[i]) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  return out + "}";
}

}  // namespace

std::string campaignNotFound(const std::string& id) {
  return fmt::format("campaign '{}' not found; `pacerctl campaign list` shows the campaigns", id);
}

std::string providerNotFound(const std::string& id) {
  return fmt::format("provider '{}' not found; `pacerctl provider list` shows the providers", id);
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
    const RateParams rate = rateParams(nc.limit);
    const pqxx::result r = tx.exec_params(
        "INSERT INTO campaigns (id, name, send_rate, burst, weight, provider, total) "
        "VALUES ($1, $2, CASE WHEN $3 THEN $4::double precision END, $5, $6, NULLIF($7, ''), "
        "CASE WHEN $8 THEN $9::bigint END) "
        "ON CONFLICT (id) DO NOTHING RETURNING id",
        nc.id, nc.name, rate.limited, rate.value, nc.limit.burst, nc.weight, nc.provider, nc.total.has_value(),
        nc.total.value_or(0));
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

namespace {

// The cutoff never moves back (a clock set back), or rows would be counted twice.
constexpr const char* kTopCampaignsSql =
    "WITH t AS (SELECT now() AS at, greatest(now() - make_interval(secs => $1), $4::timestamptz) AS cutoff) "
    "SELECT c.id, c.state, coalesce(c.provider, ''), c.send_rate, c.total, "
    "  d.settled_sent, d.settled_failed, d.settled_rejected, d.live_sent, d.live_failed, d.live_rejected, "
    "  d.recent, coalesce(p.parked, 0), extract(epoch FROM t.at)::double precision, " PACER_UTC("t.at") ", "
    "  t.cutoff::text, d.settled_invalid, d.live_invalid "
    "FROM campaigns c CROSS JOIN t "
    "CROSS JOIN LATERAL (SELECT "
    "  count(*) FILTER (WHERE status = 'sent' AND recorded_at < t.cutoff) AS settled_sent, "
    "  count(*) FILTER (WHERE status = 'failed' AND recorded_at < t.cutoff) AS settled_failed, "
    "  count(*) FILTER (WHERE status = 'rejected' AND recorded_at < t.cutoff) AS settled_rejected, "
    "  count(*) FILTER (WHERE status = 'sent' AND recorded_at >= t.cutoff) AS live_sent, "
    "  count(*) FILTER (WHERE status = 'failed' AND recorded_at >= t.cutoff) AS live_failed, "
    "  count(*) FILTER (WHERE status = 'rejected' AND recorded_at >= t.cutoff) AS live_rejected, "
    "  count(*) FILTER (WHERE status = 'invalid_token' AND recorded_at < t.cutoff) AS settled_invalid, "
    "  count(*) FILTER (WHERE status = 'invalid_token' AND recorded_at >= t.cutoff) AS live_invalid, "
    "  count(*) FILTER (WHERE status = 'sent' AND recorded_at > t.at - make_interval(secs => $2)) AS recent "
    "  FROM deliveries WHERE campaign = c.id AND recorded_at >= "
    "    CASE WHEN c.id = ANY($3::text[]) THEN $4::timestamptz ELSE '-infinity'::timestamptz END) d "
    "LEFT JOIN LATERAL (SELECT count(*) AS parked FROM parked WHERE campaign = c.id AND c.total IS NULL) p "
    "ON true "
    "WHERE c.state IN ('active', 'paused') "
    // A campaign that completed in the last hour stays in view, as done.
    "OR (c.state = 'completed' AND c.updated_at > t.at - interval '1 hour') ORDER BY c.id";

void readTopProviders(SnapshotRead& tx, TopSnapshot& s) {
  for (const auto& row : tx.exec("SELECT id, rate FROM providers ORDER BY id")) {
    TopSnapshot::Provider p;
    p.id = row[0].as<std::string>();
    if (!row[1].is_null()) p.rate = row[1].as<double>();
    s.providers.push_back(std::move(p));
  }
}

// Receipts: only rows with a provider message id (a partial index), so
// campaigns sent over HTTP cost nothing here.
void readTopReceipts(SnapshotRead& tx, TopSnapshot& s) {
  if (tx.exec1("SELECT to_regclass('delivery_receipts') IS NOT NULL")[0].as<bool>()) {
    std::map<std::string, TopSnapshot::Campaign*> by_id;
    for (auto& c : s.campaigns) by_id[c.id] = &c;
    for (const auto& row :
         tx.exec("SELECT campaign, count(*) FILTER (WHERE receipt_status = 'delivered'), "
                 "count(*) FILTER (WHERE receipt_status IN ('undelivered', 'expired', 'rejected', 'unknown')), "
                 "count(*) FILTER (WHERE receipt_status IS NULL) FROM delivery_receipts "
                 "WHERE provider_message_id IS NOT NULL AND send_status = 'sent' GROUP BY campaign")) {
      auto it = by_id.find(row[0].as<std::string>());
      if (it == by_id.end()) continue;
      it->second->has_receipts = true;
      it->second->delivered = row[1].as<std::int64_t>();
      it->second->undelivered = row[2].as<std::int64_t>();
      it->second->receipts_pending = row[3].as<std::int64_t>();
    }
  }
}
}  // namespace

TopSnapshot PgControl::topSnapshot(double window_s, double settle_s) {
  return impl_->guarded([&] {
    SnapshotRead tx(*impl_->conn);
    Impl::TopState& st = impl_->top;
    std::vector<std::string> known;
    known.reserve(st.settled.size());
    for (const auto& [id, tally] : st.settled) known.push_back(id);
    settle_s = std::max(window_s, settle_s);
    // Per live campaign, one index range scan over (campaign, recorded_at)
    // INCLUDE (status): from the last refresh's cutoff for a campaign counted
    // before (all of its rows for one seen the first time), split at the new
    // cutoff into rows that are settled from now on and rows still counted
    // each time; parked only where the total is unknown.
    const pqxx::result r = tx.exec_params(kTopCampaignsSql, settle_s, window_s, textArrayLiteral(known),
                                          st.cutoff.empty() ? std::string("-infinity") : st.cutoff);
    TopSnapshot s;
    std::map<std::string, Impl::Tally> settled;
    std::string cutoff;
    if (r.empty()) {
      const pqxx::row at = tx.exec1("SELECT extract(epoch FROM now())::double precision, " PACER_UTC("now()"));
      s.at_epoch_s = at[0].as<double>();
      s.at_utc = at[1].as<std::string>();
    }
    for (const auto& row : r) {
      TopSnapshot::Campaign c;
      c.id = row[0].as<std::string>();
      c.state = row[1].as<std::string>();
      c.provider = row[2].as<std::string>();
      if (!row[3].is_null()) c.send_rate = row[3].as<double>();
      if (!row[4].is_null()) c.total = row[4].as<std::int64_t>();
      Impl::Tally t = st.settled.count(c.id) ? st.settled[c.id] : Impl::Tally{};
      t.sent += row[5].as<std::int64_t>();
      t.failed += row[6].as<std::int64_t>();
      t.rejected += row[7].as<std::int64_t>();
      t.invalid_token += row[16].as<std::int64_t>();
      settled[c.id] = t;
      c.sent = t.sent + row[8].as<std::int64_t>();
      c.failed = t.failed + row[9].as<std::int64_t>();
      c.rejected = t.rejected + row[10].as<std::int64_t>();
      c.invalid_token = t.invalid_token + row[17].as<std::int64_t>();
      c.sent_in_window = row[11].as<std::int64_t>();
      c.parked = row[12].as<std::int64_t>();
      s.at_epoch_s = row[13].as<double>();
      s.at_utc = row[14].as<std::string>();
      cutoff = row[15].as<std::string>();
      s.campaigns.push_back(std::move(c));
    }
    readTopProviders(tx, s);
    readTopReceipts(tx, s);
    // Only once the read succeeded: campaigns no longer live are forgotten
    // (counted in full again if they come back).
    st.settled = std::move(settled);
    st.cutoff = std::move(cutoff);
    return s;
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

#undef PACER_UTC
