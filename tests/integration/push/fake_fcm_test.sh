#!/usr/bin/env bash
# pacer-fake-fcm against clients no one here wrote (label "integration"):
# curl and nghttp over HTTP/2 with TLS, service-account assertions signed by
# PyJWT. The OAuth2 token endpoint (good and bad assertions), messages:send
# with the issued token (and without), a bad body, an unregistered token,
# 429 above the strict window, the record and the report. Needs PACER_FAKE_FCM.
set -euo pipefail
: "${PACER_FAKE_FCM:?set PACER_FAKE_FCM to the pacer-fake-fcm binary}"
source "$(cd "$(dirname "$0")" && pwd)/fake_push_lib.sh"

openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$work/sa.key" 2>/dev/null
openssl pkey -in "$work/sa.key" -pubout -out "$work/sa.pub"
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$work/other.key" 2>/dev/null
echo 'fcm-gone-token' >"$work/invalid.txt"
sa=pacer@demo-project.iam.gserviceaccount.com
json() {  # json KEY... < answer: a value from the JSON on the first line
  "$py" -c '
import json, sys
v = json.loads(sys.stdin.read().splitlines()[0])
for k in sys.argv[1:]:
    v = v[int(k)] if isinstance(v, list) else v[k]
print(v)' "$@"
}
assertion() {  # assertion KEY AUD [ISS]
  "$py" "$here/make_jwt.py" RS256 "$1" "{\"iss\":\"${3:-$sa}\",\"scope\":\"https://www.googleapis.com/auth/firebase.messaging\",\"aud\":\"$2\",\"iat\":\"now\",\"exp\":\"now+3600\"}"
}
token_req() {  # token_req PORT ASSERTION
  curl_h2 --data-urlencode "grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer" --data-urlencode "assertion=$2" \
    "https://127.0.0.1:$1/token"
}
send() {  # send PORT ACCESS_TOKEN DEVICE_TOKEN
  curl_h2 -H "authorization: Bearer $2" -H "content-type: application/json" \
    -d "{\"message\":{\"token\":\"$3\",\"notification\":{\"title\":\"hi\"}}}" \
    "https://127.0.0.1:$1/v1/projects/demo-project/messages:send"
}

start_fake a "$PACER_FAKE_FCM" --sa-public-key "$work/sa.pub" --sa-email "$sa" --invalid-tokens "$work/invalid.txt" \
  --token-ttl-s 1800 --record "$work/record.jsonl"
aud="https://127.0.0.1:$port_a/token"

