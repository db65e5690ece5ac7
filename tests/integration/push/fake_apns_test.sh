#!/usr/bin/env bash
# pacer-fake-apns against clients no one here wrote (label "integration"):
# nghttp and curl over HTTP/2 with TLS, provider tokens signed by PyJWT.
# Shows real HTTP/2 (SETTINGS, ALPN h2 only), JWT checks (bad signature,
# wrong kid, expired, too many token updates), 410 for an unregistered token,
# 429 above the strict window, streams refused over the advertised limit,
# --latency-ms, --fault-rate, the record and the report. Needs PACER_FAKE_APNS.
set -euo pipefail
: "${PACER_FAKE_APNS:?set PACER_FAKE_APNS to the pacer-fake-apns binary}"
source "$(cd "$(dirname "$0")" && pwd)/fake_push_lib.sh"

openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$work/apns.key" 2>/dev/null
openssl pkey -in "$work/apns.key" -pubout -out "$work/apns.pub"
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$work/other.key" 2>/dev/null
printf 'deadbeef01\ndeadbeef02\n' >"$work/invalid.txt"
echo '{"aps":{"alert":"hi"}}' >"$work/body.json"
apns=(--auth-key "$work/apns.pub" --key-id KEY123 --team-id TEAM42)
jwt() {  # jwt KEY CLAIMS [HEADERS]
  local headers=${3:-}
  [ -n "$headers" ] || headers='{"kid":"KEY123"}'
  "$py" "$here/make_jwt.py" ES256 "$1" "$2" "$headers"
}
good=$(jwt "$work/apns.key" '{"iss":"TEAM42","iat":"now"}')
post() {  # post PORT TOKEN JWT [curl args...]
  local port=$1 token=$2 j=$3
  shift 3
  curl_h2 -H "apns-topic: com.example.app" -H "authorization: bearer $j" --data-binary @"$work/body.json" "$@" \
    "https://127.0.0.1:$port/3/device/$token"
}

# --- A: the HTTP/2 surface, JWT checks, unregistered tokens, the record.
start_fake a "$PACER_FAKE_APNS" "${apns[@]}" --max-concurrent-streams 7 --invalid-tokens "$work/invalid.txt" \
  --record "$work/record.jsonl"
nghttp -v -H ":method: POST" -H "apns-topic: com.example.app" -H "authorization: bearer $good" \
  -H "apns-id: 123E4567-E89B-12D3-A456-426614174000" -d "$work/body.json" \
  "https://127.0.0.1:$port_a/3/device/aabbcc01" >"$work/nghttp.out" 2>&1 || fail "nghttp: $(cat "$work/nghttp.out")"
grep -A3 'recv SETTINGS frame <length=[1-9]' "$work/nghttp.out" | grep -q 'SETTINGS_MAX_CONCURRENT_STREAMS(0x03):7' ||
  fail "the server's SETTINGS do not carry max concurrent streams 7: $(cat "$work/nghttp.out")"
grep -q 'recv (stream_id=[0-9]*) :status: 200' "$work/nghttp.out" || fail "nghttp POST not 200"
grep -q 'apns-id: 123E4567-E89B-12D3-A456-426614174000' "$work/nghttp.out" || fail "apns-id not echoed"

out=$(post "$port_a" aabbcc02 "$good")
[ "$(tail -1 <<<"$out")" = "2 200" ] || fail "curl --http2 POST: $out"
! curl -sS --cacert "$work/ca.pem" --http1.1 -o /dev/null "https://127.0.0.1:$port_a/_report" 2>/dev/null ||
  fail "a client without ALPN h2 was served"

out=$(post "$port_a" aabbcc03 "$(jwt "$work/other.key" '{"iss":"TEAM42","iat":"now"}')")
[ "$out" = $'{"reason":"InvalidProviderToken"}\n2 403' ] || fail "token signed by another key: $out"
out=$(post "$port_a" aabbcc03 "$(jwt "$work/apns.key" '{"iss":"TEAM42","iat":"now"}' '{"kid":"OTHER"}')")
[ "$out" = $'{"reason":"InvalidProviderToken"}\n2 403' ] || fail "token with another kid: $out"
out=$(post "$port_a" aabbcc03 "$(jwt "$work/apns.key" '{"iss":"TEAM42","iat":"now-3700"}')")
[ "$out" = $'{"reason":"ExpiredProviderToken"}\n2 403' ] || fail "token issued 3700 s ago: $out"
out=$(post "$port_a" aabbcc03 "$(jwt "$work/apns.key" '{"iss":"TEAM42","iat":"now-5"}')")
[ "$out" = $'{"reason":"TooManyProviderTokenUpdates"}\n2 429' ] || fail "a second new token at once: $out"
out=$(curl_h2 -H "authorization: bearer $good" --data-binary @"$work/body.json" \
  "https://127.0.0.1:$port_a/3/device/aabbcc03")
[ "$out" = $'{"reason":"MissingTopic"}\n2 400' ] || fail "no apns-topic: $out"

out=$(post "$port_a" deadbeef02 "$good")
grep -Eq '^\{"reason":"Unregistered","timestamp":[0-9]{13}\}$' <<<"$(head -1 <<<"$out")" || fail "unregistered: $out"
[ "$(tail -1 <<<"$out")" = "2 410" ] || fail "unregistered token not 410: $out"

