#!/usr/bin/env bash
# Outcome events across a SIGKILL: a real pacerd (null sink, events on)
# delivering MESSAGES records, killed with SIGKILL in the middle of the run,
# then started again under the same events.worker_id until the backlog is
# done. Then every ledger row has its event on the topic (matched by message
# id), no event lacks a ledger row, no message has two distinct events, and
# the events published twice (same event_id) are at most one batch: the one
# in flight at the kill. Prints the duplicate count.
#   MESSAGES=20000 SEED=n
set -euo pipefail
pacerd=${PACERD:?}
kafka_mock=${PACER_KAFKA_MOCK:?}
source "${PACER_SOURCE:?}/scripts/services.sh"
messages=${MESSAGES:-20000}
seed=${SEED:-$RANDOM}
batch=500
tmp=$(mktemp -d)
daemon_pid=
cleanup() {
  [ -n "$daemon_pid" ] && kill -9 "$daemon_pid" 2>/dev/null || true
  pacer_stop_services "$tmp"
}
trap cleanup EXIT
PACER_TEST_LOGS=("$tmp/pacerd.log")
now_ms() { echo $(($(date +%s%N) / 1000000)); }
rows() { pacer_psql -c "SELECT count(*) FROM deliveries"; }

echo "outcome events across SIGKILL: $messages messages, seed $seed"
RANDOM=$seed
pacer_start_postgres "$tmp/pg"
export PACER_POSTGRES=$PACER_PG
"$pacerd" migrate >/dev/null
pacer_start_kafka_mock "$kafka_mock" "$tmp/kafka" --topic messages:4 --topic outcomes:4 --die-with-parent
# Four campaigns at 1000/s: the run lasts about MESSAGES / 4000 seconds.
pacer_psql -c "INSERT INTO campaigns (id, send_rate, burst) SELECT 'c' || g, 1000, 50 FROM generate_series(1, 4) g"
awk -v n="$messages" 'BEGIN { for (i = 0; i < n; i++) printf "c%d:{\"n\":%d}\n", i % 4 + 1, i }' |
  kcat -P -b "$PACER_KAFKA" -t messages -K:

run_daemon() {
  "$pacerd" --brokers "$PACER_KAFKA" --topic messages --no-migrate --sink null --in-flight 1000 \
    --session-timeout-ms 6000 --commit-interval-ms 500 --admin-listen off \
    --events-topic outcomes --events-worker-id worker-1 --events-batch "$batch" "$@" >>"$tmp/pacerd.log" 2>&1 &
  daemon_pid=$!
}

run_daemon
until_ms=$(($(now_ms) + 60000))
while [ "$(rows)" -lt $((messages / 4)) ]; do
  [ "$(now_ms)" -lt "$until_ms" ] || fail "the first run made no progress"
  sleep 0.1
done
sleep "0.$((RANDOM % 10))"
[ "$(rows)" -lt "$messages" ] || fail "the run finished before its SIGKILL; give it more MESSAGES"
kill -KILL "$daemon_pid"
wait "$daemon_pid" 2>/dev/null || true
daemon_pid=
left=$(pacer_psql -c "SELECT count(*) FROM outbox o WHERE id > coalesce((SELECT published_up_to FROM outbox_cursor c WHERE c.worker = o.worker), 0)")
echo "SIGKILL: ledger rows $(rows), outbox rows above the cursor $left"

run_daemon --exit-when-idle-ms 2000
wait "$daemon_pid" || fail "the second run exited non-zero"
daemon_pid=
grep -q "event=outcome_events_started.*left_from_before=" "$tmp/pacerd.log" || fail "no event=outcome_events_started line"

kcat -C -b "$PACER_KAFKA" -t outcomes -e -q -f '%k %s\n' >"$tmp/events.txt"
pacer_psql -c "SELECT message_id, status, campaign FROM deliveries ORDER BY 1" >"$tmp/ledger.txt"
python3 "$PACER_SOURCE/scripts/check-events" "$tmp/events.txt" "$tmp/ledger.txt" --expected "$messages" \
  --max-duplicates "$batch" || fail "events do not match the ledger"
[ "$(pacer_psql -c "SELECT count(*) FROM outbox")" -eq 0 ] || fail "rows left in the outbox after a clean stop"
echo "PASS: every ledger row has its event, none without a row, duplicates only from the batch in flight"
