#include "pacer/ledger/pg_parking.h"

#include <algorithm>

#include "pg_common.h"

namespace pacer::ledger {

namespace {

// unclaimed() counts a campaign's due rows up to this many.
constexpr std::size_t kUnclaimedCountCap = 10'000;

class PgParking final : public ParkingInterface {
 public:
  explicit PgParking(PgParkingOptions options) : options_(std::move(options)) {}

  std::size_t park(std::span<const Message> messages, std::span<const WallTime> not_before) override {
    if (messages.empty()) return 0;
    std::vector<std::string_view> ids, campaigns, topics, recipients, payloads, zones;
    std::vector<std::int32_t> partitions;
    std::vector<std::int64_t> offsets, not_before_ms, expires_at_ms;
    for (std::size_t i = 0; i < messages.size(); ++i) {
      const Message& m = messages[i];
      ids.push_back(m.id);
      campaigns.push_back(m.campaign);
      topics.push_back(m.position.topic);
      partitions.push_back(m.position.partition);
      offsets.push_back(m.position.offset);
      recipients.push_back(m.recipient);
      payloads.push_back(m.payload);
      zones.push_back(m.time_zone);
      expires_at_ms.push_back(m.expires_at_ms);  // 0: none, stored as NULL
      // 0 (the epoch): no wait, stored as NULL.
      not_before_ms.push_back(not_before.empty() ? 0 : not_before[i].time_since_epoch().count());
    }
    return guarded(conn_, options_.connection, [&](pqxx::connection& c) {
      pqxx::work tx(c);
      // A message already finished (replayed after a crash) is not parked again.
      const pqxx::result res = tx.exec_params(
          "INSERT INTO parked (message_id, campaign, topic, kafka_partition, kafka_offset, recipient, payload, "
          "time_zone, not_before, expires_at) "
          // One row per id: ON CONFLICT DO UPDATE may not touch a row twice
          // in one statement (two copies of a message a producer retried).
          "SELECT DISTINCT ON (u.id) u.id, u.campaign, u.topic, u.p, u.o, u.recipient, u.payload, u.tz, "
          "to_timestamp(NULLIF(u.nb, 0) / 1000.0), to_timestamp(NULLIF(u.ex, 0) / 1000.0) "
          "FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::bigint[], $6::text[], "
          "$7::bytea[], $8::text[], $9::bigint[], $11::bigint[]) "
          "AS u(id, campaign, topic, p, o, recipient, payload, tz, nb, ex) "
          "WHERE NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.message_id = u.id) ORDER BY u.id, u.o "
          // The very row this worker claimed and must wait again (quiet hours
          // began): handed back with its new time. Another Kafka copy of the
          // id (another position) leaves the row as it is, claimed or not.
          "ON CONFLICT (message_id) DO UPDATE SET not_before = EXCLUDED.not_before, owner = NULL, "
          "lease_until = NULL WHERE parked.owner = $10 AND parked.topic = EXCLUDED.topic "
          "AND parked.kafka_partition = EXCLUDED.kafka_partition AND parked.kafka_offset = EXCLUDED.kafka_offset",
          textArray(ids), textArray(campaigns), textArray(topics), numberArray(partitions), numberArray(offsets),
          textArray(recipients), byteaArray(payloads), textArray(zones), numberArray(not_before_ms), options_.owner,
          numberArray(expires_at_ms));
      tx.commit();
      return static_cast<std::size_t>(res.affected_rows());
    });
  }

