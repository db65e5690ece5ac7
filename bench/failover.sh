#!/usr/bin/env bash
# Failover between two SMSCs, timed (docs/routes.md): WORKERS pacerd workers
# (default 2, real Redis, PostgreSQL, the Kafka mock) send two campaigns, one
# per partition, whose provider is sms-a with failover to sms-b; each SMSC is
# a pacer-fake-smsc with a strict one-second quota of QUOTA segments (200),
# set up by the tests' own helper (tests/integration/smpp/two_smscs.sh).
# OUTAGE_AT_MS (10000) after its first submit_sm, sms-a drops every bind and
# refuses binds for OUTAGE_MS (30000). Every figure comes from the SMSCs'
# records and reports and the ledger:
# - from sms-a's failure to sms-b's first accepted message, and to the first
#   second in which sms-b accepted 90% of its quota ("full rate");
# - from the end of the outage to sms-a's first accepted message again;
# - the busiest second of each SMSC (never above QUOTA);
# - messages accepted with no ledger row naming that SMSC (sent twice);
# - with LIFETIME_S, the messages expired (never sent), and when.
#
#   bench/failover.sh
#   LIFETIME_S=3 ARRIVAL_PER_S=90 bench/failover.sh   (OTPs arriving while it runs, each living 3 s)
#
# Environment: MESSAGES (default 16000), WORKERS (2), QUOTA (200), OUTAGE_AT_MS, OUTAGE_MS,
# LIFETIME_S (the campaigns' default lifetime, pacerctl --ttl; default none),
# ARRIVAL_PER_S (each campaign's messages produced at this rate while the workers run;
# default: all produced before they start, a backlog),
# PACER_BENCH_PRESET (default: default, the preset the tests build), PACER_KEEP=1 keeps the run directory.
# With LIFETIME_S and ARRIVAL_PER_S it also writes failover-sim.yaml, the same
# scenario for pacer-sim (docs/tools.md "Expiry, outages and failover"), and
# prints what pacer-sim expires in it.
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
source "$(dirname "$0")/../scripts/services.sh"
cd "$PACER_ROOT"

messages=${MESSAGES:-16000}
workers=${WORKERS:-2}
quota=${QUOTA:-200}
outage_at=${OUTAGE_AT_MS:-10000}
outage=${OUTAGE_MS:-30000}
lifetime=${LIFETIME_S:-}
arrival=${ARRIVAL_PER_S:-}
preset=${PACER_BENCH_PRESET:-default}
pacer_install_packages "${PACER_PACKAGES[@]}" jq bc >/dev/null
echo "building the $preset preset..."
pacer_build "$preset" pacerd pacerctl pacer-fake-smsc pacer-kafka-mock pacer-sim >/dev/null
bin=build/$preset

PACER_RUN_DIR=$(mktemp -d /tmp/pacer-failover-XXXXXX)
pids=()
smsc_a=
smsc_b=
producers=()
cleanup() {
  local p
  for p in $smsc_a $smsc_b ${producers[@]+"${producers[@]}"}; do kill -9 "$p" 2>/dev/null || true; done
  pacer_bench_cleanup
}
trap cleanup EXIT
fail() {
  echo "$*" >&2
  exit 1
}
pacer_bench_services "$bin" --topic "messages:2"

# The SMSCs and pacerd's configuration as the failover tests have them.
smsc=$bin/pacer-fake-smsc
smscs_dir=$PACER_RUN_DIR
smscs_postgres=$PACER_PG
source tests/integration/smpp/two_smscs.sh
start_smsc a --outage-at-ms "$outage_at" --outage-ms "$outage"
start_smsc b

"$bin/pacerctl" provider create sms-a --rate "$quota" >/dev/null
"$bin/pacerctl" provider create sms-b --rate "$quota" >/dev/null
for c in otp1 otp2; do
  "$bin/pacerctl" campaign create "$c" --provider sms-a --failover sms-b ${lifetime:+--ttl "$lifetime"} >/dev/null
