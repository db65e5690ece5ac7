#!/usr/bin/env bash
# Issue 24: does a slow campaign's backlog tax an on-time campaign beside it?
# One pacerd (null sink, ledger and parking in PostgreSQL, pacer-kafka-mock),
# two runs in one go on the same machine:
#   alone   campaign `fast` (send_rate 300/s) produced live at 300/s for
#           SECONDS seconds into partition 0;
#   beside  the same, after a backlog of BACKLOG messages of campaign `slow`
#           (send_rate 10/s) was produced, spread evenly over the topic's
#           partitions, partition 0 (the fast campaign's) included.
# The mock keeps at most 100,000 records per partition, so the backlog is
# spread over BACKLOG / 62,500 partitions (16 for 1,000,000); one worker reads
# them all, so its memory bound and its parking are shared as in one partition.
# Per run it prints the fast campaign's rate (sent / the span from its first
# to its last send, and end to end: sent / the span from the first message
# produced to the last send), how many of its messages went through parking,
# the worker's peak RSS, and for the slow campaign: rows parked, in the
# ledger, and lost (neither in the ledger nor parked, beyond the few the
# worker held in memory at the stop, which stay uncommitted in Kafka).
#   bench/slow_neighbour.sh [BACKLOG] [SECONDS]       defaults 1000000 60
# Environment: PACER_BENCH_PRESET (default release), PACER_PACERD another
# build's pacerd (an A/B with the same script), PACERD_ARGS more pacerd flags (word-split),
# PACER_FAST_BURST the fast campaign's burst (default 30, a tenth of a second), PACER_KEEP=1 keeps the run directory.
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
source "$(dirname "$0")/../scripts/services.sh"
cd "$PACER_ROOT"

backlog=${1:-1000000}
seconds=${2:-60}
fast_rate=300
slow_rate=10
per_partition=62500
partitions=$(((backlog + per_partition - 1) / per_partition))
[ "$partitions" -ge 1 ] || partitions=1
fast_n=$((fast_rate * seconds))
# A tenth of a second of sending: the arrivals come in tenths of a second.
fast_burst=${PACER_FAST_BURST:-$((fast_rate / 10))}

pacer_install_packages "${PACER_PACKAGES[@]}" jq bc >/dev/null
preset=${PACER_BENCH_PRESET:-release}
pacer_build "$preset" pacerd pacer-kafka-mock >/dev/null
bin=build/$preset
pacerd=${PACER_PACERD:-$bin/pacerd}

PACER_RUN_DIR=$(mktemp -d /tmp/pacer-neighbour-XXXXXX)
pids=()
trap pacer_bench_cleanup EXIT
pacer_bench_services "$bin" --topic "alone:1" --topic "beside:$partitions"
echo "slow neighbour: fast $fast_rate/s for ${seconds} s ($fast_n messages), slow $slow_rate/s with a backlog of" \
  "$backlog on $partitions partitions; pacerd: $pacerd"

# Live producer: fast_rate messages a second into partition 0 of topic $1, in tenths of a second.
produce_fast() {
  local topic=$1 t0 s i next now
  t0=$(date +%s%N)
  for ((s = 0; s < seconds * 10; s++)); do
    for ((i = 0; i < fast_rate / 10; i++)); do printf 'fast:{"n":%d}\n' $((s * fast_rate / 10 + i)); done
    next=$((t0 + (s + 1) * 100000000))
    now=$(date +%s%N)
    [ "$now" -ge "$next" ] || sleep "$(printf '0.%09d' $((next - now)))"
  done | kcat -P -b "$PACER_KAFKA" -t "$topic" -p 0 -K: -X linger.ms=5
}

