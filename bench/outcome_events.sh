#!/usr/bin/env bash
# Outcome events' cost and lag on one pacerd (null sink, ledger on), A/B in
# one run over the same backlog: runs alternate events off and on, each with
# a fresh consumer group and ledger database.
#  1. Throughput: MESSAGES records over 20 unlimited campaigns, as fast as the
#     worker goes; events/s published against ledger rows/s.
#  2. Lag at a set rate: the same backlog paced at PACED msg/s in all (20
#     campaigns at PACED/20 each), events off then on; lag from the ledger row's
#     recorded_at to the event's Kafka timestamp (set when the drainer
#     produces it), p50 and p99.
#   bench/outcome_events.sh [MESSAGES] [RUNS] ["PACED ..."]   (defaults 100000, 3, "20000 5000")
#   PACER_BENCH_PRESET=default bench/outcome_events.sh ...   (default preset: release)
#   EVENTS_ARGS="--events-batch 5000" bench/outcome_events.sh ...   (more flags for the events-on runs)
#   EVENTS_SPLIT=1 bench/outcome_events.sh ...   (unlimited rounds add a third run between off and on:
#     the outbox written but its drainer idle until the stop, so the ledger's share of the cost shows)
#   OFF_ARGS="--no-callbacks" bench/outcome_events.sh ...   (more flags for the events-off runs: a bare ledger)
#   KAFKA_MOCK=/tmp/a/pacer-kafka-mock PACERD_AB="/tmp/a/pacerd /tmp/b/pacerd" bench/outcome_events.sh ...   (A/B of two copied builds in one
#     sitting: each off/on pair, and each paced pair, runs under A then B; lines name the build)
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
source "$(dirname "$0")/../scripts/services.sh"
cd "$PACER_ROOT"

messages=${1:-100000}
runs=${2:-3}
paced=${3:-20000 5000}
partitions=8
preset=${PACER_BENCH_PRESET:-release}

pacer_install_packages "${PACER_PACKAGES[@]}" jq >/dev/null
# With PACERD_AB the builds are copies: nothing to build (the mock comes from build/PRESET).
[ -n "${PACERD_AB:-}" ] || pacer_build "$preset" pacerd pacer-kafka-mock >/dev/null
bin=build/$preset

PACER_RUN_DIR=$(mktemp -d /tmp/pacer-bench-XXXXXX)
cleanup() {
  pacer_stop_kafka_mock
  pacer_stop_postgres
  rm -rf "$PACER_RUN_DIR"
}
trap cleanup EXIT

pacer_start_postgres "$PACER_RUN_DIR/pg"
# One events topic per run, made here: an auto-created topic has 4
# partitions, and the mock keeps at most 5 MiB of each.
event_topics=()
for i in $(seq 1 $((2 * (3 * runs + 2 * $(wc -w <<<"$paced"))))); do event_topics+=(--topic "outcomes$i:16"); done
pacer_start_kafka_mock "${KAFKA_MOCK:-$bin/pacer-kafka-mock}" "$PACER_RUN_DIR/kafka" --topic "messages:$partitions" \
  "${event_topics[@]}"
awk -v n="$messages" 'BEGIN { for (i = 0; i < n; i++) printf "c%d:{\"to\":\"+1555%07d\",\"text\":\"hello\"}\n", i % 20 + 1, i }' |
  kcat -P -b "$PACER_KAFKA" -t messages -K: -X queue.buffering.max.messages=1000000
echo "produced $messages messages on $partitions partitions; preset $preset"

