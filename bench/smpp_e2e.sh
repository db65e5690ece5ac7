#!/usr/bin/env bash
# SMS over SMPP end to end: 4 pacerd workers (sink kind smpp, real Redis,
# real PostgreSQL, the Kafka mock) against pacer-fake-smsc with a strict
# one-second quota of 400 segments (no burst; ESME_RTHROTTLED above it),
# 20,000 messages mixing 1-, 2- and 3-segment GSM 03.38 and UCS-2 texts,
# receipts after 500 ms (90% delivered, 10% undelivered). Every figure comes
# from the SMSC's own record and report, and the ledger.
#
#   bench/smpp_e2e.sh strict   the run above
#   bench/smpp_e2e.sh kill     the same, one worker SIGKILLed a third of the way through
#   bench/smpp_e2e.sh noisy    the SMSC also answers 10% of submits ESME_RTHROTTLED and 5%
#                              ESME_RSYSERR at random, whatever the rate (it takes 342/s)
#   bench/smpp_e2e.sh over     the provider configured at 500/s against the SMSC's 400
#   bench/smpp_e2e.sh outage   7 s in, the SMSC drops every bind and refuses binds for 3 s
#   bench/smpp_e2e.sh latency  the SMSC answers each submit_sm 100 ms late (LATENCY_MS),
#                              pacerd's default window and binds
#   bench/smpp_e2e.sh all      strict and kill
#
# Environment: MESSAGES (default 20000), WORKERS (4), PACER_KEEP=1 keeps the run directory,
# PACER_BENCH_PRESET (default release) the CMake preset whose binaries run, PACER_PACERD another
# build's pacerd to run instead of this one's (an A/B against the same fakes and script),
# PACERD_ARGS more pacerd flags for every worker (split on spaces).
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
source "$(dirname "$0")/../scripts/services.sh"
cd "$PACER_ROOT"

mode=${1:-strict}
if [ "$mode" = all ]; then
  for m in strict kill; do "$0" "$m" || exit 1; echo; done
  exit 0
fi
case "$mode" in strict | kill | noisy | over | outage | latency) ;;
  *) echo "usage: $0 strict|kill|noisy|over|outage|latency|all" >&2; exit 2 ;;
esac
quota=400
provider_rate=$quota
smsc_extra=()
case "$mode" in
  noisy) smsc_extra=(--throttle-rate 0.10 --transient-rate 0.05) ;;
  over) provider_rate=500 ;;
  outage) smsc_extra=(--outage-at-ms 7000 --outage-ms 3000) ;;
  latency) smsc_extra=(--response-delay-ms "${LATENCY_MS:-100}") ;;
esac
# What the SMSC takes at most per second: its quota, less what it refuses at random.
would_accept=$quota
[ "$mode" = noisy ] && would_accept=$(echo "$quota * 0.90 * 0.95" | bc -l)

pacer_install_packages "${PACER_PACKAGES[@]}" jq bc >/dev/null
preset=${PACER_BENCH_PRESET:-release}
echo "building the $preset preset..."
pacer_build "$preset" >/dev/null
bin=build/$preset

PACER_RUN_DIR=$(mktemp -d /tmp/pacer-smpp-XXXXXX)
pids=()
trap pacer_bench_cleanup EXIT

pacer_bench_services "$bin" --topic "messages:8"

"$bin/pacer-fake-smsc" --account "pacer:secret:$quota" --port-file "$PACER_RUN_DIR/smsc.port" \
  --receipt-delay-ms 500 --receipt-mix delivered=9,undelivered=1 --record "$PACER_RUN_DIR/smsc.tsv" \
  --report "$PACER_RUN_DIR/smsc.json" "${smsc_extra[@]}" >"$PACER_RUN_DIR/smsc.log" 2>&1 &
PACER_PROVIDER_PID=$!  # the SMSC: pacer_bench_cleanup kills it
for _ in $(seq 1 100); do [ -s "$PACER_RUN_DIR/smsc.port" ] && break; sleep 0.1; done
smsc_port=$(cat "$PACER_RUN_DIR/smsc.port")

# pacerctl's defaults for every burst (400/s -> 5, 300/s -> 4): nothing hand-tuned.
"$bin/pacerctl" provider create sms --rate "$provider_rate" >/dev/null
"$bin/pacerctl" campaign create alpha --rate 300 --provider sms >/dev/null
"$bin/pacerctl" campaign create beta --rate 300 --provider sms >/dev/null

