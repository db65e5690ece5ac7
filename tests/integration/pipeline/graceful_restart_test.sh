#!/usr/bin/env bash
# Issue 6, graceful shutdown under load: a real pacerd delivering over HTTP to
# pacer-fake-provider (which records every request's Idempotency-Key), with
# hundreds of requests in flight, a slow campaign parked in PostgreSQL, and
# SIGTERM at a random moment, CYCLES times, each followed by a restart. After
# the last run:
#   - every message reached the provider exactly once (0 lost, 0 duplicates:
#     requests = distinct keys = messages);
#   - the ledger holds one `sent` row per message and nothing is left parked;
#   - each SIGTERM ended with exit 0 within the shutdown deadline;
#   - the offsets were committed to the end (a new worker in the group reads
#     nothing).
#   MESSAGES=6000 CYCLES=2 LEASE_S=60 SEED=n   (bench/graceful_restart.sh runs it larger)
set -euo pipefail
pacerd=${PACERD:?}
kafka_mock=${PACER_KAFKA_MOCK:?}
fake_provider=${PACER_FAKE_PROVIDER:?}
source "${PACER_SOURCE:?}/scripts/services.sh"
messages=${MESSAGES:-6000}
cycles=${CYCLES:-2}
seed=${SEED:-$RANDOM}
lease_s=${LEASE_S:-60}   # the claim lease on parked messages
deadline_ms=10000
tmp=$(mktemp -d)
daemon_pid=
provider_pid=
cleanup() {
  [ -n "$daemon_pid" ] && kill -9 "$daemon_pid" 2>/dev/null || true
  [ -n "$provider_pid" ] && kill "$provider_pid" 2>/dev/null || true
  pacer_stop_services "$tmp"
}
trap cleanup EXIT
# fail (scripts/services.sh) shows these logs.
PACER_TEST_LOGS=("$tmp/pacerd.log")
now_ms() { echo $(($(date +%s%N) / 1000000)); }
rows() { pacer_psql -c "SELECT count(*) FROM deliveries"; }
report() {  # report FIELD: the provider's figure over every campaign
  python3 - "$1" "http://127.0.0.1:$provider_port/report" <<'EOF'
import json, sys, urllib.request
print(json.load(urllib.request.urlopen(sys.argv[2])).get("(all)", {}).get(sys.argv[1], 0))
EOF
}

echo "graceful restart: $messages messages, $cycles SIGTERM-and-restart cycles, seed $seed"
RANDOM=$seed
pacer_start_postgres "$tmp/pg"
export PACER_POSTGRES=$PACER_PG
"$pacerd" migrate >/dev/null
pacer_start_kafka_mock "$kafka_mock" "$tmp/kafka" --topic messages:4 --die-with-parent
# Every answer takes 20 ms, so with --in-flight 200 there are requests in
# flight at any moment of a run.
"$fake_provider" --port 0 --port-file "$tmp/provider.port" --latency-ms 20 >"$tmp/provider.log" 2>&1 &
provider_pid=$!
for _ in $(seq 1 100); do [ -s "$tmp/provider.port" ] && break; sleep 0.1; done
provider_port=$(cat "$tmp/provider.port")

pacer_psql -c "INSERT INTO providers (id, rate, burst) VALUES ('gw', 5000, 100)"
# Two fast campaigns and a slow one whose excess is parked in PostgreSQL.
pacer_psql -c "INSERT INTO campaigns (id, send_rate, burst, provider) VALUES
  ('fast1', 1000, 20, 'gw'), ('fast2', 1000, 20, 'gw'), ('slow', 150, 5, 'gw')"
awk -v n="$messages" 'BEGIN { for (i = 0; i < n; i++) {
    c = (i % 10 < 9) ? ((i % 2) ? "fast1" : "fast2") : "slow"
    printf "%s:{\"n\":%d}\n", c, i } }' | kcat -P -b "$PACER_KAFKA" -t messages -K:

