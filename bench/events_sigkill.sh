#!/usr/bin/env bash
# Outcome events across a SIGKILL, with receipts: 4 pacerd workers (sink kind
# smpp, events on, each with its own events.worker_id; real Redis, real
# PostgreSQL, the Kafka mock) send MESSAGES texts (1-3 segments, GSM 03.38
# and UCS-2) to pacer-fake-smsc (a strict 2,000/s window, receipts 500 ms
# after each accept: 90% delivered, 10% undelivered). A third of the way
# through, worker 1 is SIGKILLed and started again under the same
# events.worker_id; the others take its partitions meanwhile. When every
# message has its ledger row and its receipt, the workers stop. Then, on the
# events topic (scripts/check-events):
#   - every deliveries row has its outcome event, every receipts row its
#     receipt event (matched by message id, provider message id and status);
#   - events without a ledger row: 0; a message or receipt with two distinct
#     events: 0;
#   - events published twice (the same event_id): at most what was in flight
#     at the kill (events.in_flight x events.batch = 4 x 1,000);
# and from the SMSC's own record: every message complete, its receipts as
# many as the ledger's, never more than 2,000 accepted in any 1 s.
#
#   bench/events_sigkill.sh [MESSAGES]   (default 50000; about 2 minutes)
#
# Environment: PACER_KEEP=1 keeps the run directory, PACER_BENCH_PRESET (default release),
# PACER_PACERD another build's pacerd, SEED (the kill's moment).
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
source "$(dirname "$0")/../scripts/services.sh"
cd "$PACER_ROOT"

messages=${1:-50000}
seed=${SEED:-$RANDOM}
RANDOM=$seed
quota=2000
workers=4
campaigns=20
in_flight_bound=4000  # events.in_flight (4) x events.batch (1000): what a kill may publish twice

pacer_install_packages "${PACER_PACKAGES[@]}" jq >/dev/null
preset=${PACER_BENCH_PRESET:-release}
echo "building the $preset preset..."
pacer_build "$preset" >/dev/null
bin=build/$preset

PACER_RUN_DIR=$(mktemp -d /tmp/pacer-events-XXXXXX)
pids=()
trap pacer_bench_cleanup EXIT

# Events are keyed by campaign: 20 campaigns over 32 partitions keep each
# partition far below the mock's 5 MiB (it drops older records above it).
pacer_bench_services "$bin" --topic "messages:8" --topic "outcomes:32"

"$bin/pacer-fake-smsc" --account "pacer:secret:$quota" --port-file "$PACER_RUN_DIR/smsc.port" \
  --receipt-delay-ms 500 --receipt-mix delivered=9,undelivered=1 --record "$PACER_RUN_DIR/smsc.tsv" \
  --report "$PACER_RUN_DIR/smsc.json" >"$PACER_RUN_DIR/smsc.log" 2>&1 &
PACER_PROVIDER_PID=$!  # the SMSC: pacer_bench_cleanup kills it
for _ in $(seq 1 100); do [ -s "$PACER_RUN_DIR/smsc.port" ] && break; sleep 0.1; done
smsc_port=$(cat "$PACER_RUN_DIR/smsc.port")

"$bin/pacerctl" provider create sms --rate "$quota" >/dev/null
# Six kinds of text (1, 2 and 3 segments, GSM and UCS-2), one per campaign in turn.
gsm() { head -c "$1" </dev/zero | tr '\0' 'a'; }
ucs() { python3 -c "print('д' * $1, end='')"; }
texts=("$(gsm 120)" "$(gsm 250)" "$(gsm 400)" "$(ucs 60)" "$(ucs 120)" "$(ucs 190)")
per=$((messages / campaigns))
total=$((per * campaigns))
for c in $(seq 1 "$campaigns"); do
  "$bin/pacerctl" campaign create "c$c" --rate $((quota / campaigns)) --provider sms >/dev/null
  "$bin/pacerctl" produce --brokers "$PACER_KAFKA" --topic messages --campaign "c$c" --count "$per" \
    --recipient-prefix "49$((100 + c))" --payload "${texts[$((c % 6))]}" --id-prefix "c$c-" >/dev/null
done
echo "$total messages over $campaigns campaigns at $((quota / campaigns)) segments/s, SMSC quota $quota/s," \
  "$workers workers with events on, seed $seed"

start_worker() {
  PACER_SMPP_PASSWORD=secret "${PACER_PACERD:-$bin/pacerd}" --brokers "$PACER_KAFKA" --topic messages --postgres "$PACER_PG" \
    --no-migrate --redis "$PACER_REDIS" --live-workers "$workers" --refresh-ms 500 \
    --sink smpp --smpp-port "$smsc_port" --smpp-system-id pacer --smpp-window 10 \
    --session-timeout-ms 6000 --admin-listen off --events-topic outcomes --events-worker-id "w$1" \
    >>"$PACER_RUN_DIR/pacerd$1.log" 2>&1 &
  pids[$1]=$!
}
for w in $(seq 1 "$workers"); do start_worker "$w"; done
rows() { pacer_psql -c "SELECT count(*) FROM deliveries"; }
receipts() { pacer_psql -c "SELECT count(*) FROM delivery_receipts WHERE receipt_status IS NOT NULL"; }
until [ "$(rows)" -ge $((total / 3)) ]; do sleep 0.2; done
sleep "0.$((RANDOM % 10))"
kill -9 "${pids[1]}"
wait "${pids[1]}" 2>/dev/null || true
left=$(pacer_psql -c "SELECT count(*) FROM outbox o WHERE worker = 'w1' AND id > coalesce((SELECT published_up_to
  FROM outbox_cursor c WHERE c.worker = o.worker), 0)")
