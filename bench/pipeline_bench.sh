#!/usr/bin/env bash
# Whole-pipeline throughput (issue 4): one pacerd, null sink, ledger on
# (PostgreSQL with its default fsync and synchronous_commit), reading
# MESSAGES records over 20 unlimited campaigns from pacer-kafka-mock.
# Each run uses a fresh consumer group and a fresh ledger database, so every
# message is read, sent and recorded. Prints one line per run and the medians.
#   bench/pipeline_bench.sh [MESSAGES] [RUNS]
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
source "$(dirname "$0")/../scripts/services.sh"
cd "$PACER_ROOT"

messages=${1:-500000}
runs=${2:-5}
partitions=8

pacer_install_packages "${PACER_PACKAGES[@]}" jq >/dev/null
pacer_build release >/dev/null
bin=build/release

PACER_RUN_DIR=$(mktemp -d /tmp/pacer-bench-XXXXXX)
cleanup() {
  pacer_stop_kafka_mock
  pacer_stop_postgres
  rm -rf "$PACER_RUN_DIR"
}
trap cleanup EXIT

pacer_start_postgres "$PACER_RUN_DIR/pg"
pacer_start_kafka_mock "$bin/pacer-kafka-mock" "$PACER_RUN_DIR/kafka" --topic "messages:$partitions"
awk -v n="$messages" 'BEGIN { for (i = 0; i < n; i++) printf "c%d:{\"to\":\"+1555%07d\",\"text\":\"hello\"}\n", i % 20 + 1, i }' |
  kcat -P -b "$PACER_KAFKA" -t messages -K: -X queue.buffering.max.messages=1000000
echo "produced $messages messages on $partitions partitions"

rates=()
rows=()
for r in $(seq 1 "$runs"); do
  db="bench$r"
  pacer_as_pg "$(pacer_pg_bin)/createdb" -h 127.0.0.1 -p "$PACER_PG_PORT" -U postgres "$db"
  conninfo="host=127.0.0.1 port=$PACER_PG_PORT user=postgres dbname=$db"
  "$bin/pacerd" migrate --postgres "$conninfo" >/dev/null
  psql "$conninfo" -qAt -c "INSERT INTO campaigns (id) SELECT 'c' || g FROM generate_series(1, 20) g"
  "$bin/pacerd" --brokers "$PACER_KAFKA" --topic messages --group "bench$r" --postgres "$conninfo" --no-migrate \
    --sink null --in-flight 10000 --exit-when-idle-ms 1000 --summary "$PACER_RUN_DIR/summary$r.json" \
    --session-timeout-ms 6000 2>"$PACER_RUN_DIR/pacerd$r.log"
  sent=$(jq .sent "$PACER_RUN_DIR/summary$r.json")
  rate=$(jq '.sent_per_s | floor' "$PACER_RUN_DIR/summary$r.json")
  rowrate=$(jq '.ledger_rows_per_s | floor' "$PACER_RUN_DIR/summary$r.json")
  in_ledger=$(psql "$conninfo" -qAt -c "SELECT count(*) FROM deliveries")
  echo "run $r: sent $sent, ledger rows $in_ledger, $rate msg/s end to end, $rowrate ledger rows/s"
  [ "$sent" -eq "$messages" ] && [ "$in_ledger" -eq "$messages" ] || { echo "run $r lost messages" >&2; exit 1; }
  rates+=("$rate")
  rows+=("$rowrate")
done

median() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : int((a[NR / 2] + a[NR / 2 + 1]) / 2) }'; }
echo "median over $runs runs: $(median "${rates[@]}") msg/s end to end, $(median "${rows[@]}") ledger rows/s" \
  "(min $(printf '%s\n' "${rates[@]}" | sort -n | head -1), max $(printf '%s\n' "${rates[@]}" | sort -n | tail -1) msg/s)"
