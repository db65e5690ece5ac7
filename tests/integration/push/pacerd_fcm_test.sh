#!/usr/bin/env bash
# pacerd with sink kind fcm, end to end across access-token refreshes: a
# real pacerd on a real PostgreSQL and pacer-kafka-mock, sending over HTTP/2
# with TLS to pacer-fake-fcm, whose token endpoint checks the RS256 assertion
# and issues tokens that live 4 s, so a 10 s run crosses several refreshes.
# Judged by the fake's own report and record:
# - every good message arrived exactly once, none refused as unauthenticated
#   (no request went with an expired token), and more than two tokens were
#   issued (the run crossed refreshes);
# - two dead tokens (UNREGISTERED) are invalid_token rows and counted once each;
# - the service account's private key never appears in pacerd's output.
# - the 250 messages to device-ttl carry a pacer-expires-at deadline: each
#   reached the fake with android.ttl the seconds left on arrival (+- 1) and
#   apns.headers.apns-expiration the deadline, the others with neither.
source "${PACER_SOURCE:?}/tests/support/pacerd_test.sh"
fcm=${PACER_FAKE_FCM:?}
fcm_pid=
trap 'pacer_test_cleanup "$tmp" "$fcm_pid"' EXIT
PACER_TEST_LOGS=("$tmp/pacerd.log" "$tmp/fcm.err")

bash "$PACER_SOURCE/tests/support/make_test_certs.sh" "$tmp" >/dev/null
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$tmp/sa.key" 2>/dev/null
openssl pkey -in "$tmp/sa.key" -pubout -out "$tmp/sa.pub"
dead=(unregistered-device-1 unregistered-device-2)
printf '%s\n' "${dead[@]}" >"$tmp/dead.txt"

"$fcm" --cert "$tmp/server.pem" --key "$tmp/server.key" --listen 127.0.0.1:0 --sa-public-key "$tmp/sa.pub" \
  --sa-email pacer@demo-project.iam.gserviceaccount.com --token-ttl-s 4 --invalid-tokens "$tmp/dead.txt" \
  --record "$tmp/record.jsonl" >"$tmp/fcm.out" 2>"$tmp/fcm.err" &
fcm_pid=$!
port=$(listening_port "$tmp/fcm.out" "$fcm_pid") || fail "the fake did not start"
python3 - "$tmp/sa.key" "$port" >"$tmp/sa.json" <<'PY'
import json, sys
print(json.dumps({"type": "service_account", "project_id": "demo-project",
                  "client_email": "pacer@demo-project.iam.gserviceaccount.com",
                  "private_key": open(sys.argv[1]).read(),
                  "token_uri": "https://127.0.0.1:%s/token" % sys.argv[2]}))
PY

start_pacerd_test_services "$tmp" "$pacerd" "$kafka_mock" --topic messages:1
"$pacerctl" provider create firebase --rate 1000 >/dev/null
"$pacerctl" campaign create news --rate 50 --provider firebase >/dev/null
body='{"notification":{"title":"hi"}}'
seq 1 250 | sed "s/.*/news:$body/" | kcat -P -b "$PACER_KAFKA" -t messages -K: -H "recipient=device-ok"
deadline_ms=$(($(date +%s%3N) + 600000))
seq 1 250 | sed "s/.*/news:$body/" |
  kcat -P -b "$PACER_KAFKA" -t messages -K: -H "recipient=device-ttl" -H "pacer-expires-at=$deadline_ms"
for d in "${dead[@]}"; do echo "news:$body" | kcat -P -b "$PACER_KAFKA" -t messages -K: -H "recipient=$d"; done

cat >"$tmp/pacerd.yaml" <<YAML
kafka:
  brokers: [$PACER_KAFKA]
  topics: [messages]
postgres:
  migrate: false
sink:
  kind: fcm
  in_flight: 64
  fcm:
    url: https://127.0.0.1:$port
    service_account_file: $tmp/sa.json
  push:
    ca_file: $tmp/ca.pem
admin:
  listen: 127.0.0.1:0
exit_when_idle_ms: 3000
YAML
timeout 120 "$pacerd" --config "$tmp/pacerd.yaml" >"$tmp/pacerd.out" 2>"$tmp/pacerd.log" || fail "pacerd exited $?"
key_line=$(sed -n 2p "$tmp/sa.key")
grep -qF -- "$key_line" "$tmp/pacerd.log" "$tmp/pacerd.out" && fail "the service account's key was logged"

report=$(curl -sS --cacert "$tmp/ca.pem" --http2 "https://127.0.0.1:$port/_report")
field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$report" "$1"; }
[ "$(field accepted)" = 500 ] || fail "the fake accepted $(field accepted), expected 500: $report"
[ "$(field invalid)" = 2 ] || fail "the fake answered $(field invalid) unregistered, expected 2"
[ "$(field auth_failures)" = 0 ] || fail "a request went with an expired or unknown token: $report"
# The h2 transport (the default) ends every completed stream without
# RST_STREAM and keeps to one connection: pacerd's, then this report's.
[ "$(field resets_on_completed_streams)" = 0 ] || fail "RST_STREAM on completed streams: $report"
[ "$(field connections)" = 2 ] || fail "$(field connections) connections, expected pacerd's one and the report's: $report"
[ "$(field tokens_issued)" -ge 3 ] || fail "only $(field tokens_issued) tokens issued: the run crossed no refresh"
kill -TERM "$fcm_pid"
wait "$fcm_pid" || true
fcm_pid=
[ "$(wc -l <"$tmp/record.jsonl")" = 500 ] || fail "record has $(wc -l <"$tmp/record.jsonl") lines"
carried=$(pacer_check_push_lifetimes "$tmp/record.jsonl" device-ttl "$deadline_ms")
[ "$carried" = 250 ] || fail "$carried requests carried the deadline, expected 250"

rows=$(pacer_psql -c "SELECT status, count(*) FROM deliveries GROUP BY 1 ORDER BY 1" | tr '\n' ' ')
[ "$rows" = "invalid_token|2 sent|500 " ] || fail "ledger: $rows"
names=$(pacer_psql -c "SELECT count(DISTINCT provider_message_id) FROM deliveries
  WHERE status = 'sent' AND provider_message_id LIKE 'projects/demo-project/messages/%'")
[ "$names" = 500 ] || fail "$names sent rows hold FCM's message name"
[ "$("$pacerctl" tokens count --provider firebase)" = 2 ] || fail "tokens count: $("$pacerctl" tokens count)"
echo "PASS"
