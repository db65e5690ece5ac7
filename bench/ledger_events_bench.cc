// ledger_events_bench: what outcome events and callbacks add to the ledger's
// batch statement, measured apart from Kafka, the sink and the drainer.
// The same rows go through PgLedger::record() under each variant, the
// variants alternating round by round (A/B/C/D in one sitting), each in a
// database of its own that is emptied before every run:
//   ledger     no outbox, no callbacks (--no-callbacks, events off)
//   callbacks  the callbacks' outbox CTE, no campaign with a URL (the default)
//   outbox     the events' outbox CTE (events on, --no-callbacks)
//   both       the events' and the callbacks' CTEs (events on, the default)
// and, with --drain, how fast one drainer's PostgreSQL side (read a batch and
// store the cursor past the one before, one round trip; then the bulk delete
// of the published rows) empties what `outbox` wrote.
//   ledger_events_bench --postgres "host=... user=postgres" --db-prefix b
//       [--rows 100000] [--batch 1000] [--rounds 5] [--variants ledger,callbacks,outbox,both] [--drain]
// The databases <prefix>_<variant> must exist and be migrated (bench/ledger_events.sh).
// Beside rows/s (wall clock, which a loaded machine moves), each run reports
// the CPU time all postgres processes on this machine spent in it, per 1,000
// rows: what the statement costs the server, much less moved by other load.
// Run it against a PostgreSQL of its own on this machine.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
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
  tx.exec("TRUNCATE deliveries, outbox, outbox_cursor, callback_outbox, invalid_tokens");
  tx.exec("INSERT INTO campaigns (id) SELECT 'c' || g FROM generate_series(1, 20) g ON CONFLICT DO NOTHING");
  tx.commit();
  pqxx::nontransaction(c).exec("VACUUM ANALYZE");
}

// CPU seconds (user + system) that the processes named postgres have used:
// every one, or only those in `only` (a backend's pid) when it is not empty.
double postgresCpu(const std::vector<std::string>& only = {}) {
  static const double tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
  double total = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    if (!only.empty() && std::find(only.begin(), only.end(), entry.path().filename().string()) == only.end())
      continue;
    std::ifstream in(entry.path() / "stat");
    std::string stat;
    if (!std::getline(in, stat)) continue;
    const std::size_t open = stat.find('('), close = stat.rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    if (stat.compare(open + 1, close - open - 1, "postgres") != 0) continue;
    std::istringstream rest(stat.substr(close + 2));
    std::string field;
    double utime = 0, stime = 0;
    // After the name: state is field 3; utime and stime are fields 14 and 15.
    for (int i = 3; i <= 15 && rest >> field; ++i) {
      if (i == 14) utime = std::stod(field);
      if (i == 15) stime = std::stod(field);
    }
    total += (utime + stime) / tick;
  }
  return total;
}

struct Run {
  double rows_per_s = 0;
  double pg_cpu_ms_per_1000 = 0;       // every postgres process's CPU per 1,000 rows
  double backend_cpu_ms_per_1000 = 0;  // the CPU of the backend that ran the statements alone
};

// The pids of the client backends connected to `conninfo`'s database, other
// than the one asking (the bench's own connection under test).
std::vector<std::string> backendsOf(const std::string& conninfo) {
  pqxx::connection c(conninfo);
  pqxx::nontransaction tx(c);
  std::vector<std::string> out;
  for (const auto& row : tx.exec("SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND "
                                 "backend_type = 'client backend' AND pid <> pg_backend_pid()"))
    out.push_back(row[0].as<std::string>());
  if (out.empty()) out.push_back("none");
  return out;
}

// postgres's CPU over a run: all of it and the backends' alone.
struct CpuMark {
  std::vector<std::string> backends;
  double all = postgresCpu(), backend = postgresCpu(backends);
  Run done(double count, double s) const {
    const double per = 1e3 * 1000 / std::max(count, 1.0);
    return Run{count / s, (postgresCpu() - all) * per, (postgresCpu(backends) - backend) * per};
  }
};

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Rows per second through record(), batch by batch, and postgres's CPU.
Run recordRun(const Args& a, const pacer::ledger::PgLedgerOptions& o, const std::vector<pacer::DeliveryRecord>& rows) {
  const pacer::LedgerInterfacePtr ledger = pacer::ledger::makePgLedger(o);
  ledger->record(std::span(rows).subspan(0, 1));  // connect outside the timing
  const CpuMark cpu{backendsOf(o.conninfo)};
  const Clock::time_point start = Clock::now();
  std::size_t added = 1;
  for (std::size_t i = 1; i < rows.size(); i += a.batch)
    added += ledger->record(std::span(rows).subspan(i, std::min(a.batch, rows.size() - i)));
  const Run run = cpu.done(static_cast<double>(rows.size() - 1), seconds(Clock::now() - start));
  if (added != rows.size()) throw std::runtime_error(fmt::format("{} rows of {} added", added, rows.size()));
  return run;
}