# Six kinds of text, each with its own recipient prefix, so that the SMSC's
# record (destination, n/m) tells every message and segment apart.
gsm() { head -c "$1" </dev/zero | tr '\0' 'a'; }
ucs() { python3 -c "print('д' * $1, end='')"; }
messages=${MESSAGES:-20000}
per=$((messages / 6))
produce() { # campaign recipient-prefix text
  "$bin/pacerctl" produce --brokers "$PACER_KAFKA" --topic messages --campaign "$1" --count "$per" \
    --recipient-prefix "$2" --payload "$3" --id-prefix "$2-" >/dev/null
}
produce alpha 4911 "$(gsm 120)"  # GSM, 1 segment
produce beta 4912 "$(gsm 250)"   # GSM, 2 segments
produce alpha 4913 "$(gsm 400)"  # GSM, 3 segments
produce beta 4921 "$(ucs 60)"    # UCS-2, 1 segment
produce alpha 4922 "$(ucs 120)"  # UCS-2, 2 segments
produce beta 4923 "$(ucs 190)"   # UCS-2, 3 segments
total=$((per * 6))
segments=$((per * 12))
workers=${WORKERS:-4}
window_flag=(--smpp-window 10)
[ "$mode" = latency ] && window_flag=()  # pacerd's defaults
echo "$mode: $total messages ($segments segments) over 2 campaigns at 300 segments/s, provider at $provider_rate/s," \
  "SMSC quota $quota/s ${smsc_extra[*]}, $workers workers, 1 bind each, window ${window_flag[1]:-default}"

start_worker() {
  PACER_SMPP_PASSWORD=secret "${PACER_PACERD:-$bin/pacerd}" --brokers "$PACER_KAFKA" --topic messages --postgres "$PACER_PG" \
    --no-migrate --redis "$PACER_REDIS" --live-workers "$workers" --refresh-ms 500 \
    --sink smpp --smpp-port "$smsc_port" --smpp-system-id pacer "${window_flag[@]}" \
    --session-timeout-ms 6000 --summary "$PACER_RUN_DIR/summary$1.json" --admin-listen 127.0.0.1:0 \
    ${PACERD_ARGS:-} >"$PACER_RUN_DIR/pacerd$1.log" 2>&1 &  # PACERD_ARGS: split on spaces
  pids+=($!)
}
for w in $(seq 1 "$workers"); do start_worker "$w"; done
rows() { pacer_psql -c "SELECT count(*) FROM deliveries"; }
if [ "$mode" = kill ]; then
  until [ "$(rows)" -ge $((total / 3)) ]; do sleep 0.2; done
  kill -9 "${pids[0]}"
  echo "worker 1 SIGKILLed at $(rows) ledger rows; the others take its partitions"
fi
deadline=$(($(date +%s) + segments / 100 + 180))
until [ "$(rows)" -ge "$total" ] || [ "$(date +%s)" -ge "$deadline" ]; do sleep 1; done
# Receipts come 500 ms after each accept: wait for the last of them.
receipts() { pacer_psql -c "SELECT count(*) FROM delivery_receipts WHERE receipt_status IS NOT NULL"; }
until [ "$(receipts)" -ge "$total" ] || [ "$(date +%s)" -ge $((deadline + 30)) ]; do sleep 1; done
sleep 2
pacer_stop_workers --quiet || true
pacer_stop_provider