echo "worker 1 SIGKILLed at $(rows) ledger rows, $(receipts) receipts; its outbox rows not yet published: $left"
start_worker 1
deadline=$(($(date +%s) + total * 3 / quota + 180))
until [ "$(rows)" -ge "$total" ] && [ "$(receipts)" -ge "$total" ] || [ "$(date +%s)" -ge "$deadline" ]; do sleep 1; done
sleep 2
for w in $(seq 1 "$workers"); do kill -TERM "${pids[$w]}" 2>/dev/null || true; done
for w in $(seq 1 "$workers"); do wait "${pids[$w]}" 2>/dev/null || true; done
pids=()
pacer_stop_provider
started=$(grep -ho 'event=outcome_events_started.*left_from_before=[0-9]*' "$PACER_RUN_DIR/pacerd1.log" | tail -1 |
  grep -o 'left_from_before=[0-9]*' || echo "none")
echo "worker 1 started again: $started"

kcat -C -b "$PACER_KAFKA" -t outcomes -e -q -f '%k %s\n' >"$PACER_RUN_DIR/events.txt"
pacer_psql -c "SELECT message_id, status, campaign, coalesce(provider_message_id, '') FROM deliveries" \
  >"$PACER_RUN_DIR/deliveries.txt"
pacer_psql -c "SELECT provider_message_id, status FROM receipts" >"$PACER_RUN_DIR/receipts.txt"
above=$(pacer_psql -c "SELECT count(*) FROM outbox o WHERE id > coalesce((SELECT published_up_to FROM outbox_cursor c
  WHERE c.worker = o.worker), 0)")

# The SMSC's record: ms, account, message id, destination, n/m, status, ... (one line per submit_sm).
read -r accepted whole twice peak_acc < <(awk -F'\t' '
  $6 == "ESME_ROK" { acc++; a[acc] = $1; split($5, nm, "/"); got[$4]++; need[$4] = nm[2]; if (seen[$4 " " $5]++) dup++ }
  END { for (d in got) if (got[d] >= need[d]) whole++
        j = 1; best = 0
        for (i = 1; i <= acc; i++) { while (a[i] - a[j] >= 1000) j++; if (i - j + 1 > best) best = i - j + 1 }
        printf "%d %d %d %d\n", acc, whole, dup + 0, best }' "$PACER_RUN_DIR/smsc.tsv")
read -r r_delivered r_undelivered < <(jq -r '.accounts.pacer | "\(.receipts_sent.delivered) \(.receipts_sent.undelivered)"' \
  "$PACER_RUN_DIR/smsc.json")
# Every receipt the SMSC sent is a receipts row; a message sent twice around the kill (its
# ledger row has one of its two ids) leaves one for an id no row has.
l_delivered=$(pacer_psql -c "SELECT count(*) FROM receipts WHERE status = 'delivered'")
l_undelivered=$(pacer_psql -c "SELECT count(*) FROM receipts WHERE status = 'undelivered'")
l_unmatched=$(pacer_psql -c "SELECT count(*) FROM receipts r WHERE NOT EXISTS (SELECT 1 FROM deliveries d
  WHERE d.provider_message_id = r.provider_message_id)")
printf 'SMSC: %d segments accepted (%d twice), %d of %d messages complete, busiest 1 s %d accepted (quota %d); receipts sent %d + %d\n' \
  "$accepted" "$twice" "$whole" "$total" "$peak_acc" "$quota" "$r_delivered" "$r_undelivered"
printf 'ledger: %d rows, %d with their receipt; receipt rows %d delivered + %d undelivered (%d for no row: sent twice)\n' \
  "$(rows)" "$(receipts)" "$l_delivered" "$l_undelivered" "$l_unmatched"
printf 'outbox rows left unpublished after the stops: %d\n' "$above"

ok=1
check() { if ! eval "$1"; then echo "FAIL: $2"; ok=0; fi; }
scripts/check-events "$PACER_RUN_DIR/events.txt" "$PACER_RUN_DIR/deliveries.txt" --receipts "$PACER_RUN_DIR/receipts.txt" \
  --expected "$total" --max-duplicates "$in_flight_bound" || { echo "FAIL: the events do not match the ledger"; ok=0; }
check '[ "$whole" -eq "$total" ]' "messages incomplete at the SMSC"
check '[ "$(receipts)" -eq "$total" ]' "ledger rows without their receipt"
check '[ "$peak_acc" -le "$quota" ]' "the SMSC accepted more than its quota in 1 s"
check '[ "$l_delivered" -eq "$r_delivered" ] && [ "$l_undelivered" -eq "$r_undelivered" ]' \
  "receipts in the ledger differ from the SMSC's"
check '[ "$above" -eq 0 ]' "outbox rows left unpublished after the clean stops"
check '[ "$started" != none ]' "worker 1 did not log event=outcome_events_started"
[ "$ok" = 1 ] && echo "PASS"
[ "$ok" = 1 ]