  // Due rows only: not_before (the caller's wall clock decides, as for
  // everything about recipients) is NULL or not after `now`.
  std::vector<Message> claim(const std::string& campaign, std::size_t max, WallTime now) override {
    if (max == 0) return {};
    return guarded(conn_, options_.connection, [&](pqxx::connection& c) {
      pqxx::work tx(c);
      const pqxx::result res = tx.exec_params(
          "UPDATE parked SET owner = $1, lease_until = now() + make_interval(secs => $4) "
          "WHERE seq IN (SELECT seq FROM parked WHERE campaign = $2 AND (owner IS NULL OR lease_until < now()) "
          "AND (not_before IS NULL OR not_before <= to_timestamp($5::bigint / 1000.0)) "
          "ORDER BY seq LIMIT $3 FOR UPDATE SKIP LOCKED) "
          "RETURNING seq, message_id, campaign, topic, kafka_partition, kafka_offset, recipient, payload, time_zone, "
          "coalesce(round(extract(epoch FROM expires_at) * 1000)::bigint, 0)",
          options_.owner, campaign, static_cast<long long>(max), static_cast<double>(options_.lease.count()),
          static_cast<long long>(now.time_since_epoch().count()));
      tx.commit();
      std::vector<std::pair<std::int64_t, Message>> rows;
      rows.reserve(res.size());
      for (const auto& row : res) {
        Message m;
        m.id = row[1].as<std::string>();
        m.campaign = row[2].as<std::string>();
        m.position.topic = row[3].as<std::string>();
        m.position.partition = row[4].as<std::int32_t>();
        m.position.offset = row[5].as<std::int64_t>();
        m.recipient = row[6].as<std::string>();
        const pqxx::binarystring payload(row[7]);
        m.payload = payload.str();
        m.time_zone = row[8].as<std::string>();
        m.expires_at_ms = row[9].as<std::int64_t>();
        rows.emplace_back(row[0].as<std::int64_t>(), std::move(m));
      }
      std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      std::vector<Message> out;
      out.reserve(rows.size());
      for (auto& [seq, m] : rows) out.push_back(std::move(m));
      return out;
    });
  }

  std::vector<std::pair<std::string, std::size_t>> unclaimed() override {
    return guarded(conn_, options_.connection, [&](pqxx::connection& c) {
      pqxx::read_transaction tx(c);
      const pqxx::result res =
          // Only rows due (by this server's clock: a hint to claim; claim() decides on the
          // worker's): a count of rows waiting for quiet hours to end would make a worker park
          // every new message behind them.
          // Each campaign (a skip scan of parked_campaign) and its rows counted up to
          // kUnclaimedCountCap: the scan runs on the worker's loop every few seconds, and a
          // full count of a million-row backlog held every campaign's sending up for
          // about 300 ms. The count is a hint (the caller needs only whether there are any).
          // ORDER BY seq keeps each count on parked_campaign (campaign, seq): a sequential
          // scan for a campaign whose rows sit behind a million others' took 470 ms.
          tx.exec_params(
              "WITH RECURSIVE cs(c) AS (SELECT min(campaign) FROM parked UNION ALL "
              "SELECT (SELECT min(campaign) FROM parked WHERE campaign > cs.c) FROM cs WHERE cs.c IS NOT NULL) "
              "SELECT c, n FROM (SELECT c, (SELECT count(*) FROM (SELECT 1 FROM parked p WHERE p.campaign = cs.c "
              "AND (p.owner IS NULL OR p.lease_until < now()) AND (p.not_before IS NULL OR p.not_before <= now()) "
              "ORDER BY p.seq LIMIT $1) due) AS n FROM cs WHERE c IS NOT NULL) counts WHERE n > 0",
              static_cast<long long>(kUnclaimedCountCap));
      std::vector<std::pair<std::string, std::size_t>> out;
      for (const auto& row : res) out.emplace_back(row[0].as<std::string>(), row[1].as<std::size_t>());
      return out;
    });
  }

  void renew() override {
    guarded(conn_, options_.connection, [&](pqxx::connection& c) {
      pqxx::work tx(c);
      tx.exec_params("UPDATE parked SET lease_until = now() + make_interval(secs => $2) WHERE owner = $1",
                     options_.owner, static_cast<double>(options_.lease.count()));
      tx.commit();
      return 0;
    });
  }

  std::size_t release() override {
    return guarded(conn_, options_.connection, [&](pqxx::connection& c) {
      pqxx::work tx(c);
      const pqxx::result r =
          tx.exec_params("UPDATE parked SET owner = NULL, lease_until = NULL WHERE owner = $1", options_.owner);
      tx.commit();
      return static_cast<std::size_t>(r.affected_rows());
    });
  }

 private:
  PgParkingOptions options_;
  std::unique_ptr<pqxx::connection> conn_;
};

}  // namespace

ParkingInterfacePtr makePgParking(const PgParkingOptions& options) { return std::make_unique<PgParking>(options); }

}  // namespace pacer::ledger
