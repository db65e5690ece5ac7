#!/usr/bin/env bash
# Issue 6's propagation measurement: WORKERS pacerd (one consumer group, null
# sink, --refresh-ms 60000 so only NOTIFY can carry a change) and CHANGES rate
# changes of one campaign made with `pacerctl campaign set-rate`, one at a
# time. For each change and each worker: the time from the change's commit to
# the worker's `event=control_applied` line for that rate.
#   - commit time: PostgreSQL's own commit timestamp of the campaign row
#     (track_commit_timestamp = on; pg_xact_commit_timestamp(xmin)), taken just
#     before the commit record is written;
#   - applied time: the line's at_us (CLOCK_REALTIME, microseconds).
# Server, workers and script share one machine, so the clocks are the same.
# Also reported: the time from launching pacerctl (process start, connect,
# transaction) to the last worker, and the workers' own after_ms (from reading
# the notification off the socket to applied).
# MODE busy: the campaign has a backlog, so every worker is sending (and
# ticking every few ms) throughout; idle: no messages at all.
#   bench/control_propagation.sh [CHANGES] [WORKERS] [busy|idle]
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
source "$(dirname "$0")/../scripts/services.sh"
cd "$PACER_ROOT"

changes=${1:-20}
workers=${2:-4}
mode=${3:-busy}
case "$mode" in busy | idle) ;; *) echo "MODE must be busy or idle" >&2; exit 2 ;; esac

pacer_install_packages "${PACER_PACKAGES[@]}" >/dev/null
pacer_build release >/dev/null
bin=build/release

PACER_RUN_DIR=$(mktemp -d /tmp/pacer-control-XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  pacer_stop_kafka_mock
  pacer_stop_postgres
  if [ -n "${PACER_KEEP:-}" ]; then echo "kept $PACER_RUN_DIR"; else rm -rf "$PACER_RUN_DIR"; fi
}
trap cleanup EXIT
now_us() { date +%s%6N; }

echo "control propagation: $changes set-rate changes, $workers workers, $mode"
pacer_start_postgres "$PACER_RUN_DIR/pg" "-c track_commit_timestamp=on"
export PACER_POSTGRES=$PACER_PG
pacer_start_kafka_mock "$bin/pacer-kafka-mock" "$PACER_RUN_DIR/kafka" --topic messages:8
"$bin/pacerd" migrate >/dev/null
"$bin/pacerctl" campaign create bench --rate 100 >/dev/null
if [ "$mode" = busy ]; then
  # 4 workers at up to ~120/s each for the run's ~30 s: a backlog that lasts.
  seq 1 40000 | awk '{ printf "bench:{\"n\":%d}\n", $1 }' |
    kcat -P -b "$PACER_KAFKA" -t messages -K: -X queue.buffering.max.messages=1000000
fi
for w in $(seq 1 "$workers"); do
  "$bin/pacerd" --brokers "$PACER_KAFKA" --topic messages --no-migrate --sink null \
    --refresh-ms 60000 --session-timeout-ms 6000 --admin-listen 127.0.0.1:0 >/dev/null 2>"$PACER_RUN_DIR/pacerd$w.log" &
  pids+=($!)
done
for w in $(seq 1 "$workers"); do
  until grep -q "event=control_listening" "$PACER_RUN_DIR/pacerd$w.log"; do sleep 0.1; done
done
if [ "$mode" = busy ]; then
  # Until every worker has its partitions and is sending.
  until [ "$(grep -l 'event=assigned' "$PACER_RUN_DIR"/pacerd*.log | wc -l)" -eq "$workers" ] &&
    [ "$(psql "$PACER_PG" -qAt -c "SELECT count(*) FROM deliveries")" -gt 1000 ]; do sleep 0.2; done
else
  sleep 8  # the group settles (first join ~3 s, then the rebalance as the others join)
fi

: >"$PACER_RUN_DIR/delays.txt"
: >"$PACER_RUN_DIR/launch.txt"
missing=0
for i in $(seq 1 "$changes"); do
  rate=$((100 + i))
  launched=$(now_us)
  "$bin/pacerctl" campaign set-rate bench "$rate" >/dev/null
  committed=$(psql "$PACER_PG" -qAt -c \
    "SELECT (extract(epoch FROM pg_xact_commit_timestamp(xmin)) * 1000000)::bigint FROM campaigns WHERE id = 'bench'")
  pattern="event=control_applied kind=campaign id=bench change=set-rate state=active send_rate=$rate "
  last=0
  for w in $(seq 1 "$workers"); do
    deadline=$(($(date +%s) + 5))
    until line=$(grep -m1 -- "$pattern" "$PACER_RUN_DIR/pacerd$w.log"); do
      if [ "$(date +%s)" -ge "$deadline" ]; then line=; break; fi
      sleep 0.01
    done
    if [ -z "$line" ]; then
      echo "change $i: worker $w did not apply it within 5 s" >&2
      missing=$((missing + 1))
      continue
    fi
    at=$(grep -oE 'at_us=[0-9]+' <<<"$line" | cut -d= -f2)
    after=$(grep -oE 'after_ms=[0-9.]+' <<<"$line" | cut -d= -f2)
    echo "$i $w $(((at - committed))) $after" >>"$PACER_RUN_DIR/delays.txt"
    [ "$at" -gt "$last" ] && last=$at
  done
  echo "$i $((last - launched))" >>"$PACER_RUN_DIR/launch.txt"
  sleep "0.$((RANDOM % 4 + 2))"  # 0.2-0.5 s apart, not in step with any tick
done

# nearest-rank percentiles of a column of numbers (microseconds or ms)
stats() {
  sort -n | awk '{ v[NR] = $1 } END {
    if (NR == 0) { print "n=0"; exit }
    p50 = v[int((NR + 1) / 2)]; i95 = int(NR * 0.95); if (i95 < NR * 0.95) i95++
    printf "n=%d median=%s p95=%s max=%s\n", NR, p50, v[i95], v[NR] }'
}
echo
echo "commit -> control_applied, every worker and change (ms):"
awk '{ printf "%.3f\n", $3 / 1000 }' "$PACER_RUN_DIR/delays.txt" | stats
echo "pacerctl launched -> last worker applied, per change (ms):"
awk '{ printf "%.3f\n", $2 / 1000 }' "$PACER_RUN_DIR/launch.txt" | stats
echo "worker-side after_ms (notification read -> applied):"
awk '{ print $4 }' "$PACER_RUN_DIR/delays.txt" | stats
echo "changes not applied by a worker within 5 s: $missing"
pacer_stop_workers || true
[ "$missing" -eq 0 ]