done
per=$((messages / 2))
total=$((per * 2))
# produce_campaign N: campaign otpN's messages on partition N-1 (at ARRIVAL_PER_S, if set).
produce_campaign() {
  "$bin/pacerctl" produce --brokers "$PACER_KAFKA" --topic messages --campaign "otp$1" --count "$per" \
    --partition $(($1 - 1)) --recipient-prefix "447$1" --id-prefix "otp$1-" --payload "your code is 12345$1" \
    ${arrival:+--rate "$arrival"} >/dev/null
}
if [ -z "$arrival" ]; then
  produce_campaign 1
  produce_campaign 2
fi

two_smscs_config pacer-failover a b "admin:" "  listen: 127.0.0.1:0"
echo "$total messages over 2 campaigns, $workers workers; sms-a and sms-b take $quota segments/s each;" \
  "sms-a fails $outage_at ms after its first submit_sm for $outage ms" \
  "${lifetime:+; lifetime $lifetime s}${arrival:+; $arrival msg/s per campaign arriving while it runs}"
for w in $(seq 1 "$workers"); do
  SMSC_PASSWORD=s3cret "$bin/pacerd" --config "$PACER_RUN_DIR/pacerd.yaml" >"$PACER_RUN_DIR/pacerd$w.out" \
    2>"$PACER_RUN_DIR/pacerd$w.log" &
  pids+=($!)
done
if [ -n "$arrival" ]; then
  # Arrivals start once every worker has its partitions: what arrived during
  # the group's join would be a backlog at the start that no sim scenario has.
  join_by=$(($(date +%s) + 60))
  for w in $(seq 1 "$workers"); do
    until grep -q "event=assigned" "$PACER_RUN_DIR/pacerd$w.log" 2>/dev/null; do
      [ "$(date +%s)" -lt "$join_by" ] || fail "pacerd $w got no partitions in 60 s"
      sleep 0.2
    done
  done
  produce_campaign 1 &
  producers+=($!)
  produce_campaign 2 &
  producers+=($!)
fi
rows() { pacer_psql -c "SELECT count(*) FROM deliveries"; }
deadline=$(($(date +%s) + total / quota + outage / 1000 + 180))
until [ "$(rows)" -ge "$total" ] || [ "$(date +%s)" -ge "$deadline" ]; do sleep 1; done
sleep 1
pacer_stop_workers --quiet || true
for p in ${producers[@]+"${producers[@]}"}; do wait "$p" 2>/dev/null || true; done
producers=()
for p in $smsc_a $smsc_b; do kill -TERM "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
smsc_a=
smsc_b=

