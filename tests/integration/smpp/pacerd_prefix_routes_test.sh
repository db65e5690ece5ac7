#!/usr/bin/env bash
# Prefix routes between two SMSCs, end to end (docs/routes.md): a pacerd
# worker taking the providers' quotas from a real Redis, with a real
# PostgreSQL and the Kafka mock, sending one campaign whose provider is sms-a
# with the route 44=sms-uk, each provider a pacer-fake-smsc with a strict
# one-second quota. British, American and French numbers are produced.
# Checked against the SMSCs' own records and reports, not pacer's:
# - every British number arrived at sms-uk, every other one at sms-a;
# - neither SMSC's quota was exceeded in any one-second window, and the
#   campaign's own rate held for both together;
# - nothing was lost or sent twice: every message has one sent row naming
#   the provider whose SMSC accepted it, and each SMSC accepted exactly the
#   ledger's rows naming it;
# - pacerctl refuses bad routes, and pacerd names and skips a row whose
#   routes were broken by hand.
source "${PACER_SOURCE:?}/tests/support/pacerd_test.sh"
source "$PACER_SOURCE/tests/integration/smpp/two_smscs.sh"
smsc=${PACER_FAKE_SMSC:?}
smsc_a= smsc_uk= w1=
trap 'pacer_test_cleanup "$tmp" "$w1" "$smsc_a" "$smsc_uk"' EXIT
PACER_TEST_LOGS=("$tmp/w1.log")

quota=${QUOTA:-40}       # segments/s at each SMSC, each provider's rate in pacer
rate=${RATE:-60}         # the campaign's send_rate: both routes together
burst=${BURST:-6}
per_country=${PER_COUNTRY:-150}

start_smsc a
start_smsc uk

start_pacerd_test_services "$tmp" "$pacerd" "$kafka_mock" --topic messages:4
pacer_start_redis "$tmp/redis"
"$pacerctl" provider create sms-a --rate "$quota" >/dev/null
"$pacerctl" provider create sms-uk --rate "$quota" >/dev/null
"$pacerctl" campaign create otp --provider sms-a --rate "$rate" --burst "$burst" --routes +44=sms-uk >/dev/null
"$pacerctl" campaign show otp | grep -Eq "routes +44=sms-uk" || fail "campaign show: $("$pacerctl" campaign show otp)"
# Refused: a provider that does not exist, a prefix that is not digits, one prefix twice.
"$pacerctl" campaign set-rules otp --routes 44=sms-z 2>/dev/null && fail "a route to an unknown provider"
"$pacerctl" campaign set-rules otp --routes 4x=sms-uk 2>/dev/null && fail "a route with a prefix of letters"
"$pacerctl" campaign set-rules otp --routes 44=sms-uk,44=sms-a 2>/dev/null && fail "a prefix routed twice"
# A row broken by hand: pacerd names it and skips it.
"$pacerctl" campaign create broken --provider sms-a >/dev/null
pacer_psql -c "UPDATE campaigns SET routes = ARRAY['4x=sms-uk'] WHERE id = 'broken'" >/dev/null
produce() {  # RECIPIENT FIRST: per_country messages to RECIPIENT, payloads numbered from FIRST
  seq "$2" $(($2 + per_country - 1)) | awk '{ printf "otp:code %d\n", $1 }' |
    kcat -P -b "$PACER_KAFKA" -t messages -K: -H "recipient=$1"
}
produce +447700900123 1
produce +12025550143 $((per_country + 1))
produce 33612345678 $((2 * per_country + 1))
messages=$((3 * per_country))

two_smscs_config pacer-prefix-routes a uk "admin:" "  listen: 127.0.0.1:0" "exit_when_idle_ms: 4000"
start=$(date +%s.%N)
SMSC_PASSWORD=s3cret timeout 150 "$pacerd" --config "$tmp/pacerd.yaml" >"$tmp/w1.out" 2>"$tmp/w1.log" &
w1=$!
wait "$w1" || fail "pacerd exited $?"
w1=
kill "$smsc_a" "$smsc_uk"
wait "$smsc_a" "$smsc_uk" || true
smsc_a= smsc_uk=

grep -q 'event=row_skipped kind=campaign id=broken reason="routes: prefix .4x.' "$tmp/w1.log" ||
  fail "no row_skipped line naming the broken routes"
check_smsc_quotas a uk
# Where each number went, from the SMSCs' records (destination, column 4).
uk_on_uk=$(awk -F'\t' '$6 == "ESME_ROK" && $4 ~ /^44/' "$tmp/uk.tsv" | wc -l)
other_on_uk=$(awk -F'\t' '$6 == "ESME_ROK" && $4 !~ /^44/' "$tmp/uk.tsv" | wc -l)
uk_on_a=$(awk -F'\t' '$6 == "ESME_ROK" && $4 ~ /^44/' "$tmp/a.tsv" | wc -l)
other_on_a=$(awk -F'\t' '$6 == "ESME_ROK" && $4 !~ /^44/' "$tmp/a.tsv" | wc -l)
[ "$uk_on_uk" = "$per_country" ] || fail "sms-uk accepted $uk_on_uk British numbers, $per_country were sent"
[ "$other_on_uk" = 0 ] || fail "sms-uk accepted $other_on_uk numbers that are not British"
[ "$uk_on_a" = 0 ] || fail "sms-a accepted $uk_on_a British numbers"
[ "$other_on_a" = $((2 * per_country)) ] || fail "sms-a accepted $other_on_a other numbers, $((2 * per_country)) sent"
# The campaign's rate for both SMSCs together, on sms-a's clock, in every
# one-second window starting at an accepted submit.
shift_ms=$(smsc_clock_shift_ms a uk)
both_1s=$( { awk -F'\t' '$6 == "ESME_ROK" { print $1 }' "$tmp/a.tsv"
  awk -F'\t' -v s="$shift_ms" '$6 == "ESME_ROK" { print $1 + s }' "$tmp/uk.tsv"; } | sort -n |
  awk '{ t[NR] = $1 } END { j = 1; m = 0; for (i = 1; i <= NR; i++) { while (t[i] - t[j] >= 1000) j++
    if (i - j + 1 > m) m = i - j + 1 } print m }')
[ "$both_1s" -le $((rate + burst)) ] || fail "the campaign sent $both_1s in one second, above $rate/s + $burst"
# Nothing lost or twice: one sent row per message, each SMSC accepted exactly the rows naming it.
sent=$(pacer_psql -c "SELECT count(*) FROM deliveries WHERE status = 'sent' AND campaign = 'otp'")
[ "$sent" = "$messages" ] || fail "$sent sent rows, $messages messages"
for s in a uk; do
  pacer_psql -c "SELECT provider_message_id FROM deliveries WHERE provider = 'sms-$s'" | sort >"$tmp/ledger.$s"
  accepted "$s" >"$tmp/smsc.$s"
  cmp -s "$tmp/ledger.$s" "$tmp/smsc.$s" ||
    fail "sms-$s accepted $(wc -l <"$tmp/smsc.$s"), the ledger has $(wc -l <"$tmp/ledger.$s") rows naming it"
done
echo "prefix routes: all checks passed (sms-uk $uk_on_uk British, sms-a $other_on_a others;" \
  "busiest second: both $both_1s of $rate + $burst; $(printf '%.1f' "$(echo "$(date +%s.%N) - $start" | bc)") s)"
