#!/usr/bin/env bash
# Priority classes end to end (issue 16): 4 pacerd workers share a provider
# whose strict one-second window accepts 400 requests (pacer-fake-provider
# --window 400: no burst allowance, 429 above it). A `bulk` campaign has a
# backlog of 100,000 messages; a `transactional` campaign gets 50 messages/s
# (pacerctl produce, paced, on four partitions) for 60 s. Real Redis, real
# PostgreSQL, the Kafka mock. Every figure comes from the provider's own
# record and Kafka's own timestamps:
#   - a transactional message's wait is from its Kafka timestamp (when
#     pacerctl produced it) to the provider's first 200 for its message id;
#   - the provider is "used" by the requests it accepted while transactional
#     messages were arriving, against 400/s;
#   - a window "over" is a request the provider answered 429.
# pacer's provider is configured at 396/s with burst 4: for any window w pacer
# sends at most 396 w + 4, so at most 400 in any second, the provider's limit.
#
#   bench/priority_e2e.sh                 the run (about 3 minutes with the build done)
#   BULK=100000 TXN_S=60 WORKERS=4 PACER_KEEP=1 bench/priority_e2e.sh
#   PRIORITY=off bench/priority_e2e.sh    the same with one class for both (the baseline)
#   FETCH_WAIT_MS=10 bench/priority_e2e.sh  pacerd's consumers with fetch.wait.max.ms=10: librdkafka's
#                                           mock broker answers a fetch only when that wait runs out
#                                           (500 ms by default) even when data is there, which a real
#                                           broker does not (it answers at fetch.min.bytes, 1 byte)
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
source "$(dirname "$0")/../scripts/services.sh"
cd "$PACER_ROOT"

window=400
rate=396
burst=4
bulk=${BULK:-100000}
txn_s=${TXN_S:-60}
workers=${WORKERS:-4}
txn_per_s=50
txn_partitions=(0 2 4 6)

pacer_install_packages "${PACER_PACKAGES[@]}" jq bc kcat >/dev/null
echo "building the release preset..."
pacer_build release pacerd pacerctl pacer-kafka-mock pacer-fake-provider >/dev/null
bin=build/release

PACER_RUN_DIR=$(mktemp -d /tmp/pacer-priority-XXXXXX)
pids=()
trap pacer_bench_cleanup EXIT

pacer_bench_services "$bin" --topic "messages:8"

pacer_start_fake_provider "$bin/pacer-fake-provider" "$PACER_RUN_DIR" --window "$window" --retry-after 1 \
  --record "$PACER_RUN_DIR/requests.txt"
pacer_fake_provider_epoch "$PACER_RUN_DIR"

bulk_class=bulk
txn_class=transactional
[ "${PRIORITY:-on}" = off ] && txn_class=bulk
"$bin/pacerctl" provider create gateway --rate "$rate" --burst "$burst" >/dev/null
"$bin/pacerctl" campaign create bulk --provider gateway --class "$bulk_class" >/dev/null
"$bin/pacerctl" campaign create txn --provider gateway --class "$txn_class" >/dev/null

# The bulk backlog, spread over the 8 partitions so every worker has some.
per=$((bulk / 8))
for p in $(seq 0 7); do
  awk -v n="$per" -v p="$p" 'BEGIN { for (i = 0; i < n; i++) printf "bulk:{\"p\":%d,\"n\":%d}\n", p, i }' |
    kcat -P -b "$PACER_KAFKA" -t messages -p "$p" -K: -X queue.buffering.max.messages=1000000
done
echo "bulk: $((per * 8)) messages; transactional: $txn_per_s/s for $txn_s s; provider window $window/s" \
  "(pacer: $rate/s, burst $burst); $workers workers; classes: bulk=$bulk_class txn=$txn_class;" \
  "fetch.wait.max.ms ${FETCH_WAIT_MS:-default}"

for w in $(seq 1 "$workers"); do
  "$bin/pacerd" --brokers "$PACER_KAFKA" --topic messages --postgres "$PACER_PG" --no-migrate \
    --redis "$PACER_REDIS" --live-workers "$workers" --refresh-ms 500 \
    --sink http --http-url "http://127.0.0.1:$PACER_PROVIDER_PORT/send/{campaign}" --in-flight 100 \
    --session-timeout-ms 6000 --summary "$PACER_RUN_DIR/summary$w.json" --admin-listen 127.0.0.1:0 \
    ${FETCH_WAIT_MS:+--kafka fetch.wait.max.ms=$FETCH_WAIT_MS} >"$PACER_RUN_DIR/pacerd$w.log" 2>&1 &
  pids+=($!)
done
# Bulk flowing on every partition (all workers assigned) before transactional starts.
until [ "$(pacer_psql -c "SELECT count(*) FROM deliveries")" -gt 4000 ]; do sleep 0.5; done

