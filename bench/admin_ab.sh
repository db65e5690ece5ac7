#!/usr/bin/env bash
# Does the admin listener cost throughput? pipeline_bench.sh's set-up (one pacerd, null
# sink, ledger on, MESSAGES records over 20 unlimited campaigns from pacer-kafka-mock),
# run alternately with --admin-listen off and on (127.0.0.1:0, /metrics scraped every
# SCRAPE_S seconds with curl while it runs), RUNS times each, so both sides share the
# machine's load. Each run has a fresh consumer group and ledger database. Prints one
# line per run and the medians of both sides.
#   bench/admin_ab.sh [MESSAGES] [RUNS] [SCRAPE_S]
#   PACER_BENCH_PRESET=default bench/admin_ab.sh ...   (default preset: release)
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
source "$(dirname "$0")/../scripts/services.sh"
cd "$PACER_ROOT"

messages=${1:-200000}
runs=${2:-5}
scrape_s=${3:-1}
partitions=8
preset=${PACER_BENCH_PRESET:-release}

pacer_install_packages "${PACER_PACKAGES[@]}" jq curl >/dev/null
pacer_build "$preset" >/dev/null
bin=build/$preset

PACER_RUN_DIR=$(mktemp -d /tmp/pacer-admin-ab-XXXXXX)
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
echo "produced $messages messages on $partitions partitions; preset $preset; scrape every ${scrape_s}s when on"

# run N on|off: one pacerd to the end of the topic; prints its msg/s.
run() {
  local n=$1 side=$2 db="ab$1" log="$PACER_RUN_DIR/pacerd$1.log" summary="$PACER_RUN_DIR/summary$1.json"
  pacer_as_pg "$(pacer_pg_bin)/createdb" -h 127.0.0.1 -p "$PACER_PG_PORT" -U postgres "$db"
  local conninfo="host=127.0.0.1 port=$PACER_PG_PORT user=postgres dbname=$db"
  "$bin/pacerd" migrate --postgres "$conninfo" >/dev/null
  psql "$conninfo" -qAt -c "INSERT INTO campaigns (id) SELECT 'c' || g FROM generate_series(1, 20) g"
  local listen=off
  [ "$side" = on ] && listen=127.0.0.1:0
  "$bin/pacerd" --brokers "$PACER_KAFKA" --topic messages --group "ab$n" --postgres "$conninfo" --no-migrate \
    --sink null --in-flight 10000 --exit-when-idle-ms 1000 --summary "$summary" \
    --session-timeout-ms 6000 --admin-listen "$listen" 2>"$log" &
  local pid=$! scrapes=0
  if [ "$side" = on ]; then
    local address=""
    until address=$(grep -om1 'event=admin_listening address=[^ ]*' "$log" | cut -d= -f3) && [ -n "$address" ]; do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.05
    done
    while kill -0 "$pid" 2>/dev/null; do
      curl -sf "http://$address/metrics" >/dev/null && scrapes=$((scrapes + 1)) || true
      sleep "$scrape_s"
    done
  fi
  wait "$pid"
  local sent rate in_ledger
  sent=$(jq .sent "$summary")
  rate=$(jq '.sent_per_s | floor' "$summary")
  in_ledger=$(psql "$conninfo" -qAt -c "SELECT count(*) FROM deliveries")
  [ "$sent" -eq "$messages" ] && [ "$in_ledger" -eq "$messages" ] || { echo "run $n lost messages" >&2; exit 1; }
  echo "run $n admin $side: $rate msg/s end to end (scrapes: $scrapes)" >&2
  echo "$rate"
}

on=()
off=()
for r in $(seq 1 "$runs"); do
  # Alternate which side goes first, so neither always runs on a warmer machine.
  if [ $((r % 2)) = 1 ]; then
    off+=("$(run "$((2 * r - 1))" off)")
    on+=("$(run "$((2 * r))" on)")
  else
    on+=("$(run "$((2 * r - 1))" on)")
    off+=("$(run "$((2 * r))" off)")
  fi
done

median() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : int((a[NR / 2] + a[NR / 2 + 1]) / 2) }'; }
echo "admin off: median $(median "${off[@]}") msg/s over $runs runs (${off[*]})"
echo "admin on:  median $(median "${on[@]}") msg/s over $runs runs (${on[*]})"
