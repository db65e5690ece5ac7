// PgControl::topSnapshot: `pacerctl top`'s and the console's incremental
// count of each live campaign's ledger rows (split from pg_control.cc).
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <pqxx/pqxx>

#include "pg_control_impl.h"
#include "table_rows.h"

namespace pacer::control {
namespace {

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

// The cutoff never moves back (a clock set back), or rows would be counted twice.
constexpr const char* kTopCampaignsSql =
    "WITH t AS (SELECT now() AS at, greatest(now() - make_interval(secs => $1), $4::timestamptz) AS cutoff) "
    "SELECT c.id, c.state, coalesce(c.provider, ''), c.send_rate, c.total, "
    "  d.settled_sent, d.settled_failed, d.settled_rejected, d.live_sent, d.live_failed, d.live_rejected, "
    "  d.recent, coalesce(p.parked, 0), extract(epoch FROM t.at)::double precision, " PACER_UTC("t.at") ", "
    "  t.cutoff::text, d.settled_invalid, d.live_invalid, d.settled_suppressed, d.live_suppressed, "
    "  coalesce(c.priority_class, ''), coalesce(p.quiet, 0), coalesce(p.later, 0) "
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
    "  count(*) FILTER (WHERE status = 'suppressed' AND recorded_at < t.cutoff) AS settled_suppressed, "
    "  count(*) FILTER (WHERE status = 'suppressed' AND recorded_at >= t.cutoff) AS live_suppressed, "
    "  count(*) FILTER (WHERE status = 'sent' AND recorded_at > t.at - make_interval(secs => $2)) AS recent "
    "  FROM deliveries WHERE campaign = c.id AND recorded_at >= "
    "    CASE WHEN c.id = ANY($3::text[]) THEN $4::timestamptz ELSE '-infinity'::timestamptz END) d "
    // Parked rows waiting for a time: quiet hours end on a whole minute, a
    // deferred cap's time is to the millisecond (pg_parking.cc stores both).
    "LEFT JOIN LATERAL (SELECT count(*) AS parked, "
    "  count(*) FILTER (WHERE not_before > t.at AND coalesce(c.quiet_hours, '') <> '' "
    "    AND not_before = date_trunc('minute', not_before)) AS quiet, "
    "  count(*) FILTER (WHERE not_before > t.at) AS later "
    "  FROM parked WHERE campaign = c.id) p "
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
    // each time; and its parked rows (index parked_campaign), whatever its
    // total, since the console and top show them.
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
      t.suppressed += row[18].as<std::int64_t>();
      settled[c.id] = t;
      c.sent = t.sent + row[8].as<std::int64_t>();
      c.failed = t.failed + row[9].as<std::int64_t>();
      c.rejected = t.rejected + row[10].as<std::int64_t>();
      c.invalid_token = t.invalid_token + row[17].as<std::int64_t>();
      c.suppressed = t.suppressed + row[19].as<std::int64_t>();
      c.priority_class = row[20].as<std::string>();
      c.sent_in_window = row[11].as<std::int64_t>();
      c.parked = row[12].as<std::int64_t>();
      c.parked_quiet = row[21].as<std::int64_t>();
      c.parked_capped = row[22].as<std::int64_t>() - c.parked_quiet;
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

}  // namespace pacer::control

