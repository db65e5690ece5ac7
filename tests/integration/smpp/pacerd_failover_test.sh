#!/usr/bin/env bash
# Failover between two SMSCs, end to end (docs/routes.md): two pacerd
# workers sharing the providers' quotas through a real Redis, a real
# PostgreSQL and the Kafka mock, sending one campaign whose provider is sms-a
# with failover to sms-b, each a pacer-fake-smsc with a strict one-second
# quota. OUTAGE_AT_MS after its first submit_sm, sms-a drops every bind and
# refuses binds for OUTAGE_MS (8 s here; bench/failover.sh runs 30 s).
# Checked against the SMSCs' own records and reports, not pacer's:
# - traffic moved to sms-b during the outage and came back to sms-a after it;
# - neither SMSC's quota was exceeded in any one-second window;
# - nothing was lost and nothing was accepted twice: each SMSC's accepted ids
#   are exactly the ledger's sent rows naming that provider, and every message
#   has one sent row;
# - pacerd logged the route change with its reason.
source "${PACER_SOURCE:?}/tests/support/pacerd_test.sh"
smsc=${PACER_FAKE_SMSC:?}
smsc_a= smsc_b= w1= w2=
trap 'pacer_test_cleanup "$tmp" "$w1" "$w2" "$smsc_a" "$smsc_b"' EXIT
PACER_TEST_LOGS=("$tmp/w1.log" "$tmp/w2.log")

quota=${QUOTA:-40}  # segments/s at each SMSC, each provider's rate in pacer
messages=${MESSAGES:-800}
outage_at=${OUTAGE_AT_MS:-3000}
outage=${OUTAGE_MS:-8000}

start_smsc() {  # NAME EXTRA...: starts pacer-fake-smsc NAME, sets its pid in smsc_NAME
  local name=$1
  shift
  "$smsc" --account "pacer:s3cret:$quota" --port-file "$tmp/$name.port" --record "$tmp/$name.tsv" \
    --report "$tmp/$name.json" "$@" >"$tmp/$name.log" 2>&1 &
  eval "smsc_$name=$!"
  for _ in $(seq 100); do [ -s "$tmp/$name.port" ] && return 0; sleep 0.1; done
  fail "pacer-fake-smsc $name did not start"
}
start_smsc a --outage-at-ms "$outage_at" --outage-ms "$outage"
start_smsc b

start_pacerd_test_services "$tmp" "$pacerd" "$kafka_mock" --topic messages:4
pacer_start_redis "$tmp/redis"
"$pacerctl" provider create sms-a --rate "$quota" >/dev/null
"$pacerctl" provider create sms-b --rate "$quota" >/dev/null
"$pacerctl" campaign create otp --provider sms-a --failover sms-b >/dev/null
"$pacerctl" campaign show otp | grep -Eq "failover +sms-b" || fail "campaign show: $("$pacerctl" campaign show otp)"
# Refused: the campaign's own provider, a provider that does not exist.
"$pacerctl" campaign set-rules otp --failover sms-a 2>/dev/null && fail "a failover to the campaign's own provider"
"$pacerctl" campaign set-rules otp --failover sms-z 2>/dev/null && fail "a failover to an unknown provider"
seq 1 "$messages" | awk '{ printf "otp:code %d\n", $1 }' | kcat -P -b "$PACER_KAFKA" -t messages -K: -H recipient=+447700900123

smpp_sink() {  # NAME: a provider's own SMPP sink
  cat <<YAML
  sms-$1:
    sink:
      kind: smpp
      smpp:
        port: $(cat "$tmp/$1.port")
        system_id: pacer
        password_env: SMSC_PASSWORD
YAML
}
cat >"$tmp/pacerd.yaml" <<YAML
kafka:
  brokers: [$PACER_KAFKA]
  topics: [messages]
  group: pacer-failover
  session_timeout_ms: 6000
postgres:
  migrate: false
redis:
  nodes: [$PACER_REDIS]
sink:
  kind: stdout