n=0
# run MODE RATE: one pacerd over the whole backlog; MODE off or on; RATE per
# campaign ("" for unlimited). Prints a line; sets conninfo and topic.
run() {
  local mode=$1 rate=$2 events=()
  n=$((n + 1))
  local db="bench$n"
  topic="outcomes$n"
  pacer_as_pg "$(pacer_pg_bin)/createdb" -h 127.0.0.1 -p "$PACER_PG_PORT" -U postgres "$db"
  conninfo="host=127.0.0.1 port=$PACER_PG_PORT user=postgres dbname=$db"
  "$pacerd" migrate --postgres "$conninfo" >/dev/null
  psql "$conninfo" -qAt -c "INSERT INTO campaigns (id, send_rate, burst) SELECT 'c' || g, ${rate:-NULL}, \
    ${rate:-1} FROM generate_series(1, 20) g"
  # shellcheck disable=SC2206 # EVENTS_ARGS: more pacerd flags for the events, split on spaces
  [ "$mode" = on ] && events=(--events-topic "$topic" --events-worker-id bench ${EVENTS_ARGS:-})
  # The outbox is written; its drainer reads once at the start and then not
  # for a minute, longer than a run (at the stop it publishes for at most 10 s).
  [ "$mode" = outbox ] && events=(--events-topic "$topic" --events-worker-id bench ${EVENTS_ARGS:-} \
    --events-poll-ms 60000)
  # shellcheck disable=SC2206 # OFF_ARGS: more pacerd flags for the events-off runs, split on spaces
  [ "$mode" = off ] && events=(${OFF_ARGS:-})
  "$pacerd" --brokers "$PACER_KAFKA" --topic messages --group "bench$n" --postgres "$conninfo" --no-migrate \
    --sink null --in-flight 10000 --exit-when-idle-ms 1000 --summary "$PACER_RUN_DIR/summary$n.json" \
    --session-timeout-ms 6000 --admin-listen off "${events[@]}" 2>"$PACER_RUN_DIR/pacerd$n.log"
  sent=$(jq .sent "$PACER_RUN_DIR/summary$n.json")
  rate_out=$(jq '.sent_per_s | floor' "$PACER_RUN_DIR/summary$n.json")
  rowrate=$(jq '.ledger_rows_per_s | floor' "$PACER_RUN_DIR/summary$n.json")
  in_ledger=$(psql "$conninfo" -qAt -c "SELECT count(*) FROM deliveries")
  [ "$sent" -eq "$messages" ] && [ "$in_ledger" -eq "$messages" ] || { echo "run $n lost messages" >&2; exit 1; }
  line="run $n${label:+ $label} events $mode: $rate_out msg/s end to end, $rowrate ledger rows/s"
  if [ "$mode" = on ]; then
    # Every event: its id, its Kafka timestamp, its ledger time.
    kcat -C -b "$PACER_KAFKA" -t "$topic" -e -q -f '%T %s\n' >"$PACER_RUN_DIR/events$n.txt"
    local events_n unique left span
    events_n=$(wc -l <"$PACER_RUN_DIR/events$n.txt")
    unique=$(jq -r .event_id < <(cut -d' ' -f2- "$PACER_RUN_DIR/events$n.txt") | sort -u | wc -l)
    # Not yet published: above the worker's cursor (schema 15), or any row
    # (before it, published rows were deleted).
    if [ "$(psql "$conninfo" -qAt -c "SELECT to_regclass('outbox_cursor') IS NOT NULL")" = t ]; then
      left=$(psql "$conninfo" -qAt -c "SELECT count(*) FROM outbox o WHERE id > coalesce((SELECT published_up_to \
        FROM outbox_cursor c WHERE c.worker = o.worker), 0)")
    else
      left=$(psql "$conninfo" -qAt -c "SELECT count(*) FROM outbox")
    fi
    # Published rate: events over the span of their Kafka timestamps.
    span=$(awk '{ if (min == "" || $1 < min) min = $1; if ($1 > max) max = $1 } END { print (max - min) / 1000 }' \
      "$PACER_RUN_DIR/events$n.txt")
    line+=", events $events_n (unique $unique, left in outbox $left), $(awk -v e="$events_n" -v s="$span" \
      'BEGIN { printf "%d", (s > 0) ? e / s : 0 }') events/s published"
    # At exit the drainer publishes for at most 10 s more; what it could not
    # stays in the outbox for the next start. Nothing may be missing.
    [ $((unique + left)) -eq "$messages" ] ||
      { echo "run $n: $unique distinct events + $left left in the outbox != $messages ledger rows" >&2; exit 1; }
    # Lag: Kafka timestamp minus recorded_at_ms, per event.
    cut -d' ' -f2- "$PACER_RUN_DIR/events$n.txt" | jq -r .recorded_at_ms |
      paste -d' ' <(cut -d' ' -f1 "$PACER_RUN_DIR/events$n.txt") - | awk '{ print $1 - $2 }' | sort -n \
      >"$PACER_RUN_DIR/lag$n.txt"
    line+=", lag p50 $(awk '{ a[NR] = $1 } END { print a[int(NR * 0.50) + 1] }' "$PACER_RUN_DIR/lag$n.txt") ms"
    line+=" p99 $(awk '{ a[NR] = $1 } END { print a[int(NR * 0.99) + 1] }' "$PACER_RUN_DIR/lag$n.txt") ms"
    line+=" max $(tail -1 "$PACER_RUN_DIR/lag$n.txt") ms"
  fi
  echo "$line"
}

builds=(${PACERD_AB:-$bin/pacerd})
[ ${#builds[@]} -le 2 ] || { echo "PACERD_AB: at most two builds" >&2; exit 1; }
# use I: the pacerd of build I (0 or 1), and its label (A or B with PACERD_AB).
use() {
  pacerd=${builds[$1]}
  label=
  [ -z "${PACERD_AB:-}" ] || label=$([ "$1" = 0 ] && echo A || echo B)
}
[ -z "${PACERD_AB:-}" ] || { echo "A: ${builds[0]}"; echo "B: ${builds[1]}"; }
median() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : int((a[NR / 2] + a[NR / 2 + 1]) / 2) }'; }
declare -A off on outbox
for r in $(seq 1 "$runs"); do
  for b in "${!builds[@]}"; do
    use "$b"
    run off ""
    off[$b]+=" $rate_out"
    if [ -n "${EVENTS_SPLIT:-}" ]; then
      run outbox ""
      outbox[$b]+=" $rate_out"
    fi
    run on ""
    on[$b]+=" $rate_out"
  done
done
for b in "${!builds[@]}"; do
  use "$b"
  # shellcheck disable=SC2086 # the lists of rates, split on spaces
  moff=$(median ${off[$b]})
  # shellcheck disable=SC2086
  mon=$(median ${on[$b]})
  echo "${label:+$label }unlimited, median of $runs: events off $moff msg/s, events on $mon msg/s:" \
    "cost $(awk -v a="$moff" -v b="$mon" 'BEGIN { printf "%.1f", (a - b) * 100 / a }')% (goal <= 10%)"
  if [ -n "${EVENTS_SPLIT:-}" ]; then
    # shellcheck disable=SC2086
    mbox=$(median ${outbox[$b]})
    echo "${label:+$label }outbox written, drainer idle, median of $runs: $mbox msg/s:" \
      "cost $(awk -v a="$moff" -v b="$mbox" 'BEGIN { printf "%.1f", (a - b) * 100 / a }')%"
  fi
done
for rate in $paced; do
  echo "paced at $rate msg/s ($((rate / 20))/s per campaign x 20):"
  for b in "${!builds[@]}"; do
    use "$b"
    run off "$((rate / 20))"
    run on "$((rate / 20))"
  done
done
