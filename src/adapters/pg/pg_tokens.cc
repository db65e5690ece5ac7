// PgControl's reads of invalid_tokens (migration 7): `pacerctl tokens export`
// and `tokens count`.
#include <pqxx/pqxx>

#include "pg_control_impl.h"
#include "table_rows.h"

namespace pacer::control {
namespace {

// Rows per page: a keyset page on the primary key (provider, token).
constexpr int kTokenPage = 5000;

// The filter as SQL on parameters $1 (has provider), $2 (provider), $3 (has
// since), $4 (since).
constexpr const char* kTokenWhere = "(NOT $1 OR provider = $2) AND (NOT $3 OR last_seen >= $4::timestamptz)";

}  // namespace

void PgControl::invalidTokens(const TokenFilter& f, const std::function<void(const InvalidTokenRow&)>& each) {
  impl_->guarded([&] {
    SnapshotRead tx(*impl_->conn);
    std::string after_provider, after_token;
    bool first = true;
    for (;;) {
      const pqxx::result r = tx.exec_params(
          std::string("SELECT provider, token, reason, ") + PACER_UTC("first_seen") + ", " + PACER_UTC("last_seen") +
              ", " + PACER_UTC("provider_timestamp") + ", campaign, hits FROM invalid_tokens WHERE " + kTokenWhere +
              " AND ($5 OR (provider, token) > ($6, $7)) ORDER BY provider, token LIMIT $8",
          f.provider.has_value(), f.provider.value_or(""), f.since.has_value(), f.since.value_or("-infinity"), first,
          after_provider, after_token, kTokenPage);
      for (const auto& row : r) {
        InvalidTokenRow t;
        t.provider = row[0].as<std::string>();
        t.token = row[1].as<std::string>();
        t.reason = row[2].as<std::string>();
        t.first_seen = row[3].as<std::string>();
        t.last_seen = row[4].as<std::string>();
        if (!row[5].is_null()) t.provider_timestamp = row[5].as<std::string>();
        t.campaign = row[6].as<std::string>();
        t.hits = row[7].as<std::int64_t>();
        each(t);
      }
      if (r.size() < static_cast<std::size_t>(kTokenPage)) break;
      first = false;
      after_provider = r.back()[0].as<std::string>();
      after_token = r.back()[1].as<std::string>();
    }
    return 0;
  });
}

std::int64_t PgControl::countInvalidTokens(const TokenFilter& f) {
  return impl_->guarded([&] {
    pqxx::read_transaction tx(*impl_->conn);
    return tx
        .exec_params1(std::string("SELECT count(*) FROM invalid_tokens WHERE ") + kTokenWhere, f.provider.has_value(),
                      f.provider.value_or(""), f.since.has_value(), f.since.value_or("-infinity"))[0]
        .as<std::int64_t>();
  });
}

}  // namespace pacer::control

