#include "pacer/ledger/pg_ledger.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <pqxx/pqxx>

#include "ledger/migrations.inc"
#include "pacer/sink.h"
#include "pg_common.h"

namespace pacer::ledger {
namespace {

// What a provider sent (an id, a receipt's text) as PostgreSQL text: bytes
// outside printable ASCII become '?', so that a NUL or invalid UTF-8 from an
// SMSC can never make a batch fail for ever. The same id gets the same
// spelling in deliveries and receipts, so they still match.
std::string printable(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
  return out;
}

// Adds the hits of `tokens` (provider, token, reason, since_ms, campaign,
// hits) to invalid_tokens: a new token gets its first campaign, a known one
// its count, last answer and the provider's latest timestamp.
constexpr const char* kTokenUpsert =
    "INSERT INTO invalid_tokens (provider, token, first_seen, last_seen, reason, provider_timestamp, campaign, hits) "
    "SELECT provider, token, now(), now(), reason, since, campaign, hits FROM tokens "
    "ON CONFLICT (provider, token) DO UPDATE SET hits = invalid_tokens.hits + EXCLUDED.hits, "
    "last_seen = EXCLUDED.last_seen, reason = EXCLUDED.reason, "
    "provider_timestamp = greatest(invalid_tokens.provider_timestamp, EXCLUDED.provider_timestamp)";

// The columns of an event, as both outboxes hold them.
constexpr const char* kEventColumns =
    "kind, message_id, campaign, status, reason, provider, provider_message_id, attempts, recorded_at, done_at";

// The events (kEventColumns) of the deliveries rows a CTE `rows` returned.
std::string outcomeEvents(std::string_view rows) {
  return fmt::format(
      "SELECT 'outcome'::text AS kind, message_id, campaign, status, reason, provider, "
      "coalesce(provider_message_id, '') AS provider_message_id, attempts, recorded_at, NULL::timestamptz AS done_at "
      "FROM {}",
      rows);
}

// The events of the receipts upsert's CTE `up` (the receipts that changed
// their row), with the message and campaign of the delivery row each
// matches, if one does yet.
constexpr const char* kReceiptEvents =
    "SELECT 'receipt'::text AS kind, coalesce(d.message_id, '') AS message_id, coalesce(d.campaign, '') AS campaign, "
    "up.status, concat_ws(' ', nullif(up.error_code, ''), nullif(up.text, '')) AS reason, up.provider, "
    "up.provider_message_id, 0 AS attempts, up.received_at AS recorded_at, up.done_at FROM up LEFT JOIN LATERAL "
    "(SELECT message_id, campaign FROM deliveries d WHERE d.provider_message_id = up.provider_message_id AND "
    "(d.provider = up.provider OR up.provider = '') LIMIT 1) d ON true";

// Which outboxes a ledger write feeds, and the parameter number of the
// first worker id: the events worker's ($N), then the callbacks' ($N+1, or
// $N without events).
struct EventWrites {
  bool events = false;
  bool callbacks = false;
  int first_param = 0;
  bool any() const noexcept { return events || callbacks; }
};

// CTEs, each followed by ", ", that write the events `source` (a SELECT of
// kEventColumns) to the outbox and, for the campaigns that have a callback
// URL, to the callbacks' outbox (migration 14) under the same id. Data-
// modifying CTEs run whether or not the statement reads them.
std::string eventWrites(const EventWrites& w, std::string_view source) {
  std::string out = fmt::format("ev AS ({}), ", source);
  const std::string events_worker = fmt::format("${}", w.first_param);
  const std::string callback_worker = fmt::format("${}", w.first_param + (w.events ? 1 : 0));
  if (w.events)
    out +=
        fmt::format("outboxed AS (INSERT INTO outbox (worker, {0}) SELECT {1}::text, {0} FROM ev{2}), ", kEventColumns,
                    events_worker, w.callbacks ? fmt::format(" RETURNING id, {}", kEventColumns) : "");
  if (w.callbacks)
    out += fmt::format(
        "called AS (INSERT INTO callback_outbox (id, worker, {0}) SELECT {1}, {2}::text, {0} FROM {3} o "
        "WHERE EXISTS (SELECT 1 FROM campaigns c WHERE c.id = o.campaign AND c.callback_url IS NOT NULL)), ",
        kEventColumns, w.events ? "id" : "nextval('outbox_id_seq')", callback_worker, w.events ? "outboxed" : "ev");
  return out;
}

// Runs `run` with the worker ids the statement of `w` (eventWrites()) takes.
template <typename Run>
auto withWorkers(const PgLedgerOptions& o, const EventWrites& w, Run&& run) {
  if (w.events && w.callbacks) return run(o.outbox_worker, o.callback_worker);
  if (w.events) return run(o.outbox_worker);
  if (w.callbacks) return run(o.callback_worker);
  return run();
}

// The callbacks' CTE only while some campaign has a URL (callbacks_wanted).
bool callbacksNow(const PgLedgerOptions& o) {
  return !o.callback_worker.empty() && (!o.callbacks_wanted || o.callbacks_wanted());
}

EventWrites eventWritesOf(const PgLedgerOptions& o, int first_param) {
  return EventWrites{!o.outbox_worker.empty(), callbacksNow(o), first_param};
}

// The batch statement of record(): inserts what is new, and counts the dead
// tokens of the rows that are new (the first row per id in the batch, as
// the INSERT keeps) in invalid_tokens; returns the rows that met an id
// already held by another message (another fingerprint, another Kafka
// record). The outer SELECT sees the tables as before the INSERTs, so it
// compares against rows that were there already.
// With events or callbacks on, the new rows (the INSERT's RETURNING) also go
// to the outboxes in the same statement: one round trip, one snapshot.
std::string recordSqlText(const EventWrites& w) {
  return fmt::format(
      "WITH incoming AS (SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::bigint[], "
      "$6::text[], $7::int[], $8::text[], $9::bigint[], $10::text[], $11::text[], $12::text[], $13::bigint[]) "
      "WITH ORDINALITY AS t(message_id, campaign, topic, kafka_partition, kafka_offset, status, attempts, reason, "
      "fingerprint, provider, provider_message_id, token, invalid_since, n)), "
      "ins AS (INSERT INTO deliveries (message_id, campaign, topic, kafka_partition, kafka_offset, status, "
      "attempts, reason, fingerprint, provider, provider_message_id) SELECT message_id, campaign, topic, "
      "kafka_partition, kafka_offset, status, attempts, reason, fingerprint, provider, "
      "NULLIF(provider_message_id, '') FROM incoming ORDER BY n ON CONFLICT (message_id) DO NOTHING "
      "RETURNING message_id, campaign, status, reason, provider, provider_message_id, attempts, recorded_at), "
      "{}"
      "tokens AS (SELECT i.provider, i.token, (array_agg(i.reason ORDER BY i.n DESC))[1] AS reason, "
      "max(CASE WHEN i.invalid_since > 0 THEN to_timestamp(i.invalid_since / 1000.0) END) AS since, "
      "(array_agg(i.campaign ORDER BY i.n))[1] AS campaign, count(*)::int AS hits "
      "FROM (SELECT DISTINCT ON (message_id) * FROM incoming ORDER BY message_id, n) i "
      "JOIN ins USING (message_id) WHERE i.status = 'invalid_token' AND i.token <> '' "
      "GROUP BY i.provider, i.token), "
      "upserted AS ({}) "
      "SELECT (SELECT count(*) FROM ins), i.message_id, i.topic, i.kafka_partition, i.kafka_offset, i.status, "
      "d.topic, d.kafka_partition, d.kafka_offset FROM incoming i JOIN deliveries d USING (message_id) "
      "WHERE d.fingerprint <> 0 AND i.fingerprint <> 0 AND d.fingerprint <> i.fingerprint "
      "AND (d.topic, d.kafka_partition, d.kafka_offset) <> (i.topic, i.kafka_partition, i.kafka_offset) "
      "UNION ALL SELECT (SELECT count(*) FROM ins), NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL",
      w.any() ? eventWrites(w, outcomeEvents("ins")) : "", kTokenUpsert);
}

const std::string& recordSql(const EventWrites& w) {
  static const std::string sql[4] = {recordSqlText({false, false, 14}), recordSqlText({true, false, 14}),
                                     recordSqlText({false, true, 14}), recordSqlText({true, true, 14})};
  return sql[(w.events ? 1 : 0) + (w.callbacks ? 2 : 0)];
}

class PgLedger final : public LedgerInterface {
 public:
  explicit PgLedger(PgLedgerOptions options) : options_(std::move(options)) {}

