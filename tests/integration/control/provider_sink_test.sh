#!/usr/bin/env bash
# providers.<id>.sink end to end: a real pacerd on a real PostgreSQL and
# pacer-kafka-mock. The default sink is null and provider sms has the stdout
# sink of its own, so exactly the messages of sms's campaign appear on stdout,
# each once, while the other campaign's are delivered (counted, not printed).
source "${PACER_SOURCE:?}/tests/support/pacerd_test.sh"
trap 'pacer_test_cleanup "$tmp"' EXIT
# fail (scripts/services.sh) shows these logs.
PACER_TEST_LOGS=("$tmp/pacerd.log")

start_pacerd_test_services "$tmp" "$pacerd" "$kafka_mock" --topic messages:2
"$pacerctl" provider create sms --rate 1000 >/dev/null
"$pacerctl" campaign create promo --rate 1000 --provider sms >/dev/null
"$pacerctl" campaign create plain --rate 1000 >/dev/null
{
  seq 1 20 | awk '{ printf "promo:{\"n\":%d}\n", $1 }'
  seq 1 30 | awk '{ printf "plain:{\"n\":%d}\n", $1 }'
} | kcat -P -b "$PACER_KAFKA" -t messages -K:

cat >"$tmp/pacerd.yaml" <<YAML
kafka:
  brokers: [$PACER_KAFKA]
  topics: [messages]
postgres:
  migrate: false
sink:
  kind: null
providers:
  sms:
    sink:
      kind: stdout
exit_when_idle_ms: 1000
YAML
timeout 120 "$pacerd" --config "$tmp/pacerd.yaml" --admin-listen 127.0.0.1:0 >"$tmp/pacerd.out" 2>"$tmp/pacerd.log" || fail "pacerd exited $?"
grep -q "event=started .*sink=null provider_sinks=sms:stdout" "$tmp/pacerd.log" || fail "no provider sink in the started line"
promo=$(grep -c '^promo ' "$tmp/pacerd.out" || true)
others=$(grep -vc '^promo ' "$tmp/pacerd.out" || true)
[ "$promo" = 20 ] || fail "expected the 20 promo messages on the provider's stdout sink, got $promo"
[ "$others" = 0 ] || fail "$others lines of other campaigns on the provider's sink: $(grep -v '^promo ' "$tmp/pacerd.out" | head -3)"
[ "$(cut -d' ' -f2 "$tmp/pacerd.out" | sort -u | wc -l)" = 20 ] || fail "a promo message went out twice"
grep -q "event=stats read=50 sent=50 failed=0" "$tmp/pacerd.log" || fail "not every message was sent: $(grep 'event=stats' "$tmp/pacerd.log" | tail -1)"
echo "provider sink: all checks passed"