run_daemon() {
  "$pacerd" --brokers "$PACER_KAFKA" --topic messages --no-migrate \
    --sink http --http-url "http://127.0.0.1:$provider_port/send/{campaign}" --in-flight 200 \
    --session-timeout-ms 6000 --commit-interval-ms 500 --shutdown-deadline-ms "$deadline_ms" \
    --park-keep-s 1 --parking-lease-s "$lease_s" --admin-listen 127.0.0.1:0 "$@" >>"$tmp/pacerd.log" 2>&1 &
  daemon_pid=$!
}

for c in $(seq 1 "$cycles"); do
  before=$(rows)
  run_daemon
  # SIGTERM once this run is well under way, at a random moment after that.
  until_ms=$(($(now_ms) + 60000))
  while [ "$(rows)" -lt $((before + 300)) ]; do
    [ "$(now_ms)" -lt "$until_ms" ] || fail "run $c made no progress"
    sleep 0.1
  done
  sleep "0.$((RANDOM % 10))"
  [ "$(rows)" -lt "$messages" ] || fail "run $c finished before its SIGTERM; give it more MESSAGES"
  t0=$(now_ms)
  kill -TERM "$daemon_pid"
  set +e
  wait "$daemon_pid"
  rc=$?
  set -e
  took=$(($(now_ms) - t0))
  daemon_pid=
  [ "$rc" = 0 ] || fail "run $c exited $rc after SIGTERM, expected 0"
  [ "$took" -le $((deadline_ms + 5000)) ] || fail "run $c took $took ms to stop (deadline $deadline_ms ms)"
  line=$(grep 'event=shutdown_started' "$tmp/pacerd.log" | tail -n 1)
  echo "SIGTERM $c: stopped in $took ms, exit 0; at the signal: ${line#*event=shutdown_started }; ledger rows $(rows)"
done

# The stopped runs gave their claims on parked messages back: the last run
# sends them at once, well before the claim lease could run out.
run_daemon --exit-when-idle-ms 2000
until_ms=$(($(now_ms) + (lease_s - 10) * 1000))
while kill -0 "$daemon_pid" 2>/dev/null; do
  [ "$(now_ms)" -lt "$until_ms" ] ||
    fail "the last run did not finish within $((lease_s - 10)) s (ledger rows $(rows), parked $(pacer_psql -c 'SELECT count(*) FROM parked'))"
  sleep 0.2
done
wait "$daemon_pid" || fail "the last run exited non-zero"
daemon_pid=

requests=$(report requests)
distinct=$(report distinct_keys)
duplicates=$(report duplicates)
ledger=$(rows)
sent=$(pacer_psql -c "SELECT count(*) FROM deliveries WHERE status = 'sent'")
parked=$(pacer_psql -c "SELECT count(*) FROM parked")
echo "provider: $requests requests, $distinct distinct keys, $duplicates duplicates;" \
  "ledger: $ledger rows, $sent sent; parked: $parked"
[ "$distinct" -eq "$messages" ] || fail "lost: $((messages - distinct)) messages never reached the provider"
[ "$duplicates" -eq 0 ] || fail "$duplicates messages were accepted more than once"
[ "$requests" -eq "$messages" ] || fail "$((requests - messages)) requests more than messages: sent twice"
[ "$ledger" -eq "$messages" ] && [ "$sent" -eq "$messages" ] || fail "expected $messages sent rows in the ledger"
[ "$parked" -eq 0 ] || fail "$parked messages left parked"

# Everything was committed: one more worker in the group finds nothing to read.
run_daemon --exit-when-idle-ms 1000 --summary "$tmp/after.json"
wait "$daemon_pid" || fail "the check run exited non-zero"
daemon_pid=
read_after=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["read"])' "$tmp/after.json")
[ "$read_after" -eq 0 ] || fail "a new worker read $read_after records: offsets were not committed to the end"
echo "PASS: 0 lost, 0 duplicates across $cycles SIGTERM-and-restart cycles"