providers:
$(smpp_sink a)
$(smpp_sink b)
exit_when_idle_ms: 4000
YAML
start=$(date +%s.%N)
SMSC_PASSWORD=s3cret timeout 150 "$pacerd" --config "$tmp/pacerd.yaml" >"$tmp/w1.out" 2>"$tmp/w1.log" &
w1=$!
SMSC_PASSWORD=s3cret timeout 150 "$pacerd" --config "$tmp/pacerd.yaml" >"$tmp/w2.out" 2>"$tmp/w2.log" &
w2=$!
wait "$w1" || fail "worker 1 exited $?"
w1=
wait "$w2" || fail "worker 2 exited $?"
w2=
kill "$smsc_a" "$smsc_b"
wait "$smsc_a" "$smsc_b" || true
smsc_a= smsc_b=

report() {  # NAME EXPR: a figure of the SMSC's report
  python3 -c 'import json,sys; r = json.load(open(sys.argv[1])); a = r["accounts"]["pacer"]; print(eval(sys.argv[2]))' \
    "$tmp/$1.json" "$2"
}
for s in a b; do
  max_1s=$(report "$s" 'a["max_segments_1s"]')
  [ "$max_1s" -le "$quota" ] || fail "sms-$s took $max_1s segments in one second, above its $quota"
done
[ "$(report a 'r.get("outage_started_ms", -1)')" -ge 0 ] || fail "sms-a's outage never started"
outage_end=$(report a 'r["outage_started_ms"] + '"$outage")
accepted() { awk -F'\t' '$6 == "ESME_ROK" { print $3 }' "$tmp/$1.tsv" | sort; }
on_a=$(accepted a | wc -l)
on_b=$(accepted b | wc -l)
after=$(awk -F'\t' -v e="$outage_end" '$6 == "ESME_ROK" && $1 >= e' "$tmp/a.tsv" | wc -l)
[ "$on_b" -gt 0 ] || fail "sms-b accepted nothing: no failover"
[ "$after" -gt 0 ] || fail "sms-a accepted nothing after its outage ended: the traffic did not come back"
# sms-b's record, on sms-a's clock (both reports give their start on the system clock).
shift_ms=$(($(report b 'r["started_unix_ms"]') - $(report a 'r["started_unix_ms"]')))
read -r b_first b_last < <(awk -F'\t' -v s="$shift_ms" '$6 == "ESME_ROK" { t = $1 + s
  if (f == "" || t < f) f = t; if (t > l) l = t } END { print f, l }' "$tmp/b.tsv")
outage_start=$(report a 'r["outage_started_ms"]')
[ "$b_first" -ge "$outage_start" ] || fail "sms-b took a message before sms-a failed ($b_first < $outage_start ms)"

# Nothing lost, nothing twice: each SMSC's accepted ids are the ledger's sent rows of that provider.
rows=$(pacer_psql -c "SELECT status, provider, count(*) FROM deliveries GROUP BY 1, 2 ORDER BY 1, 2" | tr '\n' ' ')
[ "$rows" = "sent|sms-a|$on_a sent|sms-b|$on_b " ] || fail "ledger: $rows (sms-a accepted $on_a, sms-b $on_b)"
[ $((on_a + on_b)) = "$messages" ] || fail "$on_a + $on_b accepted, $messages messages"
for s in a b; do
  pacer_psql -c "SELECT provider_message_id FROM deliveries WHERE provider = 'sms-$s'" | sort >"$tmp/ledger.$s"
  accepted "$s" >"$tmp/smsc.$s"
  cmp -s "$tmp/ledger.$s" "$tmp/smsc.$s" || fail "the ledger's sms-$s ids differ from what sms-$s accepted"
done
grep -h "event=route_changed" "$tmp/w1.log" "$tmp/w2.log" | grep -q 'provider=sms-b why="sms-a: ' ||
  fail "no route_changed line naming sms-a's failure"
grep -h "event=route_changed" "$tmp/w1.log" "$tmp/w2.log" | grep -q 'provider=sms-a' ||
  fail "no route_changed line back to sms-a"
echo "failover: all checks passed (sms-a $on_a, of them $after after its outage; sms-b $on_b from" \
  "$((b_first - outage_start)) ms after sms-a's failure to $((b_last - outage_start)) ms; $(printf '%.1f' \
  "$(echo "$(date +%s.%N) - $start" | bc)") s)"
