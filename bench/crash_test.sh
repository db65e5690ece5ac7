#!/usr/bin/env bash
# The crash test (issue 4): 200,000 messages over 20 campaigns, pacerd
# SIGKILLed at 10 random moments and restarted each time, delivering over HTTP
# to pacer-fake-provider, which records every request's idempotency key.
# It checks and reports:
#   - 0 messages missing at the provider, and exactly one ledger row each;
#   - duplicate sends <= the unrecorded bound per kill, with the count.
# Too long for scripts/test (about 2-4 minutes); run by hand or nightly:
#   bench/crash_test.sh [MESSAGES] [KILLS]
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
source "$(dirname "$0")/../scripts/services.sh"
cd "$PACER_ROOT"

messages=${1:-200000}
kills=${2:-10}
campaigns=20
partitions=8
bound=500   # --max-unrecorded: sent but not yet in the ledger, at most
seed=${CRASH_SEED:-$RANDOM}

pacer_install_packages "${PACER_PACKAGES[@]}" curl jq >/dev/null
pacer_build release >/dev/null
bin=build/release

export PACER_RUN_DIR
PACER_RUN_DIR=$(mktemp -d /tmp/pacer-crash-XXXXXX)
provider_pid=
daemon_pid=
cleanup() {
  [ -n "$daemon_pid" ] && kill -9 "$daemon_pid" 2>/dev/null || true
  [ -n "$provider_pid" ] && kill "$provider_pid" 2>/dev/null || true
  pacer_stop_kafka_mock
  pacer_stop_postgres
  rm -rf "$PACER_RUN_DIR"
}
trap cleanup EXIT

echo "crash test: $messages messages, $campaigns campaigns, $partitions partitions, $kills kills, seed $seed"
RANDOM=$seed
pacer_start_postgres "$PACER_RUN_DIR/pg"
pacer_start_kafka_mock "$bin/pacer-kafka-mock" "$PACER_RUN_DIR/kafka" --topic "messages:$partitions"
"$bin/pacer-fake-provider" --port 0 --port-file "$PACER_RUN_DIR/provider.port" --threads 256 \
  >"$PACER_RUN_DIR/provider.log" 2>&1 &
provider_pid=$!
for _ in $(seq 1 100); do [ -s "$PACER_RUN_DIR/provider.port" ] && break; sleep 0.1; done
provider_port=$(cat "$PACER_RUN_DIR/provider.port")

"$bin/pacerd" migrate --postgres "$PACER_PG" >/dev/null
pacer_psql -c "INSERT INTO providers (id, rate, burst) VALUES ('gateway', 20000, 200)"
for c in $(seq 1 $campaigns); do
  pacer_psql -c "INSERT INTO campaigns (id, send_rate, burst, provider) VALUES ('c$c', 1000, 50, 'gateway')"
done

# Message i goes to campaign c(i % 20 + 1); its id is its Kafka position.
awk -v n="$messages" -v k="$campaigns" 'BEGIN { for (i = 0; i < n; i++) printf "c%d:{\"n\":%d}\n", i % k + 1, i }' |
  kcat -P -b "$PACER_KAFKA" -t messages -K: -X queue.buffering.max.messages=1000000
echo "produced $messages messages"

run_daemon() {
  "$bin/pacerd" --brokers "$PACER_KAFKA" --topic messages --postgres "$PACER_PG" --no-migrate \
    --sink http --http-url "http://127.0.0.1:$provider_port/send/{campaign}" --in-flight 200 \
    --max-unrecorded "$bound" --session-timeout-ms 6000 --commit-interval-ms 500 "$@" \
    >>"$PACER_RUN_DIR/pacerd.log" 2>&1 &
  daemon_pid=$!
}

sent_so_far() { pacer_psql -c "SELECT count(*) FROM deliveries"; }

for k in $(seq 1 "$kills"); do
  run_daemon
  # Kill once this run has made progress, at a random moment 1-4 s after that.
  before=$(sent_so_far)
  for _ in $(seq 1 300); do
    [ "$(sent_so_far)" -gt "$before" ] && break
    sleep 0.1
  done
  sleep "$((RANDOM % 4 + 1)).$((RANDOM % 10))"
  kill -9 "$daemon_pid"
  wait "$daemon_pid" 2>/dev/null || true
  daemon_pid=
  echo "kill $k: $(sent_so_far) ledger rows so far"
done

run_daemon --exit-when-idle-ms 3000 --summary "$PACER_RUN_DIR/summary.json"
wait "$daemon_pid"
daemon_pid=

report=$(curl -fsS "http://127.0.0.1:$provider_port/report")
requests=$(jq '."(all)".requests' <<<"$report")
distinct=$(jq '."(all)".distinct_keys' <<<"$report")
duplicates=$(jq '."(all)".duplicates' <<<"$report")
rows=$(pacer_psql -c "SELECT count(*) FROM deliveries")
distinct_rows=$(pacer_psql -c "SELECT count(DISTINCT message_id) FROM deliveries")
sent_rows=$(pacer_psql -c "SELECT count(*) FROM deliveries WHERE status = 'sent'")
parked=$(pacer_psql -c "SELECT count(*) FROM parked")
missing=$((messages - distinct))
limit=$((kills * bound))

echo
echo "provider: $requests requests, $distinct distinct idempotency keys, $duplicates duplicates"
echo "ledger:   $rows rows ($distinct_rows distinct message ids, $sent_rows sent), $parked still parked"
echo "missing:  $missing"
echo "duplicate sends: $duplicates (bound: $kills kills x $bound unrecorded = $limit)"

ok=1
[ "$missing" -eq 0 ] || { echo "FAIL: $missing messages never reached the provider"; ok=0; }
[ "$rows" -eq "$messages" ] && [ "$distinct_rows" -eq "$messages" ] ||
  { echo "FAIL: expected exactly one ledger row per message"; ok=0; }
[ "$sent_rows" -eq "$messages" ] || { echo "FAIL: not every row is 'sent'"; ok=0; }
[ "$duplicates" -le "$limit" ] || { echo "FAIL: more duplicates than the bound"; ok=0; }
[ "$ok" = 1 ] && echo "PASS"
[ "$ok" = 1 ]
