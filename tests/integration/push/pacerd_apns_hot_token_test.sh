#!/usr/bin/env bash
# One hot device token must not stall a campaign. pacer-fake-apns lets the
# hot token have one notification a second and answers the rest 429
# TooManyRequests (no retry-after), as Apple does for too many notifications
# to one device. pacerd sends 600 notifications to other tokens and 5 to the
# hot one at 100/s. Checked against the fake's own record and report:
# - the other tokens kept flowing: from the first to the last of them every
#   whole second has at least 80 accepted (a provider pause of 1 s per 429,
#   the old behaviour, leaves seconds with none);
# - the hot token was throttled, yet got all 5, never two in one second;
# - nothing is lost: 605 sent rows, and pacerd's summary counts the 429s as
#   the token's (recipient_throttled), none as the provider's (throttled).
source "${PACER_SOURCE:?}/tests/support/pacerd_test.sh"
apns_pid=
trap 'pacer_test_cleanup "$tmp" "$apns_pid"' EXIT
PACER_TEST_LOGS=("$tmp/pacerd.log" "$tmp/apns.err")

hot=$(printf 'f0%.0s' $(seq 32))       # 64 hex characters
prefix=$(printf 'a%.0s' $(seq 63))     # + one digit: ten other tokens of 64

pacer_start_fake_apns --hot-token "$hot" --hot-token-rate 1 --record "$tmp/record.jsonl"

start_pacerd_test_services "$tmp" "$pacerd" "$kafka_mock" --topic messages:1
"$pacerctl" provider create apple --rate 100 --burst 5 >/dev/null
"$pacerctl" campaign create promo --rate 1000 --provider apple >/dev/null
body='{"aps":{"alert":"hello"}}'
produce() { "$pacerctl" produce --brokers "$PACER_KAFKA" --topic messages --campaign promo --payload "$body" "$@" >/dev/null; }
produce --count 200 --recipients 10 --recipient-prefix "$prefix" --id-prefix a-
seq 1 5 | sed "s/.*/promo:$body/" | kcat -P -b "$PACER_KAFKA" -t messages -K: -H "recipient=$hot"
produce --count 400 --recipients 10 --recipient-prefix "$prefix" --id-prefix b-

pacer_apns_config --top "summary_file: $tmp/summary.json"
timeout 120 "$pacerd" --config "$tmp/pacerd.yaml" >"$tmp/pacerd.out" 2>"$tmp/pacerd.log" || fail "pacerd exited $?"

report=$(curl -sS --cacert "$tmp/ca.pem" --http2 "https://127.0.0.1:$port/_report")
field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$report" "$1"; }
[ "$(field accepted)" = 605 ] || fail "the fake accepted $(field accepted), expected 605: $report"
[ "$(field token_throttled)" -ge 1 ] || fail "the hot token was never throttled, the test proves nothing: $report"
[ "$(field token_throttled)" = "$(field throttled)" ] || fail "throttles other than the hot token's: $report"
kill -TERM "$apns_pid"
wait "$apns_pid" || true
apns_pid=

python3 - "$tmp/record.jsonl" "$hot" <<'PY' || fail "the fake's record: see above"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
hot = sorted(r["t_us"] for r in rows if r["token"] == sys.argv[2])
other = sorted(r["t_us"] for r in rows if r["token"] != sys.argv[2])
assert len(hot) == 5 and len(other) == 600, (len(hot), len(other))
for a, b in zip(hot, hot[1:]):
    assert b - a >= 1_000_000, ("two hot notifications within a second", a, b)
start, end = other[0], other[-1]
seconds = int((end - start) // 1_000_000)  # whole seconds between the first and the last
counts = [0] * max(seconds, 1)
for t in other:
    i = int((t - start) // 1_000_000)
    if i < seconds:
        counts[i] += 1
print("other tokens accepted per second:", counts, "hot at", [round((t - start) / 1e6, 2) for t in hot])
assert seconds >= 4, ("too short to judge", seconds)
assert min(counts) >= 80, ("a second with fewer than 80: the provider stalled", counts)
assert hot[0] < end, "the hot token's first notification came after the others were done"
PY

rows=$(pacer_psql -c "SELECT status, count(*) FROM deliveries GROUP BY 1 ORDER BY 1" | tr '\n' ' ')
[ "$rows" = "sent|605 " ] || fail "ledger: $rows"
python3 - "$tmp/summary.json" <<'PY' || fail "pacerd's summary: see above"
import json, sys
s = json.load(open(sys.argv[1]))
p = [p for p in s["providers"] if p["id"] == "apple"][0]
print("provider apple:", p)
assert p["throttled"] == 0, "a token's 429 paused the provider"
assert p["recipient_throttled"] >= 1, "no 429 reached pacerd as the token's"
PY
echo "PASS"
