#include "ledger/pg_ledger.h"

#include <fmt/format.h>

#include <pqxx/pqxx>

#include "ledger/migrations.inc"
#include "ledger/pg_common.h"

namespace pacer::ledger {
namespace {

class PgLedger final : public LedgerInterface {
 public:
  explicit PgLedger(PgLedgerOptions options) : options_(std::move(options)) {}

  std::size_t record(std::span<const DeliveryRecord> rows) override {
    if (rows.empty()) return 0;
    std::vector<std::string_view> ids, campaigns, topics, statuses, reasons;
    std::vector<std::int32_t> partitions, attempts;
    std::vector<std::int64_t> offsets;
    for (const DeliveryRecord& r : rows) {
      ids.push_back(r.message_id);
      campaigns.push_back(r.campaign);
      topics.push_back(r.topic);
      partitions.push_back(r.partition);
      offsets.push_back(r.offset);
      statuses.push_back(deliveryStatusName(r.status));
      attempts.push_back(r.attempts);
      reasons.push_back(r.reason);
    }
    return guarded(conn_, options_, [&](pqxx::connection& c) {
      pqxx::work tx(c);
      const pqxx::result res = tx.exec_params(
          "INSERT INTO deliveries (message_id, campaign, topic, kafka_partition, kafka_offset, status, attempts, "
          "reason) SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::bigint[], $6::text[], "
          "$7::int[], $8::text[]) ON CONFLICT (message_id) DO NOTHING",
          textArray(ids), textArray(campaigns), textArray(topics), numberArray(partitions), numberArray(offsets),
          textArray(statuses), numberArray(attempts), textArray(reasons));
      std::vector<std::string_view> unparked;
      for (const DeliveryRecord& r : rows)
        if (r.unpark) unparked.push_back(r.message_id);
      // A message leaves parking in the transaction that records its outcome.
      if (!unparked.empty()) tx.exec_params("DELETE FROM parked WHERE message_id = ANY($1::text[])", textArray(unparked));
      tx.commit();
      return static_cast<std::size_t>(res.affected_rows());
    });
  }

  std::vector<std::int64_t> finishedOffsets(const std::string& topic, std::int32_t partition, std::int64_t from,
                                            std::int64_t to) override {
    return guarded(conn_, options_, [&](pqxx::connection& c) {
      pqxx::read_transaction tx(c);
      const pqxx::result res = tx.exec_params(
          "SELECT kafka_offset FROM deliveries WHERE topic = $1 AND kafka_partition = $2 "
          "AND kafka_offset >= $3 AND kafka_offset < $4 "
          "UNION SELECT kafka_offset FROM parked WHERE topic = $1 AND kafka_partition = $2 "
          "AND kafka_offset >= $3 AND kafka_offset < $4 ORDER BY 1",
          topic, partition, from, to);
      std::vector<std::int64_t> out;
      out.reserve(res.size());
      for (const auto& row : res) out.push_back(row[0].as<std::int64_t>());
      return out;
    });
  }

 private:
  PgLedgerOptions options_;
  std::unique_ptr<pqxx::connection> conn_;
};

}  // namespace

LedgerInterfacePtr makePgLedger(const PgLedgerOptions& options) { return std::make_unique<PgLedger>(options); }

int latestSchemaVersion() noexcept { return static_cast<int>(std::size(kMigrations)); }

int migrate(const PgLedgerOptions& options) {
  std::unique_ptr<pqxx::connection> conn;
  return guarded(conn, options, [&](pqxx::connection& c) {
    pqxx::work tx(c);
    tx.exec_params("SELECT pg_advisory_xact_lock($1)", kMigrationLockKey);
    tx.exec(
        "CREATE TABLE IF NOT EXISTS pacer_schema_migrations (version integer PRIMARY KEY, name text NOT NULL, "
        "applied_at timestamptz NOT NULL DEFAULT now())");
    const int current = tx.exec1("SELECT coalesce(max(version), 0) FROM pacer_schema_migrations")[0].as<int>();
    if (current > latestSchemaVersion()) {
      throw LedgerRejectedError(fmt::format(
          "the database is at schema version {}, newer than this build knows ({}): upgrade pacer", current,
          latestSchemaVersion()));
    }
    int applied = 0;
    for (const Migration& m : kMigrations) {
      if (m.version <= current) continue;
      tx.exec(m.sql);
      tx.exec_params("INSERT INTO pacer_schema_migrations (version, name) VALUES ($1, $2)", m.version,
                     std::string(m.name));
      ++applied;
    }
    tx.commit();
    return applied;
  });
}

}  // namespace pacer::ledger
