#!/usr/bin/env bash
# pacerd with sink kind apns, end to end: a real pacerd on a real PostgreSQL
# and pacer-kafka-mock, sending over HTTP/2 with TLS (the test's own CA) to
# pacer-fake-apns, which checks every provider token's ES256 signature itself.
# Checked against the fake's own record and report, not pacer's:
# - every good message arrived once, under a stable apns-id (a UUID of its id);
# - three dead device tokens are invalid_token rows, not retried, and the
#   invalid_tokens table holds each once with its hits;
# - a recipient that is no device token and a payload that is no JSON object
#   are failed rows with the reason, and never reached the provider;
# - the key's bytes never appear in pacerd's output.
# - the 25 messages to a second device carry a pacer-expires-at deadline: each
#   reached the fake with apns-expiration that deadline, the others with none.
source "${PACER_SOURCE:?}/tests/support/pacerd_test.sh"
apns_pid=
trap 'pacer_test_cleanup "$tmp" "$apns_pid"' EXIT
PACER_TEST_LOGS=("$tmp/pacerd.log" "$tmp/apns.err")

ok=$(printf 'a1%.0s' $(seq 32))   # 64 hex characters
ok_ttl=$(printf 'b2%.0s' $(seq 32))  # its messages have a deadline
dead=()
for i in 1 2 3; do dead+=("$(printf "d$i%.0s" $(seq 32))"); done
printf '%s\n' "${dead[@]}" >"$tmp/dead.txt"

pacer_start_fake_apns --invalid-tokens "$tmp/dead.txt" --record "$tmp/record.jsonl" --max-concurrent-streams 8

start_pacerd_test_services "$tmp" "$pacerd" "$kafka_mock" --topic messages:1
"$pacerctl" provider create apple --rate 2000 >/dev/null
"$pacerctl" campaign create promo --rate 1000 --provider apple >/dev/null
body='{"aps":{"alert":"hello"}}'
seq 1 25 | sed "s/.*/promo:$body/" | kcat -P -b "$PACER_KAFKA" -t messages -K: -H "recipient=$ok"
deadline_ms=$(($(date +%s%3N) + 600000))
seq 1 25 | sed "s/.*/promo:$body/" |
  kcat -P -b "$PACER_KAFKA" -t messages -K: -H "recipient=$ok_ttl" -H "pacer-expires-at=$deadline_ms"
for d in "${dead[@]}"; do
  seq 1 2 | sed "s/.*/promo:$body/" | kcat -P -b "$PACER_KAFKA" -t messages -K: -H "recipient=$d"
done
echo "promo:$body" | kcat -P -b "$PACER_KAFKA" -t messages -K: -H "recipient=not-a-device-token"
echo "promo:plain text" | kcat -P -b "$PACER_KAFKA" -t messages -K: -H "recipient=$ok"

pacer_apns_config --apns 'campaign_headers: {"promo/apns-priority": "5"}'
timeout 120 "$pacerd" --config "$tmp/pacerd.yaml" >"$tmp/pacerd.out" 2>"$tmp/pacerd.log" || fail "pacerd exited $?"
key_line=$(sed -n 2p "$tmp/key.p8")
grep -qF -- "$key_line" "$tmp/pacerd.log" "$tmp/pacerd.out" && fail "the APNs key was logged"

report=$(curl -sS --cacert "$tmp/ca.pem" --http2 "https://127.0.0.1:$port/_report")
field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$report" "$1"; }
[ "$(field accepted)" = 50 ] || fail "the fake accepted $(field accepted), expected 50: $report"
[ "$(field invalid)" = 6 ] || fail "the fake answered $(field invalid) unregistered, expected 6 (3 tokens x 2)"
[ "$(field auth_failures)" = 0 ] || fail "provider tokens refused: $report"
# The h2 transport (the default) ends every completed stream without
# RST_STREAM and keeps to one connection: pacerd's, then this report's.
[ "$(field resets_on_completed_streams)" = 0 ] || fail "RST_STREAM on completed streams: $report"
[ "$(field connections)" = 2 ] || fail "$(field connections) connections, expected pacerd's one and the report's: $report"
[ "$(field requests)" = 56 ] || fail "$(field requests) requests: the bad messages must not be sent ($report)"
[ "$(field max_concurrent_streams_seen)" -le 8 ] || fail "more streams than the server allows: $report"
kill -TERM "$apns_pid"
wait "$apns_pid" || true
apns_pid=

# The fake's record: 50 accepted, 50 distinct apns-ids, and each is the UUID
# the ledger holds for its message.
[ "$(wc -l <"$tmp/record.jsonl")" = 50 ] || fail "record has $(wc -l <"$tmp/record.jsonl") lines"
python3 -c 'import json,sys; print("\n".join(json.loads(l)["id"] for l in open(sys.argv[1])))' "$tmp/record.jsonl" |
  sort >"$tmp/fake.ids"
[ "$(uniq -d "$tmp/fake.ids" | wc -l)" = 0 ] || fail "an apns-id arrived twice"
carried=$(pacer_check_push_lifetimes "$tmp/record.jsonl" "$ok_ttl" "$deadline_ms")
[ "$carried" = 25 ] || fail "$carried requests carried the deadline, expected 25"
pacer_psql -c "SELECT provider_message_id FROM deliveries WHERE status = 'sent'" | sort >"$tmp/ledger.ids"
cmp -s "$tmp/fake.ids" "$tmp/ledger.ids" || fail "the ledger's apns-ids differ from those the fake received"

rows=$(pacer_psql -c "SELECT status, count(*) FROM deliveries GROUP BY 1 ORDER BY 1" | tr '\n' ' ')
[ "$rows" = "failed|2 invalid_token|6 sent|50 " ] || fail "ledger: $rows"
reasons=$(pacer_psql -c "SELECT reason FROM deliveries WHERE status = 'failed' ORDER BY reason" | tr '\n' '|')
case "$reasons" in *"invalid device token"*"JSON object"* | *"JSON object"*"invalid device token"*) ;;
  *) fail "failed rows' reasons: $reasons" ;; esac
retried=$(pacer_psql -c "SELECT count(*) FROM deliveries WHERE status = 'invalid_token' AND attempts <> 1")
[ "$retried" = 0 ] || fail "$retried invalid_token rows were retried"
tokens=$(pacer_psql -c "SELECT token || ':' || hits FROM invalid_tokens WHERE provider = 'apple' ORDER BY token" | tr '\n' ' ')
[ "$tokens" = "${dead[0]}:2 ${dead[1]}:2 ${dead[2]}:2 " ] || fail "invalid_tokens: $tokens"
export_csv=$("$pacerctl" tokens export --provider apple)
[ "$(grep -c . <<<"$export_csv")" = 4 ] || fail "tokens export: $export_csv"
for d in "${dead[@]}"; do grep -q "^apple,$d,invalid token: APNs 410 Unregistered,.*,promo,2$" <<<"$export_csv" || fail "tokens export lacks $d: $export_csv"; done
echo "PASS"