out=$(token_req "$port_a" "$(assertion "$work/other.key" "$aud")")
[ "$(tail -1 <<<"$out")" = "2 400" ] && [ "$(json error <<<"$out")" = invalid_grant ] || fail "foreign key: $out"
out=$(token_req "$port_a" "$(assertion "$work/sa.key" "https://oauth2.example/token")")
[ "$(json error <<<"$out")" = invalid_grant ] || fail "wrong aud: $out"
out=$(token_req "$port_a" "$(assertion "$work/sa.key" "$aud" someone@else.example)")
[ "$(json error <<<"$out")" = invalid_grant ] || fail "wrong iss: $out"
out=$(token_req "$port_a" "$(assertion "$work/sa.key" "$aud")")
[ "$(tail -1 <<<"$out")" = "2 200" ] || fail "token endpoint: $out"
[ "$(json token_type <<<"$out")" = Bearer ] && [ "$(json expires_in <<<"$out")" = 1800 ] || fail "token answer: $out"
access=$(json access_token <<<"$out")
[ -n "$access" ] || fail "no access_token: $out"

out=$(send "$port_a" "$access" fcm-device-1)
[ "$(tail -1 <<<"$out")" = "2 200" ] || fail "messages:send with the issued token: $out"
grep -Eq '^projects/demo-project/messages/.+' <<<"$(json name <<<"$out")" || fail "message name: $out"
out=$(send "$port_a" "not-$access" fcm-device-1)
[ "$(tail -1 <<<"$out")" = "2 401" ] && [ "$(json error status <<<"$out")" = UNAUTHENTICATED ] || fail "bad token: $out"
out=$(curl_h2 -d '{"message":{"token":"x"}}' "https://127.0.0.1:$port_a/v1/projects/demo-project/messages:send")
[ "$(tail -1 <<<"$out")" = "2 401" ] || fail "no authorization: $out"
out=$(curl_h2 -H "authorization: Bearer $access" -d '{"message":{}}' \
  "https://127.0.0.1:$port_a/v1/projects/demo-project/messages:send")
[ "$(tail -1 <<<"$out")" = "2 400" ] && [ "$(json error status <<<"$out")" = INVALID_ARGUMENT ] || fail "no token: $out"
out=$(send "$port_a" "$access" fcm-gone-token)
[ "$(tail -1 <<<"$out")" = "2 404" ] && [ "$(json error status <<<"$out")" = NOT_FOUND ] || fail "unregistered: $out"
[ "$(json error details 0 errorCode <<<"$out")" = UNREGISTERED ] || fail "unregistered errorCode: $out"

# nghttp shows the real HTTP/2 exchange, with the server's SETTINGS.
echo "{\"message\":{\"token\":\"fcm-device-2\"}}" >"$work/msg.json"
nghttp -v -H ":method: POST" -H "authorization: Bearer $access" -d "$work/msg.json" \
  "https://127.0.0.1:$port_a/v1/projects/demo-project/messages:send" >"$work/nghttp.out" 2>&1 ||
  fail "nghttp: $(cat "$work/nghttp.out")"
grep -A3 'recv SETTINGS frame <length=[1-9]' "$work/nghttp.out" | grep -q 'SETTINGS_MAX_CONCURRENT_STREAMS(0x03):100' ||
  fail "SETTINGS without max concurrent streams 100"
grep -q ':status: 200' "$work/nghttp.out" || fail "nghttp send not 200"

[ "$(report "$port_a" tokens_issued)" = 1 ] && [ "$(report "$port_a" accepted)" = 2 ] || fail "report counts"
[ "$(report "$port_a" auth_failures)" = 5 ] && [ "$(report "$port_a" invalid)" = 1 ] || fail "report failures"
stop_fake a
"$py" - "$work/record.jsonl" <<'PY' || fail "record: $(cat "$work/record.jsonl")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert [l["token"] for l in lines] == ["fcm-device-1", "fcm-device-2"], lines
assert all(l["project"] == "demo-project" and l["id"] and l["body_len"] > 20 for l in lines), lines
PY

# --- B: the strict window, 4 a second; 10 sends at once over one connection.
start_fake b "$PACER_FAKE_FCM" --sa-public-key "$work/sa.pub" --window 4 --retry-after 3
out=$(token_req "$port_b" "$(assertion "$work/sa.key" "https://localhost:$port_b/token")")
access=$(json access_token <<<"$out") || fail "token from B: $out"
nghttp -v -n -m 10 -H ":method: POST" -H "authorization: Bearer $access" -d "$work/msg.json" \
  "https://127.0.0.1:$port_b/v1/projects/demo-project/messages:send" >"$work/burst.out" 2>&1 || true
ok=$(grep -c ':status: 200' "$work/burst.out" || true)
throttled=$(grep -c ':status: 429' "$work/burst.out" || true)
[ "$ok" = 4 ] && [ "$throttled" = 6 ] || fail "window 4: $ok answered 200, $throttled answered 429"
[ "$(grep -c 'retry-after: 3' "$work/burst.out")" = 6 ] || fail "429s without retry-after: 3"
out=$(send "$port_b" "$access" fcm-device-3)
[ "$(json error status <<<"$out")" = RESOURCE_EXHAUSTED ] || fail "429 body: $out"
[ "$(report "$port_b" busiest_1s_window)" = 4 ] || fail "busiest window above 4"
stop_fake b
echo "fake_fcm_test: ok"