  std::size_t record(std::span<const DeliveryRecord> rows) override {
    if (rows.empty()) return 0;
    std::vector<std::string_view> ids, campaigns, topics, statuses, reasons, providers, provider_ids, tokens;
    std::vector<std::string> wire_ids;  // provider ids made printable
    wire_ids.reserve(rows.size());
    std::vector<std::int32_t> partitions, attempts;
    std::vector<std::int64_t> offsets, fingerprints, invalid_since;
    for (const DeliveryRecord& r : rows) {
      ids.push_back(r.message_id);
      campaigns.push_back(r.campaign);
      topics.push_back(r.topic);
      partitions.push_back(r.partition);
      offsets.push_back(r.offset);
      statuses.push_back(deliveryStatusName(r.status));
      attempts.push_back(r.attempts);
      reasons.push_back(r.reason);
      fingerprints.push_back(static_cast<std::int64_t>(r.fingerprint));
      providers.push_back(r.provider);
      provider_ids.push_back(wire_ids.emplace_back(printable(r.provider_message_id)));
      tokens.push_back(r.status == DeliveryStatus::kInvalidToken ? std::string_view(r.token) : std::string_view());
      invalid_since.push_back(r.invalid_since_ms);
    }
    return guarded(conn_, options_, [&](pqxx::connection& c) {
      pqxx::work tx(c);
      // recordSql(): the rows, the dead tokens, and the clashes to record apart.
      const EventWrites w = eventWritesOf(options_, 14);
      const auto run = [&](auto&&... extra) {
        return tx.exec_params(recordSql(w), textArray(ids), textArray(campaigns),
                              textArray(topics), numberArray(partitions), numberArray(offsets), textArray(statuses),
                              numberArray(attempts), textArray(reasons), numberArray(fingerprints),
                              textArray(providers), textArray(provider_ids), textArray(tokens),
                              numberArray(invalid_since), extra...);
      };
      const pqxx::result clash = withWorkers(options_, w, run);
      std::size_t added = clash.empty() ? 0 : clash[0][0].as<std::size_t>();
      for (const auto& row : clash) {
        if (row[1].is_null()) continue;
        const std::string id = row[1].as<std::string>();
        const auto same = std::find_if(rows.begin(), rows.end(), [&](const DeliveryRecord& r) {
          return r.message_id == id && r.topic == row[2].as<std::string>() &&
                 r.partition == row[3].as<std::int32_t>() && r.offset == row[4].as<std::int64_t>();
        });
        if (same == rows.end()) continue;
        added += recordClash(tx, *same, fmt::format("message id '{}' already names another message (at {}/{}/{}); "
                                                    "this one was {} under it{}",
                                                    id, row[6].as<std::string>(), row[7].as<std::int32_t>(),
                                                    row[8].as<std::int64_t>(), row[5].as<std::string>(),
                                                    same->reason.empty() ? "" : ": " + same->reason));
      }
      std::vector<std::string_view> unparked;
      for (const DeliveryRecord& r : rows)
        if (r.unpark) unparked.push_back(r.message_id);
      // A message leaves parking in the transaction that records its outcome.
      if (!unparked.empty())
        tx.exec_params("DELETE FROM parked WHERE message_id = ANY($1::text[])", textArray(unparked));
      tx.commit();
      return added;
    });
  }

