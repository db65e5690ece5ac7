#include "pacer/ledger/pg_directory.h"

#include <algorithm>

#include "pacer/control/values.h"
#include "pg_common.h"
#include "table_rows.h"

namespace pacer::ledger {

struct PgDirectory::Impl {
  PgLedgerOptions options;
  std::unique_ptr<pqxx::connection> conn;
};

PgDirectory::PgDirectory(PgLedgerOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
}

PgDirectory::~PgDirectory() = default;

namespace {

// Each good row's core view; each bad one, with its reason, in `problems`.
template <typename Info, typename Row, typename Read, typename Convert>
std::vector<Info> readAll(const pqxx::result& res, const char* kind, Read read, Convert convert,
                          std::vector<RowProblem>* problems) {
  std::vector<Info> out;
  for (const auto& r : res) {
    std::string why;
    const Row row = read(r);
    if (auto info = convert(row, &why))
      out.push_back(std::move(*info));
    else if (problems)
      problems->push_back(RowProblem{kind, row.id, std::move(why)});
  }
  return out;
}

// One row's core view, or nullopt (with the reason when the row exists).
template <typename Info, typename Row, typename Read, typename Convert>
std::optional<Info> readOne(const pqxx::result& res, Read read, Convert convert, std::optional<std::string>* problem) {
  if (res.empty()) return std::nullopt;
  std::string why;
  auto info = convert(read(res[0]), &why);
  if (!info && problem) *problem = std::move(why);
  return info;
}

}  // namespace

std::vector<ProviderInfo> PgDirectory::providers(std::vector<RowProblem>* problems) {
  return guarded(impl_->conn, impl_->options, [&](pqxx::connection& c) {
    pqxx::read_transaction tx(c);
    return readAll<ProviderInfo, control::ProviderRow>(
        tx.exec(fmt::format("SELECT {} FROM providers p ORDER BY id", kProviderColumns)), "provider", providerRowFrom,
        control::providerInfoOf, problems);
  });
}

std::vector<CampaignInfo> PgDirectory::campaigns(std::vector<RowProblem>* problems) {
  return guarded(impl_->conn, impl_->options, [&](pqxx::connection& c) {
    pqxx::read_transaction tx(c);
    return readAll<CampaignInfo, control::CampaignRow>(
        tx.exec(fmt::format("SELECT {} FROM campaigns ORDER BY id", kCampaignColumns)), "campaign", campaignRowFrom,
        control::campaignInfoOf, problems);
  });
}

std::optional<ProviderInfo> PgDirectory::provider(const std::string& id, std::optional<std::string>* problem) {
  if (problem) problem->reset();
  return guarded(impl_->conn, impl_->options, [&](pqxx::connection& c) {
    // One statement, so no BEGIN/COMMIT: one round trip instead of three,
    // on the path from a NOTIFY to the change being applied.
    pqxx::nontransaction tx(c);
    return readOne<ProviderInfo, control::ProviderRow>(
        tx.exec_params(fmt::format("SELECT {} FROM providers p WHERE id = $1", kProviderColumns), id), providerRowFrom,
        control::providerInfoOf, problem);
  });
}

std::optional<CampaignInfo> PgDirectory::campaign(const std::string& id, std::optional<std::string>* problem) {
  if (problem) problem->reset();
  return guarded(impl_->conn, impl_->options, [&](pqxx::connection& c) {
    pqxx::nontransaction tx(c);  // one statement, one round trip (see provider())
    return readOne<CampaignInfo, control::CampaignRow>(
        tx.exec_params(fmt::format("SELECT {} FROM campaigns WHERE id = $1", kCampaignColumns), id), campaignRowFrom,
        control::campaignInfoOf, problem);
  });
}

std::vector<std::string> PgDirectory::completeFinished() {
  return guarded(impl_->conn, impl_->options, [&](pqxx::connection& c) {
    pqxx::work tx(c);
    // The count is an index-only scan of deliveries (campaign, recorded_at),
    // and only for campaigns that are active and have a total.
    const pqxx::result r = tx.exec(
        "UPDATE campaigns c SET state = 'completed', updated_at = now() "
        "WHERE c.state = 'active' AND c.total IS NOT NULL "
        "AND NOT EXISTS (SELECT 1 FROM parked p WHERE p.campaign = c.id) "
        "AND (SELECT count(*) FROM deliveries d WHERE d.campaign = c.id) >= c.total "
        "RETURNING c.id");
    std::vector<std::string> done;
    for (const auto& row : r) {
      done.push_back(row[0].as<std::string>());
      tx.exec_params("SELECT pg_notify($1, $2)", std::string(control::kControlChannel),
                     control::notifyPayload("campaign", done.back(), "completed"));
    }
    tx.commit();
    return done;
  });
}

void PgDirectory::putProvider(const ProviderInfo& p) {
  guarded(impl_->conn, impl_->options, [&](pqxx::connection& c) {
    pqxx::work tx(c);
    // Text, so that "" can stand for NULL (unlimited).
    const std::string rate = p.limit ? fmt::format("{}", p.limit->rate_per_s) : "";
    tx.exec_params(
        "INSERT INTO providers (id, rate, burst) VALUES ($1, NULLIF($2, '')::double precision, $3) ON CONFLICT (id) DO "
        "UPDATE SET rate = "
        "EXCLUDED.rate, burst = EXCLUDED.burst, updated_at = now()",
        p.id, rate, p.limit ? std::max(1.0, p.limit->burst) : 1.0);
    tx.commit();
    return 0;
  });
}

void PgDirectory::putCampaign(const CampaignInfo& ci) {
  guarded(impl_->conn, impl_->options, [&](pqxx::connection& c) {
    pqxx::work tx(c);
    const std::string rate = ci.limit ? fmt::format("{}", ci.limit->rate_per_s) : "";
    tx.exec_params(
        "INSERT INTO campaigns (id, name, send_rate, burst, weight, provider, state) VALUES ($1, $1, "
        "NULLIF($2, '')::double precision, $3, $4, NULLIF($5, ''), $6) ON CONFLICT (id) DO UPDATE SET send_rate = "
        "EXCLUDED.send_rate, burst = EXCLUDED.burst, weight = "
        "EXCLUDED.weight, provider = EXCLUDED.provider, state = EXCLUDED.state, updated_at = now()",
        ci.id, rate, ci.limit ? std::max(1.0, ci.limit->burst) : 1.0, ci.weight, ci.provider,
        std::string(campaignStateName(ci.state)));
    tx.commit();
    return 0;
  });
}

}  // namespace pacer::ledger
