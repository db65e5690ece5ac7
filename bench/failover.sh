#!/usr/bin/env bash
# Failover between two SMSCs, timed (docs/routes.md): WORKERS pacerd workers
# (default 2, real Redis, PostgreSQL, the Kafka mock) send two campaigns, one
# per partition, whose provider is sms-a with failover to sms-b; each SMSC is
# a pacer-fake-smsc with a strict one-second quota of QUOTA segments (200).
# OUTAGE_AT_MS (10000) after its first submit_sm, sms-a drops every bind and
# refuses binds for OUTAGE_MS (30000). Every figure comes from the SMSCs'
# records and reports and the ledger:
# - from sms-a's failure to sms-b's first accepted message, and to the first
#   second in which sms-b accepted 90% of its quota ("full rate");
# - from the end of the outage to sms-a's first accepted message again;
# - the busiest second of each SMSC (never above QUOTA);
# - messages accepted with no ledger row naming that SMSC (sent twice).
#
#   bench/failover.sh
#
# Environment: MESSAGES (default 16000), WORKERS (2), QUOTA (200), OUTAGE_AT_MS, OUTAGE_MS,
# PACER_BENCH_PRESET (default: default, the preset the tests build), PACER_KEEP=1 keeps the run directory.
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
source "$(dirname "$0")/../scripts/services.sh"
cd "$PACER_ROOT"

messages=${MESSAGES:-16000}
workers=${WORKERS:-2}
quota=${QUOTA:-200}
outage_at=${OUTAGE_AT_MS:-10000}
outage=${OUTAGE_MS:-30000}
preset=${PACER_BENCH_PRESET:-default}
pacer_install_packages "${PACER_PACKAGES[@]}" jq bc >/dev/null
echo "building the $preset preset..."
pacer_build "$preset" pacerd pacerctl pacer-fake-smsc pacer-kafka-mock >/dev/null
bin=build/$preset

PACER_RUN_DIR=$(mktemp -d /tmp/pacer-failover-XXXXXX)
pids=()
smscs=()
cleanup() {
  local p
  for p in ${smscs[@]+"${smscs[@]}"}; do kill -9 "$p" 2>/dev/null || true; done
  pacer_bench_cleanup
}
trap cleanup EXIT
pacer_bench_services "$bin" --topic "messages:2"

start_smsc() {  # NAME EXTRA...
  local name=$1
  shift
  "$bin/pacer-fake-smsc" --account "pacer:secret:$quota" --port-file "$PACER_RUN_DIR/$name.port" \
    --record "$PACER_RUN_DIR/$name.tsv" --report "$PACER_RUN_DIR/$name.json" "$@" >"$PACER_RUN_DIR/$name.log" 2>&1 &
  smscs+=($!)
  for _ in $(seq 1 100); do [ -s "$PACER_RUN_DIR/$name.port" ] && return 0; sleep 0.1; done
  echo "pacer-fake-smsc $name did not start" >&2
  return 1
}
start_smsc a --outage-at-ms "$outage_at" --outage-ms "$outage"
start_smsc b

"$bin/pacerctl" provider create sms-a --rate "$quota" >/dev/null
"$bin/pacerctl" provider create sms-b --rate "$quota" >/dev/null
for c in otp1 otp2; do "$bin/pacerctl" campaign create "$c" --provider sms-a --failover sms-b >/dev/null; done
per=$((messages / 2))
"$bin/pacerctl" produce --brokers "$PACER_KAFKA" --topic messages --campaign otp1 --count "$per" --partition 0 \
  --recipient-prefix 4471 --id-prefix otp1- --payload "your code is 123456" >/dev/null
"$bin/pacerctl" produce --brokers "$PACER_KAFKA" --topic messages --campaign otp2 --count "$per" --partition 1 \
  --recipient-prefix 4472 --id-prefix otp2- --payload "your code is 654321" >/dev/null
total=$((per * 2))

smpp_sink() {
  cat <<YAML
  sms-$1:
    sink:
      kind: smpp
      smpp:
        port: $(cat "$PACER_RUN_DIR/$1.port")
        system_id: pacer
        password_env: SMSC_PASSWORD
YAML
}
cat >"$PACER_RUN_DIR/pacerd.yaml" <<YAML
kafka:
  brokers: [$PACER_KAFKA]
  topics: [messages]
  session_timeout_ms: 6000