// Events per second a drainer's PostgreSQL side reads and marks published
// (the cursor past the batch before is stored in the statement that reads
// the next), the bulk delete of what the cursor covers included, and
// postgres's CPU per 1,000 events.
Run drainRun(const Args& a, const pacer::ledger::PgLedgerOptions& o) {
  pacer::ledger::PgOutbox outbox(o);
  outbox.depth();  // connect outside the timing
  const CpuMark cpu{backendsOf(o.conninfo)};
  const Clock::time_point start = Clock::now();
  std::optional<std::int64_t> cursor;
  std::int64_t after = 0;
  std::size_t read = 0;
  for (;;) {
    const std::vector<pacer::OutcomeEvent> events = outbox.next(after, a.batch, cursor);
    if (events.empty()) break;
    read += events.size();
    after = events.back().id;
    cursor = after;
  }
  outbox.store(after);
  outbox.prune();
  return cpu.done(static_cast<double>(read), seconds(Clock::now() - start));
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) try {
  const Args a = parse(argc, argv);
  std::map<std::string, std::vector<double>> rates, cpus, backend_cpus;
  std::vector<double> drains, drain_cpus;
  for (int round = 1; round <= a.rounds; ++round) {
    const std::vector<pacer::DeliveryRecord> rows = rowsOf(a, round);
    // Rotate the starting variant, so none always runs first or last.
    for (std::size_t k = 0; k < a.variants.size(); ++k) {
      const std::string& v = a.variants[(k + static_cast<std::size_t>(round - 1)) % a.variants.size()];
      const pacer::ledger::PgLedgerOptions o = optionsOf(a, v);
      empty(o);
      const Run r = recordRun(a, o, rows);
      rates[v].push_back(r.rows_per_s);
      cpus[v].push_back(r.pg_cpu_ms_per_1000);
      backend_cpus[v].push_back(r.backend_cpu_ms_per_1000);
      std::string line = fmt::format("round {} {:<9} {:>6.0f} rows/s, CPU per 1000 rows: postgres {:5.1f} ms, "
                                     "the ledger's backend {:5.1f} ms",
                                     round, v, r.rows_per_s, r.pg_cpu_ms_per_1000, r.backend_cpu_ms_per_1000);
      if (a.drain && v == "outbox") {
        const Run d = drainRun(a, o);
        drains.push_back(d.rows_per_s);
        drain_cpus.push_back(d.backend_cpu_ms_per_1000);
        line += fmt::format("; drained {:.0f} events/s, its backend {:.1f} ms per 1000", d.rows_per_s,
                            d.backend_cpu_ms_per_1000);
      }
      fmt::print("{}\n", line);
      std::fflush(stdout);
    }
  }
  const bool base = rates.count("ledger") > 0;
  const auto against = [&](const std::string& v, double m, std::map<std::string, std::vector<double>>& of) {
    return base && v != "ledger" ? fmt::format(" ({:+.1f}%)", (m - median(of["ledger"])) * 100 / median(of["ledger"]))
                                 : std::string();
  };
  for (const std::string& v : a.variants) {
    const double m = median(rates[v]), c = median(cpus[v]), b = median(backend_cpus[v]);
    fmt::print("median of {} {:<9} {:>6.0f} rows/s{}, CPU per 1000 rows: postgres {:5.1f} ms{}, the ledger's "
               "backend {:5.1f} ms{}\n",
               a.rounds, v, m, against(v, m, rates), c, against(v, c, cpus), b, against(v, b, backend_cpus));
  }
  if (!drains.empty())
    fmt::print("median of {} drain (read + cursor + bulk delete, batch {}) {:.0f} events/s, its backend {:.1f} ms per 1000\n",
               a.rounds, a.batch, median(drains), median(drain_cpus));
  return 0;
} catch (const std::exception& e) {
  fmt::print(stderr, "ledger_events_bench: {}\n", e.what());
  return 1;
}
