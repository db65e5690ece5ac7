#include "console_pg.h"

#include <fmt/format.h>

#include <algorithm>
#include <pqxx/pqxx>

#include "pacer/control/values.h"
#include "pacer/conninfo.h"
#include "pacer/ledger/pg_sql.h"

namespace pacer::console {

struct ConsolePg::Connection {
  explicit Connection(const std::string& conninfo) : c(conninfo) {}
  pqxx::connection c;
};

ConsolePg::ConsolePg(std::string conninfo, int connect_timeout_s)
    : conninfo_(std::move(conninfo)), connect_timeout_s_(connect_timeout_s) {}

ConsolePg::~ConsolePg() = default;

ConsolePg::Connection& ConsolePg::conn() {
  if (!conn_) conn_ = std::make_unique<Connection>(withConnectTimeout(conninfo_, connect_timeout_s_));
  return *conn_;
}

template <typename Fn>
auto ConsolePg::guarded(Fn&& fn) {
  const auto said = [&](const std::exception& e) {
    std::string t = hidePasswords(e.what(), conninfo_);
    std::replace(t.begin(), t.end(), '\n', ' ');
    return t;
  };
  try {
    return fn();
  } catch (const pqxx::broken_connection& e) {
    conn_.reset();
    throw control::UnreachableError(fmt::format("PostgreSQL: {}", said(e)));
  } catch (const pqxx::sql_error& e) {
    const std::string state = e.sqlstate();
    if (state.rfind("08", 0) == 0 || state.rfind("57P", 0) == 0) {
      conn_.reset();
      throw control::UnreachableError(fmt::format("PostgreSQL: {}", said(e)));
    }
    throw control::DatabaseError(fmt::format("PostgreSQL refused the statement ({}): {}", state, said(e)));
  } catch (const pqxx::failure& e) {
    conn_.reset();
    throw control::UnreachableError(fmt::format("PostgreSQL: {}", said(e)));
  }
}

Outcomes ConsolePg::outcomes(const std::string& campaign) {
  return guarded([&] {
    pqxx::transaction<pqxx::repeatable_read, pqxx::read_only> tx(conn().c);
    Tally t = tallies_.count(campaign) ? tallies_[campaign] : Tally{};
    // Rows recorded before the new cutoff are counted for good; rows after it
    // are counted again next time (a row may commit up to the settle time
    // after its recorded_at). The LEFT JOIN gives one row even without any.
    const pqxx::result r = tx.exec_params(
        "WITH t AS (SELECT greatest(now() - interval '60 seconds', $2::timestamptz) AS cutoff) "
        "SELECT d.status, count(d.status) FILTER (WHERE d.recorded_at < t.cutoff), "
        "  count(d.status) FILTER (WHERE d.recorded_at >= t.cutoff), t.cutoff::text "
        "FROM t LEFT JOIN deliveries d ON d.campaign = $1 AND d.recorded_at >= $2::timestamptz "
        "GROUP BY d.status, t.cutoff",
        campaign, t.cutoff.empty() ? std::string("-infinity") : t.cutoff);
    Outcomes o;
    std::string cutoff = t.cutoff;
    for (const auto& row : r) {
      cutoff = row[3].as<std::string>();
      if (row[0].is_null()) continue;
      const std::string status = row[0].as<std::string>();
      t.settled[status] += row[1].as<std::int64_t>();
      o.by_status[status] = row[2].as<std::int64_t>();
    }
    for (const auto& [status, n] : t.settled) o.by_status[status] += n;
    const pqxx::row extra = tx.exec_params1(
        "SELECT (SELECT " PACER_UTC("max(recorded_at)") " FROM deliveries WHERE campaign = $1), "
        "(SELECT count(*) FROM parked WHERE campaign = $1)",
        campaign);
    if (!extra[0].is_null()) o.last_recorded_at = extra[0].as<std::string>();
    o.parked = extra[1].as<std::int64_t>();
    // Only once everything was read.
    t.cutoff = cutoff;
    t.asked = ++asks_;
    tallies_[campaign] = std::move(t);
    if (tallies_.size() > kRemembered)
      tallies_.erase(std::min_element(tallies_.begin(), tallies_.end(),
                                      [](const auto& a, const auto& b) { return a.second.asked < b.second.asked; }));
    return o;
  });
}

std::vector<DeadLetter> ConsolePg::deadLetters(const std::string& campaign, int limit, int scan) {
  return guarded([&] {
    pqxx::read_transaction tx(conn().c);
    const pqxx::result r = tx.exec_params(
        "SELECT message_id, status, attempts, reason, " PACER_UTC("recorded_at") ", topic, kafka_partition, "
        "  kafka_offset "
        "FROM (SELECT * FROM deliveries WHERE campaign = $1 ORDER BY recorded_at DESC LIMIT $2) newest "
        "WHERE status NOT IN ('sent', 'delivered') ORDER BY recorded_at DESC LIMIT $3",
        campaign, scan, limit);
    std::vector<DeadLetter> out;
    for (const auto& row : r) {
      DeadLetter d;
      d.message_id = row[0].as<std::string>();
      d.status = row[1].as<std::string>();
      d.attempts = row[2].as<int>();
      d.reason = row[3].as<std::string>();
      d.recorded_at = row[4].as<std::string>();
      d.topic = row[5].as<std::string>();
      d.partition = row[6].as<std::int32_t>();
      d.offset = row[7].as<std::int64_t>();
      out.push_back(std::move(d));
    }
    return out;
  });
}

}  // namespace pacer::console

#undef PACER_UTC
