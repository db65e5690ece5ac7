#!/usr/bin/env bash
# The ledger statement's cost with outcome events and callbacks, measured
# apart (bench/ledger_events_bench.cc): the same rows through PgLedger under
# each variant, alternating, on a throwaway PostgreSQL; medians at the end.
#   bench/ledger_events.sh [ROWS] [ROUNDS] [BATCH]   (defaults 100000, 5, 1000)
#   PACER_BENCH_PRESET=default bench/ledger_events.sh ...   (default preset: release)
#   LEDGER_BENCH_BIN=/path/to/ledger_events_bench bench/ledger_events.sh ...   (a copied build, for an A/B)
#   LEDGER_BENCH_ARGS="--variants ledger,both --drain 1" bench/ledger_events.sh ...
#   LEDGER_BENCH_SQL="ALTER TABLE ..." bench/ledger_events.sh ...   (run in every database after the migrations)
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
source "$(dirname "$0")/../scripts/services.sh"
cd "$PACER_ROOT"

rows=${1:-100000}
rounds=${2:-5}
batch=${3:-1000}
preset=${PACER_BENCH_PRESET:-release}

pacer_install_packages "${PACER_PACKAGES[@]}" >/dev/null
cmake --preset "$preset" >/dev/null
cmake --build "build/$preset" --target ledger_events_bench pacerd -j 2 >/dev/null
bench=${LEDGER_BENCH_BIN:-build/$preset/bench/ledger_events_bench}

PACER_RUN_DIR=$(mktemp -d /tmp/pacer-ledgerbench-XXXXXX)
cleanup() {
  pacer_stop_postgres
  rm -rf "$PACER_RUN_DIR"
}
trap cleanup EXIT
pacer_start_postgres "$PACER_RUN_DIR/pg"
server="host=127.0.0.1 port=$PACER_PG_PORT user=postgres"
for v in ledger callbacks outbox both; do
  pacer_as_pg "$(pacer_pg_bin)/createdb" -h 127.0.0.1 -p "$PACER_PG_PORT" -U postgres "lb_$v"
  "build/$preset/pacerd" migrate --postgres "$server dbname=lb_$v" >/dev/null
  [ -z "${LEDGER_BENCH_SQL:-}" ] || psql "$server dbname=lb_$v" -v ON_ERROR_STOP=1 -qAt -c "$LEDGER_BENCH_SQL"
done
echo "# ledger_events_bench: $rows rows in batches of $batch, $rounds rounds, $(nproc) cores," \
  "load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%Y-%m-%dT%H:%MZ)"
# shellcheck disable=SC2086 # LEDGER_BENCH_ARGS: more flags, split on spaces
"$bench" --postgres "$server" --db-prefix lb --rows "$rows" --batch "$batch" --rounds "$rounds" ${LEDGER_BENCH_ARGS:-}