fail_at=$(report a 'r.get("outage_started_ms", -1)')
[ "$fail_at" -ge 0 ] || fail "sms-a's outage never started"
shift_ms=$(smsc_clock_shift_ms a b)
# sms-b's accepted times on sms-a's clock, from sms-a's failure; the first second with 90% of the quota.
read -r b_first b_full < <(awk -F'\t' -v s="$shift_ms" -v f="$fail_at" -v q="$quota" '
  $6 == "ESME_ROK" { t[++n] = $1 + s - f }
  END { full = -1; j = 1
    for (i = 1; i <= n; i++) { while (t[i] - t[j] >= 1000) j++; if (full < 0 && i - j + 1 >= 0.9 * q) full = t[i] }
    printf "%.2f %.2f\n", t[1] / 1000, full / 1000 }' "$PACER_RUN_DIR/b.tsv")
a_back=$(awk -F'\t' -v e=$((fail_at + outage)) '$6 == "ESME_ROK" && $1 >= e { printf "%.2f\n", ($1 - e) / 1000; exit }' \
  "$PACER_RUN_DIR/a.tsv")
ledger() { pacer_psql -c "SELECT provider_message_id FROM deliveries WHERE status = 'sent' AND provider = 'sms-$1'" | sort; }
for s in a b; do
  accepted "$s" >"$PACER_RUN_DIR/ok.$s"
  ledger "$s" >"$PACER_RUN_DIR/ledger.$s"
done
read -r on_a on_b <<<"$(wc -l <"$PACER_RUN_DIR/ok.a") $(wc -l <"$PACER_RUN_DIR/ok.b")"
twice_a=$(comm -13 "$PACER_RUN_DIR/ledger.a" "$PACER_RUN_DIR/ok.a" | wc -l)
twice_b=$(comm -13 "$PACER_RUN_DIR/ledger.b" "$PACER_RUN_DIR/ok.b" | wc -l)
sent=$(pacer_psql -c "SELECT count(*) FROM deliveries WHERE status = 'sent'")
echo "ledger: $sent of $total sent; sms-a accepted $on_a, sms-b $on_b; accepted without a row naming them:" \
  "sms-a $twice_a, sms-b $twice_b"
echo "busiest second: sms-a $(report a 'a["max_segments_1s"]'), sms-b $(report b 'a["max_segments_1s"]')" \
  "(quota $quota)"
echo "from sms-a's failure: sms-b's first message after ${b_first} s, full rate (90% of $quota in 1 s) after ${b_full} s"
echo "from the end of the outage: sms-a's first message again after ${a_back:-never} s"
[ -n "$lifetime" ] || exit 0

# Expired rows, and when (seconds from sms-a's failure, on the system clock).
fail_unix_ms=$(($(report a 'r["started_unix_ms"]') + fail_at))
expired=$(pacer_psql -c "SELECT count(*) FROM deliveries WHERE status = 'expired'")
read -r in_outage first_s last_s <<<"$(pacer_psql -F' ' -c "SELECT count(*) FILTER (WHERE t >= 0 AND t < $outage / 1000.0), \
  coalesce(round(min(t), 2), 0), coalesce(round(max(t), 2), 0) FROM (SELECT extract(epoch FROM recorded_at) \
  - $fail_unix_ms / 1000.0 AS t FROM deliveries WHERE status = 'expired') e")"
echo "lifetime $lifetime s: expired $expired of $total (never sent); $in_outage of them recorded during the" \
  "outage; first ${first_s} s, last ${last_s} s from sms-a's failure"
pacer_psql -c "SELECT message_id, campaign, provider, attempts, round(extract(epoch FROM recorded_at) * 1000 - $fail_unix_ms), \
  reason FROM deliveries WHERE status = 'expired' ORDER BY recorded_at" >"$PACER_RUN_DIR/expired.txt"
[ -n "$arrival" ] || exit 0

# The same scenario in pacer-sim: time 0 is sms-a's first submit_sm (the
# arrivals start once the workers have joined, a moment before), sms-a is
# out for OUTAGE_MS from its failure. The sim switches at the outage's edges
# at once: its count is the least the outage can expire (docs/tools.md).
first_ms=$(awk -F'\t' '$6 == "ESME_ROK" { print $1; exit }' "$PACER_RUN_DIR/a.tsv")
read -r from_s to_s <<<"$(awk -v f="$fail_at" -v s="$first_ms" -v o="$outage" \
  'BEGIN { printf "%.3f %.3f\n", (f - s) / 1000, (f - s + o) / 1000 }')"
cat >"$PACER_RUN_DIR/failover-sim.yaml" <<YAML
duration_s: $((per / arrival + outage / 1000 + 30))
providers:
  - {id: sms-a, rate: $quota, outages: [{from_s: $from_s, to_s: $to_s}]}
  - {id: sms-b, rate: $quota}
campaigns:
  - {id: otp1, provider: [sms-a, sms-b], class: transactional, arrival_per_s: $arrival, messages: $per, ttl_s: $lifetime}
  - {id: otp2, provider: [sms-a, sms-b], class: transactional, arrival_per_s: $arrival, messages: $per, ttl_s: $lifetime}
YAML
"$bin/pacer-sim" --out "$PACER_RUN_DIR/sim.json" "$PACER_RUN_DIR/failover-sim.yaml"
echo "pacer-sim on the same scenario (sms-a out from $from_s s to $to_s s): expired" \
  "$(jq '[.campaigns[].expired] | add' "$PACER_RUN_DIR/sim.json") of $total;" \
  "carried by sms-a $(jq '[.campaigns[].by_provider["sms-a"] // 0] | add' "$PACER_RUN_DIR/sim.json")," \
  "sms-b $(jq '[.campaigns[].by_provider["sms-b"] // 0] | add' "$PACER_RUN_DIR/sim.json")"
[ -z "${PACER_KEEP:-}" ] || cat "$PACER_RUN_DIR/failover-sim.yaml"
exit 0
