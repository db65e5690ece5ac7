#!/usr/bin/env bash
# Parking across a SIGKILL: a real pacerd (null sink, parking on, its park
# writer thread on unless PARK_WRITER=off) reading a backlog whose slow
# campaign parks most of it, killed with SIGKILL while it parks, then started
# again until everything is sent. The offsets it committed before the kill
# covered only messages whose parked row or ledger row was durable, so after
# the restart the ledger holds a `sent` row for every message produced
# (0 lost), nothing is left parked, and a new worker in the group reads
# nothing (the offsets were committed to the end).
#   MESSAGES=40000 PARK_WRITER=on|off SEED=n
source "${PACER_SOURCE:?}/tests/support/pacerd_test.sh"
messages=${MESSAGES:-40000}
park_writer=${PARK_WRITER:-on}
seed=${SEED:-$RANDOM}
daemon_pid=
cleanup() {
  [ -n "$daemon_pid" ] && kill -9 "$daemon_pid" 2>/dev/null || true
  pacer_stop_services "$tmp"
}
trap cleanup EXIT
PACER_TEST_LOGS=("$tmp/pacerd.log")
now_ms() { echo $(($(date +%s%N) / 1000000)); }
q() { pacer_psql -c "$1"; }

echo "parking across SIGKILL: $messages messages, park writer $park_writer, seed $seed"
RANDOM=$seed
pacer_start_postgres "$tmp/pg"
export PACER_POSTGRES=$PACER_PG
"$pacerd" migrate >/dev/null
pacer_start_kafka_mock "$kafka_mock" "$tmp/kafka" --topic messages:4 --die-with-parent
# `slow` keeps 0.1 s of its rate in memory (200) and parks the rest of its
# 9 in 10; `fast` is unlimited and never parks.
q "INSERT INTO campaigns (id, send_rate, burst) VALUES ('slow', 2000, 20), ('fast', NULL, 1)" >/dev/null
awk -v n="$messages" 'BEGIN { for (i = 0; i < n; i++) printf "%s:{\"n\":%d}\n", (i % 10 ? "slow" : "fast"), i }' |
  kcat -P -b "$PACER_KAFKA" -t messages -K:

run_daemon() {
  "$pacerd" --brokers "$PACER_KAFKA" --topic messages --no-migrate --sink null --admin-listen off \
    --session-timeout-ms 6000 --commit-interval-ms 200 --park-keep-s 0.1 --parking-lease-s 3 \
    --park-writer "$park_writer" "$@" >>"$tmp/pacerd.log" 2>&1 &
  daemon_pid=$!
}

run_daemon
until_ms=$(($(now_ms) + 60000))
while [ "$(q "SELECT count(*) FROM parked")" -lt $((messages / 8)) ]; do
  [ "$(now_ms)" -lt "$until_ms" ] || fail "the first run parked too little ($(q "SELECT count(*) FROM parked"))"
  sleep 0.05
done
sleep "0.$((RANDOM % 5))"
kill -KILL "$daemon_pid"
wait "$daemon_pid" 2>/dev/null || true
daemon_pid=
parked=$(q "SELECT count(*) FROM parked")
rows=$(q "SELECT count(*) FROM deliveries")
echo "SIGKILL: parked $parked, ledger rows $rows"
[ $((parked + rows)) -lt "$messages" ] || fail "the run was through its backlog before the SIGKILL; give it more MESSAGES"

# The dead worker's claims are free again after the lease (3 s).
run_daemon --exit-when-idle-ms 2000
until_ms=$(($(now_ms) + 120000))
while kill -0 "$daemon_pid" 2>/dev/null; do
  [ "$(now_ms)" -lt "$until_ms" ] ||
    fail "the second run did not finish (ledger rows $(q "SELECT count(*) FROM deliveries"), parked $(q "SELECT count(*) FROM parked"))"
  sleep 0.2
done
wait "$daemon_pid" || fail "the second run exited non-zero"
daemon_pid=

positions=$(q "SELECT count(DISTINCT (topic, kafka_partition, kafka_offset)) FROM deliveries WHERE status = 'sent'")
rows=$(q "SELECT count(*) FROM deliveries")
parked=$(q "SELECT count(*) FROM parked")
echo "after the restart: ledger rows $rows, sent positions $positions, parked $parked"
[ "$positions" -eq "$messages" ] || fail "lost: $((messages - positions)) messages have no sent row"
[ "$rows" -eq "$messages" ] || fail "$rows ledger rows for $messages messages"
[ "$parked" -eq 0 ] || fail "$parked messages left parked"

run_daemon --exit-when-idle-ms 1000 --summary "$tmp/after.json"
wait "$daemon_pid" || fail "the check run exited non-zero"
daemon_pid=
read_after=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["read"])' "$tmp/after.json")
[ "$read_after" -eq 0 ] || fail "a new worker read $read_after records: offsets were not committed to the end"
echo "PASS: 0 lost across a SIGKILL while parking"