postgres:
  url: "$PACER_PG"
  migrate: false
redis:
  nodes: [$PACER_REDIS]
sink:
  kind: stdout
providers:
$(smpp_sink a)
$(smpp_sink b)
admin:
  listen: 127.0.0.1:0
YAML
echo "$total messages over 2 campaigns, $workers workers; sms-a and sms-b take $quota segments/s each;" \
  "sms-a fails $outage_at ms after its first submit_sm for $outage ms"
for w in $(seq 1 "$workers"); do
  SMSC_PASSWORD=secret "$bin/pacerd" --config "$PACER_RUN_DIR/pacerd.yaml" >"$PACER_RUN_DIR/pacerd$w.out" \
    2>"$PACER_RUN_DIR/pacerd$w.log" &
  pids+=($!)
done
rows() { pacer_psql -c "SELECT count(*) FROM deliveries"; }
deadline=$(($(date +%s) + total / quota + outage / 1000 + 180))
until [ "$(rows)" -ge "$total" ] || [ "$(date +%s)" -ge "$deadline" ]; do sleep 1; done
sleep 1
for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
pids=()
for p in "${smscs[@]}"; do kill -TERM "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
smscs=()

report() { jq -r "$2" "$PACER_RUN_DIR/$1.json"; }
fail_at=$(report a '.outage_started_ms // -1')
[ "$fail_at" -ge 0 ] || { echo "sms-a's outage never started" >&2; exit 1; }
shift_ms=$(($(report b '.started_unix_ms') - $(report a '.started_unix_ms')))
# sms-b's accepted times on sms-a's clock, from sms-a's failure; the first second with 90% of the quota.
read -r b_first b_full < <(awk -F'\t' -v s="$shift_ms" -v f="$fail_at" -v q="$quota" '
  $6 == "ESME_ROK" { t[++n] = $1 + s - f }
  END { full = -1; j = 1
    for (i = 1; i <= n; i++) { while (t[i] - t[j] >= 1000) j++; if (full < 0 && i - j + 1 >= 0.9 * q) full = t[i] }
    printf "%.2f %.2f\n", t[1] / 1000, full / 1000 }' "$PACER_RUN_DIR/b.tsv")
a_back=$(awk -F'\t' -v e=$((fail_at + outage)) '$6 == "ESME_ROK" && $1 >= e { printf "%.2f\n", ($1 - e) / 1000; exit }' \
  "$PACER_RUN_DIR/a.tsv")
ok() { awk -F'\t' '$6 == "ESME_ROK" { print $3 }' "$PACER_RUN_DIR/$1.tsv" | sort; }
ledger() { pacer_psql -c "SELECT provider_message_id FROM deliveries WHERE status = 'sent' AND provider = 'sms-$1'" | sort; }
for s in a b; do
  ok "$s" >"$PACER_RUN_DIR/ok.$s"
  ledger "$s" >"$PACER_RUN_DIR/ledger.$s"
done
read -r on_a on_b <<<"$(wc -l <"$PACER_RUN_DIR/ok.a") $(wc -l <"$PACER_RUN_DIR/ok.b")"
twice_a=$(comm -13 "$PACER_RUN_DIR/ledger.a" "$PACER_RUN_DIR/ok.a" | wc -l)
twice_b=$(comm -13 "$PACER_RUN_DIR/ledger.b" "$PACER_RUN_DIR/ok.b" | wc -l)
sent=$(pacer_psql -c "SELECT count(*) FROM deliveries WHERE status = 'sent'")
echo "ledger: $sent of $total sent; sms-a accepted $on_a, sms-b $on_b; accepted without a row naming them:" \
  "sms-a $twice_a, sms-b $twice_b"
echo "busiest second: sms-a $(report a '.accounts.pacer.max_segments_1s'), sms-b $(report b '.accounts.pacer.max_segments_1s')" \
  "(quota $quota)"
echo "from sms-a's failure: sms-b's first message after ${b_first} s, full rate (90% of $quota in 1 s) after ${b_full} s"
echo "from the end of the outage: sms-a's first message again after ${a_back:-never} s"
exit 0