[ "$(report "$port_a" accepted)" = 2 ] || fail "report accepted"
[ "$(report "$port_a" auth_failures)" = 4 ] || fail "report auth_failures"
[ "$(report "$port_a" invalid)" = 1 ] || fail "report invalid"
[ "$(report "$port_a" requests)" = 8 ] || fail "report requests"
kill -USR1 "$pid_a"
deadline=$((SECONDS + 5))
until [ "$(wc -l <"$work/record.jsonl")" -eq 2 ] || [ $SECONDS -ge $deadline ]; do sleep 0.05; done
[ "$(wc -l <"$work/record.jsonl")" -eq 2 ] || fail "record not flushed on SIGUSR1"
stop_fake a
"$py" - "$work/record.jsonl" <<'PY' || fail "record: $(cat "$work/record.jsonl")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert [l["token"] for l in lines] == ["aabbcc01", "aabbcc02"], lines
assert lines[0]["id"] == "123E4567-E89B-12D3-A456-426614174000", lines[0]
assert all(l["topic"] == "com.example.app" and l["body_len"] == 23 and l["t_us"] > 1.6e15 for l in lines), lines
PY

# --- B: the strict window: 5 a second, 12 sent at once over one connection.
start_fake b "$PACER_FAKE_APNS" "${apns[@]}" --window 5 --retry-after 2
nghttp -v -n -m 12 -H ":method: POST" -H "apns-topic: com.example.app" -H "authorization: bearer $good" \
  -d "$work/body.json" "https://127.0.0.1:$port_b/3/device/aabbcc04" >"$work/burst.out" 2>&1 || true
ok=$(grep -c ':status: 200' "$work/burst.out" || true)
throttled=$(grep -c ':status: 429' "$work/burst.out" || true)
[ "$ok" = 5 ] && [ "$throttled" = 7 ] || fail "window 5: $ok answered 200, $throttled answered 429"
[ "$(grep -c 'retry-after: 2' "$work/burst.out")" = 7 ] || fail "429s without retry-after: 2"
[ "$(report "$port_b" throttled)" = 7 ] && [ "$(report "$port_b" busiest_1s_window)" = 5 ] || fail "report of B"
stop_fake b

# --- C: at most 2 concurrent streams, answers held 150 ms. h2load (nghttp2's
# load client) keeps to the limit once it has our SETTINGS; its first flight
# may go out before them, and streams of it over the limit are refused (and
# counted as refused before the SETTINGS ACK). A client that ignores the limit
# gets its extra streams refused.
start_fake c "$PACER_FAKE_APNS" "${apns[@]}" --max-concurrent-streams 2 --latency-ms 150
h2load -n 20 -c 1 -m 6 -H "apns-topic: com.example.app" -H "authorization: bearer $good" -d "$work/body.json" \
  "https://127.0.0.1:$port_c/3/device/aabbcc05" >"$work/h2load.out" 2>&1 || fail "h2load: $(cat "$work/h2load.out")"
# nghttp2's client ends completed streams cleanly: the fake must count no
# reset (the first report on this port, before any curl request of ours).
[ "$(report "$port_c" resets_on_completed_streams)" = 0 ] || fail "RST_STREAM counted for h2load's streams"
accepted=$(report "$port_c" accepted)
refused=$(report "$port_c" streams_refused)
[ "$((accepted + refused))" = 20 ] && [ "$accepted" -ge 16 ] || fail "h2load: $accepted accepted, $refused refused"
[ "$(report "$port_c" streams_refused_before_ack)" = "$refused" ] || fail "h2load opened too many streams after SETTINGS"
[ "$(report "$port_c" max_concurrent_streams_seen)" = 2 ] || fail "h2load did not keep to 2 concurrent streams"
flood=$("$py" "$here/h2_flood.py" "$work/ca.pem" "$port_c" /3/device/aabbcc06 6) || fail "h2_flood: $flood"
[ "$flood" = "answered=2 refused=4" ] || fail "6 streams at once against limit 2: $flood"
[ "$(report "$port_c" streams_refused)" = $((refused + 4)) ] || fail "report streams_refused"
[ "$(report "$port_c" max_concurrent_streams_seen)" = 2 ] || fail "more than 2 streams served at once"
out=$(post "$port_c" aabbcc07 "$good" -o /dev/null -w '%{time_total}\n')
"$py" -c 'import sys; sys.exit(0 if float(sys.argv[1]) >= 0.15 else 1)' "$(head -1 <<<"$out")" ||
  fail "answer sooner than --latency-ms 150: $out"
stop_fake c

# --- D: --fault-rate 1: every good request answered 500 or 503, without retry-after.
start_fake d "$PACER_FAKE_APNS" "${apns[@]}" --fault-rate 1
for i in 1 2 3 4 5 6; do
  out=$(post "$port_d" aabbcc08 "$good" -D "$work/headers.$i")
  grep -Eq '^2 50[03]$' <<<"$(tail -1 <<<"$out")" || fail "fault-rate 1 answered: $out"
  grep -Eq '"reason":"(InternalServerError|ServiceUnavailable)"' <<<"$out" || fail "fault body: $out"
  ! grep -qi '^retry-after' "$work/headers.$i" || fail "a fault carried retry-after"
done
[ "$(report "$port_d" faults)" = 6 ] && [ "$(report "$port_d" accepted)" = 0 ] || fail "report of D"
stop_fake d
echo "fake_apns_test: ok"