txn_count=$((txn_per_s * txn_s / ${#txn_partitions[@]}))
prod_pids=()
for p in "${txn_partitions[@]}"; do
  "$bin/pacerctl" produce --brokers "$PACER_KAFKA" --topic messages --campaign txn --partition "$p" \
    --count "$txn_count" --rate "$(echo "$txn_per_s / ${#txn_partitions[@]}" | bc -l)" --id-prefix "txn-$p-" \
    --payload '{"otp":"123456"}' >"$PACER_RUN_DIR/produce$p.log" 2>&1 &
  prod_pids+=($!)
done
for p in "${prod_pids[@]}"; do wait "$p"; done
txn_total=$((txn_count * ${#txn_partitions[@]}))
deadline=$(($(date +%s) + 60))
until [ "$(pacer_psql -c "SELECT count(*) FROM deliveries WHERE campaign = 'txn'")" -ge "$txn_total" ] ||
  [ "$(date +%s)" -ge "$deadline" ]; do sleep 0.5; done
pacer_stop_workers || true
pacer_stop_provider

# Kafka's timestamps of the transactional messages: "<ms> <message id>".
kcat -C -b "$PACER_KAFKA" -t messages -o beginning -e -q -f '%k %T %h\n' 2>/dev/null |
  awk '$1 == "txn" { n = split($3, h, ","); for (i = 1; i <= n; i++) if (h[i] ~ /^message-id=/) print $2, substr(h[i], 12) }' \
    >"$PACER_RUN_DIR/txn_produced.txt"

# requests.txt: "<ms since the provider's epoch_ms> <campaign> <idempotency key> <status>".
# Writes each transactional wait (ms) to waits.txt and the provider's figures to provider.txt.
awk -v epoch="$PACER_PROVIDER_EPOCH_MS" -v rate="$window" -v waits="$PACER_RUN_DIR/waits.txt" '
  FNR == NR { produced[$2] = $1; np++; if (first == "" || $1 < first) first = $1; if ($1 > last) last = $1; next }
  {
    t = epoch + $1; n++; times[n] = t
    if ($4 == 429) thr++
    if ($4 == 200) {
      acc++; at[acc] = t
      if ($2 == "txn" && !($3 in done)) { done[$3] = t; nw++; print t - produced[$3] > waits }
      if (seen[$3]++) dup++
    }
  }
  END {
    j = 1; best = 0; for (i = 1; i <= n; i++) { while (times[i] - times[j] >= 1000) j++; if (i - j + 1 > best) best = i - j + 1 }
    for (i = 1; i <= acc; i++) if (at[i] >= first && at[i] <= last) used++
    span = (last - first) / 1000
    missing = 0; for (id in produced) if (!(id in done)) missing++
    printf "%d %d %d %.3f %d %d %d %d %d %d\n", np, nw, missing, span, used, n, acc, dup + 0, thr + 0, best
  }' "$PACER_RUN_DIR/txn_produced.txt" "$PACER_RUN_DIR/requests.txt" >"$PACER_RUN_DIR/provider.txt"
read -r produced accepted missing span used requests acc_all dup thr busiest <"$PACER_RUN_DIR/provider.txt"
sort -n "$PACER_RUN_DIR/waits.txt" >"$PACER_RUN_DIR/waits.sorted"
pct() { awk -v q="$1" '{ w[NR] = $1 } END { i = int(NR * q) + 1; if (i > NR) i = NR; print w[i] + 0 }' "$PACER_RUN_DIR/waits.sorted"; }
p50=$(pct 0.5); p90=$(pct 0.9); p99=$(pct 0.99); max=$(pct 1)
used_pct=$(echo "$used / $span / $window * 100" | bc -l)
printf 'transactional: %d produced, %d accepted, %d never accepted\n' "$produced" "$accepted" "$missing"
printf "transactional wait (Kafka timestamp to the provider's 200), ms: p50 %.0f  p90 %.0f  p99 %.0f  max %.0f\n" \
  "$p50" "$p90" "$p99" "$max"
printf 'provider while transactional arrived (%.1f s): %d accepted = %.1f/s = %.1f%% of %d/s\n' "$span" "$used" \
  "$(echo "$used / $span" | bc -l)" "$used_pct" "$window"
printf 'provider: %d requests, %d accepted (%d twice), %d answered 429; busiest 1 s: %d requests\n' "$requests" \
  "$acc_all" "$dup" "$thr" "$busiest"
per_message=$(jq -s -r 'map(if .sent > 0 then .quota.batches / .sent else 0 end) | max' "$PACER_RUN_DIR"/summary*.json)
echo "Redis round trips per message sent: at most $per_message per worker"

ok=1
check() { if ! eval "$1"; then echo "FAIL: $2"; ok=0; fi; }
check '[ "$missing" -eq 0 ]' "$missing transactional messages never accepted"
check '[ "$dup" -eq 0 ]' "$dup messages accepted twice"
check '[ "$thr" -eq 0 ] && [ "$busiest" -le "$window" ]' "a one-second window over the provider's $window"
if [ "${PRIORITY:-on}" != off ]; then
  check '[ "$(echo "$p99 <= 1000" | bc)" = 1 ]' "transactional p99 wait above 1 s"
  check '[ "$(echo "$used_pct >= 95" | bc)" = 1 ]' "under 95% of the provider used"
fi
[ "$ok" = 1 ] && echo "PASS"
[ "$ok" = 1 ]