  void recordReceipts(std::span<const DeliveryReceipt> receipts) override {
    if (receipts.empty()) return;
    // One row per (provider, id) in the batch: the last one wins, as a later
    // batch's would. Recording a receipt twice is harmless (the SMSC sends
    // an unanswered one again, and answers wait for this write).
    std::map<std::pair<std::string_view, std::string_view>, const DeliveryReceipt*> last;
    for (const DeliveryReceipt& r : receipts) last[{r.provider, r.provider_message_id}] = &r;
    std::vector<std::string> owned;  // what came off the wire, made printable
    owned.reserve(3 * last.size());
    std::vector<std::string_view> providers, ids, statuses, codes, texts;
    std::vector<std::int64_t> done, received;
    for (const auto& [key, r] : last) {
      providers.push_back(r->provider);
      ids.push_back(owned.emplace_back(printable(r->provider_message_id)));
      statuses.push_back(receiptStatusName(r->status));
      codes.push_back(owned.emplace_back(printable(r->error_code)));
      texts.push_back(owned.emplace_back(printable(r->text)));
      done.push_back(r->done_at_ms);
      received.push_back(r->received_at_ms);
    }
    guarded(conn_, options_, [&](pqxx::connection& c) {
      pqxx::work tx(c);
      const EventWrites w = eventWritesOf(options_, 8);
      const std::string upsert =
          std::string(w.any() ? "WITH up AS (" : "") +
          "INSERT INTO receipts (provider, provider_message_id, status, error_code, text, done_at, received_at) "
          "SELECT p, i, s, e, txt, CASE WHEN d > 0 THEN to_timestamp(d / 1000.0) END, "
          "CASE WHEN r > 0 THEN to_timestamp(r / 1000.0) ELSE now() END "
          "FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::bigint[]) "
          "AS t(p, i, s, e, txt, d, r) "
          "ON CONFLICT (provider, provider_message_id) DO UPDATE SET status = EXCLUDED.status, "
          "error_code = EXCLUDED.error_code, text = EXCLUDED.text, done_at = EXCLUDED.done_at, "
          "received_at = EXCLUDED.received_at "
          // The same receipt again (an SMSC sends what was not answered again
          // after a reconnect) changes nothing, not even when it arrived.
          "WHERE (receipts.status, receipts.error_code, receipts.text, receipts.done_at) IS DISTINCT FROM "
          "(EXCLUDED.status, EXCLUDED.error_code, EXCLUDED.text, EXCLUDED.done_at)" +
          (w.any() ? " RETURNING provider, provider_message_id, status, error_code, text, done_at, received_at), " +
                         eventWrites(w, kReceiptEvents) + "done AS (SELECT 1) SELECT 1"
                   : std::string());
      const auto run = [&](auto&&... extra) {
        tx.exec_params(upsert, textArray(providers), textArray(ids), textArray(statuses), textArray(codes),
                       textArray(texts), numberArray(done), numberArray(received), extra...);
      };
      withWorkers(options_, w, run);
      tx.commit();
      return 0;
    });
  }

