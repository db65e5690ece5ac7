#!/usr/bin/env bash
# A prefix route's provider failing over, end to end (docs/routes.md): one
# pacerd worker with a real Redis and PostgreSQL and the Kafka mock sends one
# campaign on sms-a with the route 44=sms-uk and the failover list sms-b, each
# provider a pacer-fake-smsc with a strict one-second quota. OUTAGE_AT_MS
# after its first submit_sm, sms-uk drops every bind and refuses binds for
# OUTAGE_MS. Checked against the SMSCs' own records and reports:
# - British numbers went to sms-b during the outage and back to sms-uk after
#   it; sms-b took no other number, sms-a every other number and no British one;
# - no SMSC's quota was exceeded in any one-second window;
# - nothing was lost: every message has one sent row naming the provider
#   whose SMSC accepted it; sms-a and sms-b accepted exactly their rows,
#   sms-uk beyond its rows at most a window answered into the dropped connection;
# - pacerd logged the route's change and return, and while failed over its
#   state document and `pacerctl top --admin` named the route, its provider and why.
source "${PACER_SOURCE:?}/tests/support/pacerd_test.sh"
source "$PACER_SOURCE/tests/integration/smpp/two_smscs.sh"
smsc=${PACER_FAKE_SMSC:?}
smsc_a= smsc_uk= smsc_b= w1=
trap 'pacer_test_cleanup "$tmp" "$w1" "$smsc_a" "$smsc_uk" "$smsc_b"' EXIT
PACER_TEST_LOGS=("$tmp/w1.log")

quota=${QUOTA:-40}  # segments/s at each SMSC, each provider's rate in pacer
# Enough British numbers that some are left when sms-uk is back: OUTAGE_AT_MS and OUTAGE_MS at
# quota/s on sms-uk then sms-b take 320 of them, and sms-uk's rebinding takes a few seconds more
# (with 300, a fast run had sent them all on sms-b before sms-uk was back).
per_country=${PER_COUNTRY:-700}
outage_at=${OUTAGE_AT_MS:-2000}
outage=${OUTAGE_MS:-6000}

start_smsc a
start_smsc uk --outage-at-ms "$outage_at" --outage-ms "$outage"
start_smsc b

start_pacerd_test_services "$tmp" "$pacerd" "$kafka_mock" --topic messages:4
pacer_start_redis "$tmp/redis"
for p in sms-a sms-uk sms-b; do "$pacerctl" provider create "$p" --rate "$quota" >/dev/null; done
"$pacerctl" campaign create otp --provider sms-a --routes 44=sms-uk --failover sms-b >/dev/null
produce() {  # RECIPIENT FIRST: per_country messages to RECIPIENT, payloads numbered from FIRST
  seq "$2" $(($2 + per_country - 1)) | awk '{ printf "otp:code %d\n", $1 }' |
    kcat -P -b "$PACER_KAFKA" -t messages -K: -H "recipient=$1"
}
produce +447700900123 1
produce +12025550143 $((per_country + 1))
messages=$((2 * per_country))

two_smscs_config pacer-route-failover a uk "$(smpp_sink b)" "admin:" "  listen: 127.0.0.1:0" "exit_when_idle_ms: 4000"
start=$(date +%s.%N)
SMSC_PASSWORD=s3cret timeout 150 "$pacerd" --config "$tmp/pacerd.yaml" >"$tmp/w1.out" 2>"$tmp/w1.log" &
w1=$!
admin=$(pacer_admin_address "$tmp/w1.log") || fail "no admin_listening line"
wait_for_line 60 "$tmp/w1.log" 'event=route_changed campaign=otp route=44 provider=sms-b' ||
  fail "no failover of the route 44 to sms-b"
state=$(curl -sf "http://$admin/api/v1/state" | python3 -c 'import json,sys
c = [c for c in json.load(sys.stdin)["campaigns"] if c["id"] == "otp"][0]
r = [r for r in c["worker"]["routes"] if r["prefixes"] == ["44"]][0]
print(r["provider"], r["via"], c["limited_by"]["code"], c["limited_by"]["text"])')
[[ "$state" == "sms-uk sms-b failover route 44 -> sms-uk; failover to sms-b: sms-uk: "* ]] ||
  fail "state document while the route is failed over: $state"
top=$("$pacerctl" top --once --width 250 --admin "$admin")
grep -Eq "^otp .*route 44 -> sms-uk; failover to sms-b: sms-uk: " <<<"$top" ||
  fail "pacerctl top does not show the route: $top"
wait "$w1" || fail "pacerd exited $?"
w1=
kill "$smsc_a" "$smsc_uk" "$smsc_b"
wait "$smsc_a" "$smsc_uk" "$smsc_b" || true
smsc_a= smsc_uk= smsc_b=

check_smsc_quotas a uk b
[ "$(report uk 'r.get("outage_started_ms", -1)')" -ge 0 ] || fail "sms-uk's outage never started"
outage_end=$(report uk 'r["outage_started_ms"] + '"$outage")
count() {  # NAME AWK-CONDITION: submits SMSC NAME accepted that meet the condition
  awk -F'\t' "\$6 == \"ESME_ROK\" && ($2)" "$tmp/$1.tsv" | wc -l
}
uk_on_b=$(count b '$4 ~ /^44/')
[ "$uk_on_b" -gt 0 ] || fail "sms-b accepted no British number: no failover"
[ "$(count b '$4 !~ /^44/')" = 0 ] || fail "sms-b accepted numbers that are not British"
[ "$(count a '$4 ~ /^44/')" = 0 ] || fail "sms-a accepted British numbers"
[ "$(count a '$4 !~ /^44/')" = "$per_country" ] || fail "sms-a accepted $(count a '$4 !~ /^44/') others, $per_country sent"
uk_after=$(count uk "\$1 >= $outage_end")
[ "$uk_after" -gt 0 ] || fail "sms-uk accepted nothing after its outage ended: the route did not come back"

sent=$(pacer_psql -c "SELECT count(*) FROM deliveries WHERE status = 'sent' AND campaign = 'otp'")
[ "$sent" = "$messages" ] || fail "$sent sent rows, $messages messages"
for s in a uk b; do
  pacer_psql -c "SELECT provider_message_id FROM deliveries WHERE provider = 'sms-$s'" | sort >"$tmp/ledger.$s"
  accepted "$s" >"$tmp/smsc.$s"
  missing=$(comm -23 "$tmp/ledger.$s" "$tmp/smsc.$s" | wc -l)
  [ "$missing" = 0 ] || fail "$missing ledger rows name sms-$s with an id sms-$s did not accept"
done
for s in a b; do
  cmp -s "$tmp/ledger.$s" "$tmp/smsc.$s" ||
    fail "sms-$s accepted $(wc -l <"$tmp/smsc.$s"), the ledger has $(wc -l <"$tmp/ledger.$s") rows naming it"
done
extra=$(comm -13 "$tmp/ledger.uk" "$tmp/smsc.uk" | wc -l)
[ "$extra" -le 10 ] || fail "sms-uk accepted $extra messages with no row naming it (a window is 10)"
grep -h "event=route_changed" "$tmp/w1.log" | grep -q "route=44 provider=sms-uk why=\"back on its route's provider\"" ||
  fail "no route_changed line back to sms-uk"
echo "route failover: all checks passed (sms-b took $uk_on_b British numbers, sms-uk $uk_after after its outage" \
  "and $extra answered into the drop; $(printf '%.1f' "$(echo "$(date +%s.%N) - $start" | bc)") s)"
