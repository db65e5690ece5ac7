// ledger_events_bench: what outcome events and callbacks add to the ledger's
// batch statement, measured apart from Kafka, the sink and the drainer.
// The same rows go through PgLedger::record() under each variant, the
// variants alternating round by round (A/B/C/D in one sitting), each in a
// database of its own that is emptied before every run:
//   ledger     no outbox, no callbacks (--no-callbacks, events off)
//   callbacks  the callbacks' outbox CTE, no campaign with a URL (the default)
//   outbox     the events' outbox CTE (events on, --no-callbacks)
//   both       the events' and the callbacks' CTEs (events on, the default)
// and, with --drain, how fast one drainer's PostgreSQL side (read a batch,
// delete the acknowledged one, one round trip) empties what `outbox` wrote.
//   ledger_events_bench --postgres "host=... user=postgres" --db-prefix b
//       [--rows 100000] [--batch 1000] [--rounds 5] [--variants ledger,callbacks,outbox,both] [--drain]
// The databases <prefix>_<variant> must exist and be migrated (bench/ledger_events.sh).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "pacer/ledger/pg_ledger.h"
#include "pacer/ledger/pg_outbox.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  std::string postgres;
  std::string prefix = "bench";
  std::size_t rows = 100000;
  std::size_t batch = 1000;
  int rounds = 5;
  std::vector<std::string> variants{"ledger", "callbacks", "outbox", "both"};
  bool drain = false;
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::size_t from = 0;
  while (from <= s.size()) {
    const std::size_t comma = std::min(s.find(',', from), s.size());
    if (comma > from) out.push_back(s.substr(from, comma - from));
    from = comma + 1;
  }
  return out;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--postgres") a.postgres = v;
    else if (k == "--db-prefix") a.prefix = v;
    else if (k == "--rows") a.rows = std::stoul(v);
    else if (k == "--batch") a.batch = std::stoul(v);
    else if (k == "--rounds") a.rounds = std::stoi(v);
    else if (k == "--variants") a.variants = split(v);
    else if (k == "--drain") a.drain = v == "1" || v == "yes";
    else throw std::invalid_argument("unknown flag " + k);
  }
  if (a.postgres.empty()) throw std::invalid_argument("--postgres is required");
  return a;
}

pacer::ledger::PgLedgerOptions optionsOf(const Args& a, const std::string& variant) {
  pacer::ledger::PgLedgerOptions o{fmt::format("{} dbname={}_{}", a.postgres, a.prefix, variant)};
  if (variant == "outbox" || variant == "both") o.outbox_worker = "bench";
  if (variant == "callbacks" || variant == "both") o.callback_worker = "bench";
  if (variant != "ledger" && variant != "callbacks" && variant != "outbox" && variant != "both")
    throw std::invalid_argument("unknown variant " + variant);
  return o;
}

// Rows like a null-sink run's: 20 campaigns, all sent, unique ids per round.
std::vector<pacer::DeliveryRecord> rowsOf(const Args& a, int round) {
  std::vector<pacer::DeliveryRecord> rows(a.rows);
  for (std::size_t i = 0; i < a.rows; ++i) {
    pacer::DeliveryRecord& r = rows[i];
    r.message_id = fmt::format("r{}-m{}", round, i);
    r.campaign = fmt::format("c{}", i % 20 + 1);
    r.topic = "messages";
    r.partition = static_cast<std::int32_t>(i % 8);
    r.offset = static_cast<std::int64_t>(round * a.rows + i);
    r.provider = "null";
    r.fingerprint = i + 1;
  }
  return rows;
}

void empty(const pacer::ledger::PgLedgerOptions& o) {
  pqxx::connection c(o.conninfo);
  pqxx::work tx(c);
  tx.exec("TRUNCATE deliveries, outbox, callback_outbox, invalid_tokens");
  tx.exec("INSERT INTO campaigns (id) SELECT 'c' || g FROM generate_series(1, 20) g ON CONFLICT DO NOTHING");
  tx.commit();
  pqxx::nontransaction(c).exec("VACUUM ANALYZE");
}

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Rows per second through record(), batch by batch.
double recordRun(const Args& a, const pacer::ledger::PgLedgerOptions& o, const std::vector<pacer::DeliveryRecord>& rows) {
  const pacer::LedgerInterfacePtr ledger = pacer::ledger::makePgLedger(o);
  ledger->record(std::span(rows).subspan(0, 1));  // connect outside the timing
  const Clock::time_point start = Clock::now();
  std::size_t added = 1;
  for (std::size_t i = 1; i < rows.size(); i += a.batch)
    added += ledger->record(std::span(rows).subspan(i, std::min(a.batch, rows.size() - i)));
  const double s = seconds(Clock::now() - start);
  if (added != rows.size()) throw std::runtime_error(fmt::format("{} rows of {} added", added, rows.size()));
  return static_cast<double>(rows.size() - 1) / s;
}

// Events per second a drainer's PostgreSQL side reads and deletes (the
// batch before is deleted in the statement that reads the next).
double drainRun(const Args& a, const pacer::ledger::PgLedgerOptions& o) {
  pacer::ledger::PgOutbox outbox(o);
  const Clock::time_point start = Clock::now();
  std::vector<std::int64_t> done;
  std::int64_t after = 0;
  std::size_t read = 0;
  for (;;) {
    const std::vector<pacer::OutcomeEvent> events = outbox.next(after, a.batch, done);
    if (events.empty()) break;
    read += events.size();
    done.clear();
    for (const pacer::OutcomeEvent& e : events) done.push_back(e.id);
    after = done.back();
  }
  outbox.remove(done);
  return static_cast<double>(read) / seconds(Clock::now() - start);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) try {
  const Args a = parse(argc, argv);
  std::map<std::string, std::vector<double>> rates;
  std::vector<double> drains;
  for (int round = 1; round <= a.rounds; ++round) {
    const std::vector<pacer::DeliveryRecord> rows = rowsOf(a, round);
    // Rotate the starting variant, so none always runs first or last.
    for (std::size_t k = 0; k < a.variants.size(); ++k) {
      const std::string& v = a.variants[(k + static_cast<std::size_t>(round - 1)) % a.variants.size()];
      const pacer::ledger::PgLedgerOptions o = optionsOf(a, v);
      empty(o);
      const double r = recordRun(a, o, rows);
      rates[v].push_back(r);
      std::string line = fmt::format("round {} {:<9} {:>8.0f} rows/s", round, v, r);
      if (a.drain && v == "outbox") {
        drains.push_back(drainRun(a, o));
        line += fmt::format(", drained {:.0f} events/s", drains.back());
      }
      fmt::print("{}\n", line);
      std::fflush(stdout);
    }
  }
  const double base = rates.count("ledger") ? median(rates["ledger"]) : 0;
  for (const std::string& v : a.variants) {
    const double m = median(rates[v]);
    fmt::print("median of {} {:<9} {:>8.0f} rows/s{}\n", a.rounds, v, m,
               base > 0 && v != "ledger" ? fmt::format("  ({:+.1f}% against ledger)", (m - base) * 100 / base)
                                         : std::string());
  }
  if (!drains.empty()) fmt::print("median of {} drain (read + delete, batch {}) {:.0f} events/s\n", a.rounds, a.batch,
                                  median(drains));
  return 0;
} catch (const std::exception& e) {
  fmt::print(stderr, "ledger_events_bench: {}\n", e.what());
  return 1;
}
