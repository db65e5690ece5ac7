#!/usr/bin/env bash
# Failover between two SMSCs, end to end (docs/routes.md): a pacerd worker
# taking the providers' quotas from a real Redis, with a real PostgreSQL and
# the Kafka mock, sending one campaign whose provider is sms-a
# with failover to sms-b, each a pacer-fake-smsc with a strict one-second
# quota. OUTAGE_AT_MS after its first submit_sm, sms-a drops every bind and
# refuses binds for OUTAGE_MS (8 s here; bench/failover.sh runs 30 s).
# Checked against the SMSCs' own records and reports, not pacer's:
# - traffic moved to sms-b during the outage and came back to sms-a after it;
# - neither SMSC's quota was exceeded in any one-second window;
# - nothing was lost: every message has one sent row, naming the provider
#   whose SMSC accepted it (its id is among that SMSC's accepted ones);
# - nothing was sent twice but what SMPP cannot tell apart: sms-b accepted
#   exactly the ledger's sms-b rows; sms-a accepted beyond its rows only
#   submits answered into the dropped connection at the outage's start
#   (accepted, the answer lost, retried through sms-b), at most a window's worth;
# - pacerd logged the route change with its reason, and while failed over
#   its state document and `pacerctl top --admin` showed the route and why.
# One worker: a second one joining the consumer group mid-run makes the Kafka
# mock replay what was in flight (a rebalance's duplicates, not failover's);
# bench/failover.sh runs two and counts them.
source "${PACER_SOURCE:?}/tests/support/pacerd_test.sh"
source "$PACER_SOURCE/tests/integration/smpp/two_smscs.sh"
smsc=${PACER_FAKE_SMSC:?}
smsc_a= smsc_b= w1=
trap 'pacer_test_cleanup "$tmp" "$w1" "$smsc_a" "$smsc_b"' EXIT
PACER_TEST_LOGS=("$tmp/w1.log")

quota=${QUOTA:-40}  # segments/s at each SMSC, each provider's rate in pacer
messages=${MESSAGES:-800}
outage_at=${OUTAGE_AT_MS:-3000}
outage=${OUTAGE_MS:-8000}

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

two_smscs_config pacer-failover a b "admin:" "  listen: 127.0.0.1:0" "exit_when_idle_ms: 4000"
start=$(date +%s.%N)
SMSC_PASSWORD=s3cret timeout 150 "$pacerd" --config "$tmp/pacerd.yaml" >"$tmp/w1.out" 2>"$tmp/w1.log" &
w1=$!
# While failed over, the worker's state document and pacerctl top say where
# the traffic goes and why.
admin=$(pacer_admin_address "$tmp/w1.log") || fail "no admin_listening line"
wait_for_line 60 "$tmp/w1.log" 'event=route_changed campaign=otp provider=sms-b' || fail "no failover to sms-b"
route=$(curl -sf "http://$admin/api/v1/state" | python3 -c 'import json,sys
c = [c for c in json.load(sys.stdin)["campaigns"] if c["id"] == "otp"][0]
print(c["worker"]["route"], c["limited_by"]["code"])')
[ "$route" = "sms-b failover" ] || fail "state document while failed over: route, limited_by = $route"
top=$("$pacerctl" top --once --width 200 --admin "$admin")
grep -Eq "^otp .*via sms-b: sms-a: " <<<"$top" || fail "pacerctl top does not show the route: $top"
wait "$w1" || fail "pacerd exited $?"
w1=
kill "$smsc_a" "$smsc_b"
wait "$smsc_a" "$smsc_b" || true
smsc_a= smsc_b=

check_smsc_quotas a b
[ "$(report a 'r.get("outage_started_ms", -1)')" -ge 0 ] || fail "sms-a's outage never started"
outage_end=$(report a 'r["outage_started_ms"] + '"$outage")
on_a=$(accepted a | wc -l)
on_b=$(accepted b | wc -l)
after=$(awk -F'\t' -v e="$outage_end" '$6 == "ESME_ROK" && $1 >= e' "$tmp/a.tsv" | wc -l)
[ "$on_b" -gt 0 ] || fail "sms-b accepted nothing: no failover"
[ "$after" -gt 0 ] || fail "sms-a accepted nothing after its outage ended: the traffic did not come back"
# sms-b's record, on sms-a's clock.
shift_ms=$(smsc_clock_shift_ms a b)
read -r b_first b_last < <(awk -F'\t' -v s="$shift_ms" '$6 == "ESME_ROK" { t = $1 + s
  if (f == "" || t < f) f = t; if (t > l) l = t } END { print f, l }' "$tmp/b.tsv")
outage_start=$(report a 'r["outage_started_ms"]')
[ "$b_first" -ge "$outage_start" ] || fail "sms-b took a message before sms-a failed ($b_first < $outage_start ms)"

# Nothing lost: every message has a sent row, and its id is among its provider's accepted ones.
sent=$(pacer_psql -c "SELECT count(*) FROM deliveries WHERE status = 'sent' AND provider IN ('sms-a', 'sms-b')")
[ "$sent" = "$messages" ] || fail "$sent sent rows on sms-a or sms-b, $messages messages"
for s in a b; do
  pacer_psql -c "SELECT provider_message_id FROM deliveries WHERE provider = 'sms-$s'" | sort >"$tmp/ledger.$s"
  accepted "$s" >"$tmp/smsc.$s"
  missing=$(comm -23 "$tmp/ledger.$s" "$tmp/smsc.$s" | wc -l)
  [ "$missing" = 0 ] || fail "$missing ledger rows name sms-$s with an id sms-$s did not accept"
done
# Nothing twice on sms-b; on sms-a only what was answered into the dropped connection.
cmp -s "$tmp/ledger.b" "$tmp/smsc.b" || fail "sms-b accepted $on_b, the ledger has $(wc -l <"$tmp/ledger.b") rows on it"
comm -13 "$tmp/ledger.a" "$tmp/smsc.a" >"$tmp/extra.a"
extra=$(wc -l <"$tmp/extra.a")
[ "$extra" -le 10 ] || fail "sms-a accepted $extra messages with no row naming it (a window is 10)"
late=$(awk -F'\t' -v s="$outage_start" 'NR == FNR { x[$1] = 1; next } ($3 in x) && ($1 < s - 1000 || $1 > s)' \
  "$tmp/extra.a" "$tmp/a.tsv" | wc -l)
[ "$late" = 0 ] || fail "$late of sms-a's accepted messages without a row were not at the outage's start"
grep -h "event=route_changed" "$tmp/w1.log" | grep -q 'provider=sms-b why="sms-a: ' ||
  fail "no route_changed line naming sms-a's failure"
grep -h "event=route_changed" "$tmp/w1.log" | grep -q 'provider=sms-a' ||
  fail "no route_changed line back to sms-a"
echo "failover: all checks passed (sms-a $on_a, of them $after after its outage and $extra answered into the drop;" \
  "sms-b $on_b from" \
  "$((b_first - outage_start)) ms after sms-a's failure to $((b_last - outage_start)) ms; $(printf '%.1f' \
  "$(echo "$(date +%s.%N) - $start" | bc)") s)"