# smsc.tsv: ms, account, message id, destination, n/m, status, reference, validity (one line per submit_sm).
read -r submits accepted throttled dup_segments messages_whole peak_sub peak_acc first_ok last_ok after_acc < <(awk -F'\t' '
  { t[NR] = $1; n = NR
    if ($6 == "ESME_ROK") { acc++; a[acc] = $1; k = $4 " " $5; if (seen[k]++) dup++
        split($5, nm, "/"); got[$4]++; need[$4] = nm[2]; if (first == "") first = $1; last = $1 }
    else if ($6 == "ESME_RTHROTTLED") thr++ }
  END {
    for (d in got) if (got[d] >= need[d]) whole++
    j = 1; best = 0
    for (i = 1; i <= n; i++) { while (t[i] - t[j] >= 1000) j++; if (i - j + 1 > best) best = i - j + 1 }
    j = 1; besta = 0
    for (i = 1; i <= acc; i++) { while (a[i] - a[j] >= 1000) j++; if (i - j + 1 > besta) besta = i - j + 1 }
    from = first + 5000
    for (i = 1; i <= acc; i++) if (a[i] >= from) aa++
    printf "%d %d %d %d %d %d %d %d %d %d\n", n, acc, thr + 0, dup + 0, whole + 0, best, besta, first, last, aa + 0
  }' "$PACER_RUN_DIR/smsc.tsv")
span=$(echo "($last_ok - $first_ok - 5000) / 1000" | bc -l)
read -r r_delivered r_undelivered r_acked < <(jq -r '.accounts.pacer | "\(.receipts_sent.delivered) \(.receipts_sent.undelivered) \(.receipts_acked)"' "$PACER_RUN_DIR/smsc.json")
l_sent=$(pacer_psql -c "SELECT count(*) FROM deliveries WHERE status = 'sent'")
l_other=$(pacer_psql -c "SELECT count(*) FROM deliveries WHERE status <> 'sent'")
l_delivered=$(pacer_psql -c "SELECT count(*) FROM delivery_receipts WHERE receipt_status = 'delivered'")
l_undelivered=$(pacer_psql -c "SELECT count(*) FROM delivery_receipts WHERE receipt_status = 'undelivered'")
l_receipts=$(pacer_psql -c "SELECT count(*) FROM receipts")
unmatched=$(pacer_psql -c "SELECT count(*) FROM receipts r WHERE NOT EXISTS (SELECT 1 FROM deliveries d
  WHERE d.provider_message_id = r.provider_message_id)")
resumed=$(grep -ho 'segments_resumed=[0-9]*' "$PACER_RUN_DIR"/pacerd*.log | cut -d= -f2 | paste -sd+ | bc 2>/dev/null || echo "?")

printf 'SMSC: %d submit_sm, %d segments accepted, %d throttled; %d segments accepted twice\n' \
  "$submits" "$accepted" "$throttled" "$dup_segments"
printf 'SMSC: %d of %d messages complete (every segment accepted)\n' "$messages_whole" "$total"
printf 'busiest 1 s window at the SMSC: %d submit_sm, %d accepted (quota %d, pacer burst 5)\n' "$peak_sub" "$peak_acc" "$quota"
printf 'after the first 5 s (%.1f s): %.1f segments/s accepted = %.1f%% of the quota\n' "$span" \
  "$(echo "$after_acc / $span" | bc -l)" "$(echo "$after_acc / $span / $quota * 100" | bc -l)"
printf 'ledger: %d sent, %d other; receipts %d delivered + %d undelivered (SMSC sent %d + %d, %d acked); %d receipt rows, %d for no row\n' \
  "$l_sent" "$l_other" "$l_delivered" "$l_undelivered" "$r_delivered" "$r_undelivered" "$r_acked" "$l_receipts" "$unmatched"

# A provider's bad day, from the SMSC's record: accepted and throttled after
# the first 10 s; after an outage, the busiest second of attempts once binds
# are taken again and how long until a second holds 90% of the quota.
outage_end=$(jq -r 'if .outage_started_ms then .outage_started_ms + '"${OUTAGE_MS:-3000}"' else -1 end' "$PACER_RUN_DIR/smsc.json")
read -r late_acc late_thr late_span out_peak recover_s < <(awk -F'\t' -v first="$first_ok" -v last="$last_ok" \
  -v oe="$outage_end" -v q="$quota" '
  { t[NR] = $1; ok[NR] = ($6 == "ESME_ROK"); n = NR
    if ($1 >= first + 10000 && $1 <= last) { if ($6 == "ESME_ROK") acc++; else if ($6 == "ESME_RTHROTTLED") thr++ } }
  END {
    peak = 0; rec = -1
    if (oe >= 0) {
      j = 1; a = 0
      for (i = 1; i <= n; i++) {
        if (t[i] < oe) { j = i + 1; continue }
        a += ok[i]
        while (t[i] - t[j] >= 1000) { a -= ok[j]; j++ }
        if (i - j + 1 > peak) peak = i - j + 1
        if (rec < 0 && t[i] - oe >= 1000 && a >= 0.9 * q) rec = (t[i] - oe) / 1000
      }
    }
    printf "%d %d %.3f %d %.1f\n", acc, thr, (last - first - 10000) / 1000, peak, rec
  }' "$PACER_RUN_DIR/smsc.tsv")
if [ "$mode" != strict ] && [ "$mode" != kill ]; then
  printf 'after the first 10 s (%.1f s): %.1f segments/s accepted = %.1f%% of the %.0f/s the SMSC takes; %.1f throttles/min\n' \
    "$late_span" "$(echo "$late_acc / $late_span" | bc -l)" "$(echo "$late_acc / $late_span / $would_accept * 100" | bc -l)" \
    "$would_accept" "$(echo "$late_thr / $late_span * 60" | bc -l)"
  judged=$(cat "$PACER_RUN_DIR"/pacerd*.log | grep -c 'event=throttle_judged' || true)
  echo "throttle judge verdicts (all workers): $judged; the first and the last:"
  grep -h 'event=throttle_judged' "$PACER_RUN_DIR"/pacerd*.log | sort | sed -n '1p;$p' | cut -c1-160 || true
fi
if [ "$mode" = outage ]; then
  printf 'after the outage (binds refused until %d ms): busiest 1 s of submit_sm %d (quota %d); %s s to a second at 90%% of the quota\n' \
    "$outage_end" "$out_peak" "$quota" "$recover_s"
fi

ok=1
check() { if ! eval "$1"; then echo "FAIL: $2"; ok=0; fi; }
check '[ "$peak_acc" -le "$quota" ]' "the SMSC accepted more than its quota in 1 s"
if [ "$mode" = noisy ]; then
  # Random ESME_RSYSERR: a message may fail its 5 attempts; then it is a failed row with the reason.
  check '[ "$messages_whole" -ge "$l_sent" ]' "messages in the ledger as sent but incomplete at the SMSC"
  check '[ $((l_sent + l_other)) -eq "$total" ]' "messages without a ledger row"
  pacer_psql -c "SELECT reason FROM deliveries WHERE status <> 'sent' LIMIT 3"
else
  check '[ "$messages_whole" -eq "$total" ]' "messages incomplete at the SMSC"
  check '[ "$l_sent" -eq "$total" ] && [ "$l_other" -eq 0 ]' "the ledger does not hold every message as sent"
fi
check '[ "$l_delivered" -eq "$r_delivered" ] && [ "$l_undelivered" -eq "$r_undelivered" ]' "receipts in the ledger differ from the SMSC's"
case "$mode" in
  strict | kill) check '[ "$peak_sub" -le $((quota + 5)) ]' "a 1 s window above the quota + burst" ;;
  noisy) check '[ "$(echo "$late_acc / $late_span >= 0.8 * $would_accept" | bc -l)" = 1 ]' "under 80% of what the SMSC takes" ;;
  over)
    check '[ "$(echo "$late_acc / $late_span >= 0.9 * $quota" | bc -l)" = 1 ]' "under 90% of the real quota"
    check '[ "$(echo "$late_thr / $late_span * 60 <= 5" | bc -l)" = 1 ]' "more than 5 throttles a minute after the first 10 s" ;;
  outage)
    check '[ "$out_peak" -le $((quota + 5)) ]' "a second after the outage above the quota + burst"
    check '[ "$(echo "$recover_s >= 0 && $recover_s <= 5" | bc)" = 1 ]' "more than 5 s to 90% of the quota after the outage" ;;
esac
if [ "$mode" = strict ]; then
  check '[ "$dup_segments" -eq 0 ]' "segments accepted twice"
  check '[ "$(echo "$after_acc / $span >= 0.95 * $quota" | bc -l)" = 1 ]' "under 95% of the quota used"
elif [ "$mode" != kill ]; then
  echo "segments accepted twice: $dup_segments"
else
  # Sent but not yet in the ledger when killed: at most one ledger flush of one
  # worker plus its window (scheduler.max_unrecorded bounds it in any case).
  echo "duplicates after the kill: $dup_segments segments (bound: scheduler.max_unrecorded, 10000)"
  check '[ "$dup_segments" -le 10000 ]' "duplicates above the unrecorded bound"
fi
[ "$ok" = 1 ] && echo "PASS"
[ "$ok" = 1 ]
