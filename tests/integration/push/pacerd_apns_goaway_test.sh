#!/usr/bin/env bash
# pacerd (sink apns, transport h2) against pacer-fake-apns --goaway-after 50:
# every connection ends with a graceful GOAWAY after 50 requests, and requests
# on streams above its last stream id are never processed. Checked against the
# fake's record: each of 3,000 notifications, sent as fast as pacerd can
# (200 in flight, 100 streams allowed, so answers and a GOAWAY often share a
# read), accepted exactly once (nothing the server processed is sent again,
# nothing it refused is lost), all in one attempt (a request moved to a new
# connection is no failed attempt), and no RST_STREAM on a completed stream.
source "${PACER_SOURCE:?}/tests/support/pacerd_test.sh"
apns_pid=
trap 'pacer_test_cleanup "$tmp" "$apns_pid"' EXIT
PACER_TEST_LOGS=("$tmp/pacerd.log" "$tmp/apns.err")

ok=$(printf 'a1%.0s' $(seq 32))

pacer_start_fake_apns --record "$tmp/record.jsonl" --goaway-after 50 --max-concurrent-streams 100

start_pacerd_test_services "$tmp" "$pacerd" "$kafka_mock" --topic messages:1
"$pacerctl" provider create apple --rate 100000 >/dev/null
"$pacerctl" campaign create promo --rate 100000 --provider apple >/dev/null
seq 1 3000 | sed 's/.*/promo:{"aps":{"alert":"hello"}}/' | kcat -P -b "$PACER_KAFKA" -t messages -K: -H "recipient=$ok"

pacer_apns_config --in-flight 200 --push 'transport: h2'
timeout 120 "$pacerd" --config "$tmp/pacerd.yaml" >"$tmp/pacerd.out" 2>"$tmp/pacerd.log" || fail "pacerd exited $?"

report=$(curl -sS --cacert "$tmp/ca.pem" --http2 "https://127.0.0.1:$port/_report")
field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$report" "$1"; }
[ "$(field accepted)" = 3000 ] || fail "the fake accepted $(field accepted), expected 3000: $report"
[ "$(field goaways_sent)" -ge 59 ] || fail "expected a GOAWAY every 50 requests: $report"
[ "$(field connections)" -ge 61 ] || fail "expected a new connection after each GOAWAY: $report"
[ "$(field resets_on_completed_streams)" = 0 ] || fail "RST_STREAM on completed streams: $report"
kill -TERM "$apns_pid"
wait "$apns_pid" || true
apns_pid=

[ "$(wc -l <"$tmp/record.jsonl")" = 3000 ] || fail "record has $(wc -l <"$tmp/record.jsonl") lines"
dups=$(python3 -c 'import json,sys; ids=[json.loads(l)["id"] for l in open(sys.argv[1])]; print(len(ids)-len(set(ids)))' \
  "$tmp/record.jsonl")
[ "$dups" = 0 ] || fail "$dups notifications accepted twice"
rows=$(pacer_psql -c "SELECT status, attempts, count(*) FROM deliveries GROUP BY 1, 2 ORDER BY 1, 2" | tr '\n' ' ')
[ "$rows" = "sent|1|3000 " ] || fail "ledger (status|attempts|count): $rows"
grep -q "event=push_h2_stats sink=sink kind=apns connections_opened=[0-9]* resets_sent=0 goaways=[1-9]" "$tmp/pacerd.log" ||
  fail "no push_h2_stats line with goaways: $(grep push_h2_stats "$tmp/pacerd.log")"
echo "PASS"