# run NAME TOPIC: one pacerd on its own database until every fast message is sent.
run() {
  local name=$1 topic=$2 db conninfo pid t0 deadline rss=0 r
  db=$name
  pacer_as_pg "$(pacer_pg_bin)/createdb" -h 127.0.0.1 -p "$PACER_PG_PORT" -U postgres "$db"
  conninfo="host=127.0.0.1 port=$PACER_PG_PORT user=postgres dbname=$db"
  "$pacerd" migrate --postgres "$conninfo" >/dev/null
  psql "$conninfo" -qAt -c "INSERT INTO campaigns (id, send_rate, burst) VALUES
    ('fast', $fast_rate, $fast_burst), ('slow', $slow_rate, 1)"
  "$pacerd" --brokers "$PACER_KAFKA" --topic "$topic" --group "$name" --postgres "$conninfo" --no-migrate \
    --sink null --session-timeout-ms 6000 --summary "$PACER_RUN_DIR/$name.json" ${PACERD_ARGS:-} \
    >"$PACER_RUN_DIR/$name.log" 2>&1 &
  pid=$!
  pids+=("$pid")
  t0=$(date +%s%N)
  produce_fast "$topic"
  deadline=$(($(date +%s) + 180))
  while :; do
    r=$(awk '/VmHWM/ { print $2 }' "/proc/$pid/status" 2>/dev/null || echo 0)
    [ "${r:-0}" -le "$rss" ] || rss=$r
    [ "$(psql "$conninfo" -qAt -c "SELECT count(*) FROM deliveries WHERE campaign = 'fast'")" -lt "$fast_n" ] || break
    [ "$(date +%s)" -lt "$deadline" ] || { echo "$name: timed out waiting for the fast campaign" >&2; break; }
    sleep 0.5
  done
  r=$(awk '/VmHWM/ { print $2 }' "/proc/$pid/status" 2>/dev/null || echo 0)
  [ "${r:-0}" -le "$rss" ] || rss=$r
  local last_ms
  last_ms=$(psql "$conninfo" -qAt -c "SELECT (extract(epoch FROM max(recorded_at)) * 1000)::bigint FROM deliveries
                                       WHERE campaign = 'fast'")
  kill -TERM "$pid"
  wait "$pid" || echo "$name: pacerd exited with $?"
  pids=()
  local s="$PACER_RUN_DIR/$name.json" q
  q() { psql "$conninfo" -qAt -c "$1"; }
  local fast_sent fast_parked achieved e2e slow_ledger slow_parked slow_lost
  fast_sent=$(q "SELECT count(*) FROM deliveries WHERE campaign = 'fast' AND status = 'sent'")
  fast_parked=$(jq '[.campaigns[] | select(.id == "fast") | .parked] | add // 0' "$s")
  achieved=$(jq '[.campaigns[] | select(.id == "fast") | .achieved_rate] | add // 0' "$s")
  # recorded_at is the ledger write, at most a flush interval after the send.
  e2e=$(echo "$fast_sent / (($last_ms - $t0 / 1000000) / 1000)" | bc -l)
  slow_ledger=$(q "SELECT count(*) FROM deliveries WHERE campaign = 'slow'")
  slow_parked=$(q "SELECT count(*) FROM parked WHERE campaign = 'slow'")
  slow_lost=0
  [ "$name" = alone ] || slow_lost=$((backlog - slow_ledger - slow_parked))
  printf '%-6s fast: %d/%d sent, %.1f/s over its sending span, %.1f/s end to end, %d went through parking;' \
    "$name" "$fast_sent" "$fast_n" "$achieved" "$e2e" "$fast_parked"
  printf ' slow: %d parked in all, %d in parking at the stop, %d in the ledger, %d neither; peak RSS %d MB\n' \
    "$(jq '[.campaigns[] | select(.id == "slow") | .parked] | add // 0' "$s")" "$slow_parked" "$slow_ledger" \
    "$slow_lost" $((rss / 1024))
  eval "${name}_rate=$achieved ${name}_e2e=$e2e ${name}_fast_lost=$((fast_n - fast_sent)) ${name}_slow_lost=$slow_lost"
}

run alone alone

# The backlog, spread over every partition (the mock drops beyond 100,000 records a partition).
t=$(date +%s%N)
for ((p = 0; p < partitions; p++)); do
  awk -v p="$p" -v k="$per_partition" -v n="$backlog" 'BEGIN {
      for (i = p * k; i < (p + 1) * k && i < n; i++) printf "slow:{\"n\":%d}\n", i }' |
    kcat -P -b "$PACER_KAFKA" -t beside -p "$p" -K: -X queue.buffering.max.messages=1000000
done
echo "produced the slow backlog ($backlog messages) in $((($(date +%s%N) - t) / 1000000)) ms"
run beside beside

ratio=$(echo "$beside_rate / $alone_rate * 100" | bc -l)
ratio_e2e=$(echo "$beside_e2e / $alone_e2e * 100" | bc -l)
printf 'fast campaign beside the backlog: %.1f%% of its rate alone over its sending span, %.1f%% end to end (goal >= 95%%)\n' \
  "$ratio" "$ratio_e2e"
# In memory at the stop: up to max(10, 10 s x 10/s) = 100 slow messages (uncommitted in Kafka, read again).
ok=1
[ "$alone_fast_lost" -eq 0 ] && [ "$beside_fast_lost" -eq 0 ] || { echo "FAIL: fast messages without a sent row"; ok=0; }
[ "$beside_slow_lost" -le 100 ] || { echo "FAIL: $beside_slow_lost slow messages neither in the ledger nor parked"; ok=0; }
[ "$(echo "$ratio_e2e >= 95" | bc)" = 1 ] || { echo "MISSED: the fast campaign beside the backlog below 95% of its rate alone"; ok=0; }
[ "$ok" = 1 ] && echo "PASS"
[ "$ok" = 1 ]