  // The row of its own, under reusedIdKey(), of a message whose id another
  // message holds: `rejected` with `reason`, with its outbox row when events
  // are on, and its dead token counted. Returns 1 if it was new.
  std::size_t recordClash(pqxx::work& tx, const DeliveryRecord& same, const std::string& reason) {
    const EventWrites w = eventWritesOf(options_, 9);
    const std::string sql = fmt::format(
        "WITH ins AS (INSERT INTO deliveries (message_id, campaign, topic, kafka_partition, kafka_offset, status, "
        "attempts, reason, fingerprint) VALUES ($1, $2, $3, $4, $5, 'rejected', $6, $7, $8) ON CONFLICT "
        "(message_id) DO NOTHING RETURNING message_id, campaign, status, reason, provider, provider_message_id, "
        "attempts, recorded_at), {}done AS (SELECT 1) SELECT count(*) FROM ins",
        w.any() ? eventWrites(w, outcomeEvents("ins")) : "");
    const auto insert = [&](auto&&... extra) -> std::int64_t {
      const pqxx::row row = tx.exec_params1(sql, reusedIdKey(same), same.campaign, same.topic, same.partition,
                                            same.offset, same.attempts, reason,
                                            static_cast<std::int64_t>(same.fingerprint), extra...);
      return row[0].as<std::int64_t>();
    };
    const std::int64_t inserted = withWorkers(options_, w, insert);
    // The token is dead whatever id its message came under.
    if (inserted == 1 && same.status == DeliveryStatus::kInvalidToken && !same.token.empty())
      tx.exec_params(fmt::format("WITH tokens AS (SELECT $1::text AS provider, $2::text AS token, $3::text AS "
                                 "reason, CASE WHEN $4::bigint > 0 THEN to_timestamp($4::bigint / 1000.0) END "
                                 "AS since, $5::text AS campaign, 1 AS hits) {}",
                                 kTokenUpsert),
                     same.provider, same.token, same.reason, same.invalid_since_ms, same.campaign);
    return static_cast<std::size_t>(inserted);
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

// The highest version, not the count: numbers may have gaps while branches
// that each add a migration are merged.
int latestSchemaVersion() noexcept {
  int latest = 0;
  for (const Migration& m : kMigrations) latest = std::max(latest, m.version);
  return latest;
}

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
      throw LedgerRejectedError(
          fmt::format("the database is at schema version {}, newer than this build knows ({}): upgrade pacer", current,
                      latestSchemaVersion()));
    }
    // Every version not recorded, not only those above the highest: one
    // merged later with a lower number than one applied still applies.
    std::vector<int> done;
    for (const auto& row : tx.exec("SELECT version FROM pacer_schema_migrations")) done.push_back(row[0].as<int>());
    int applied = 0;
    for (const Migration& m : kMigrations) {
      if (std::find(done.begin(), done.end(), m.version) != done.end()) continue;
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
