#!/usr/bin/env bash
# A wrong topic, or sandbox tokens sent to production: APNs calls every token
# dead. pacerd's dead-token guard must keep the audience out of the export.
# pacer-fake-apns answers all 100 device tokens 410 Unregistered; pacerd sends
# them 100 notifications. Checked against the ledger, the export and the log:
# - only the 16 answers before the guard could judge are invalid_token rows and
#   in pacerctl tokens export; the other 84 are failed rows whose reason says
#   the guard held them;
# - pacerd logged event=dead_token_guard provider=apple holding=true once, and
#   its summary counts 84 held verdicts;
# - nothing is lost: 100 rows, and the fake saw every message once (no retry).
source "${PACER_SOURCE:?}/tests/support/pacerd_test.sh"
apns_pid=
trap 'pacer_test_cleanup "$tmp" "$apns_pid"' EXIT
PACER_TEST_LOGS=("$tmp/pacerd.log" "$tmp/apns.err")

# Ten prefixes of 63 hex characters, each with ten one-digit endings: 100 tokens.
prefixes=()
for p in 0 1 2 3 4 5 6 7 8 9; do prefixes+=("$(printf "b$p%.0s" $(seq 31))b"); done
for p in "${prefixes[@]}"; do for d in 0 1 2 3 4 5 6 7 8 9; do echo "$p$d"; done; done >"$tmp/dead.txt"

pacer_start_fake_apns --invalid-tokens "$tmp/dead.txt"

start_pacerd_test_services "$tmp" "$pacerd" "$kafka_mock" --topic messages:1
"$pacerctl" provider create apple --rate 50 --burst 5 >/dev/null
"$pacerctl" campaign create promo --rate 1000 --provider apple >/dev/null
for i in "${!prefixes[@]}"; do
  "$pacerctl" produce --brokers "$PACER_KAFKA" --topic messages --campaign promo --payload '{"aps":{"alert":"hi"}}' \
    --count 10 --recipients 10 --recipient-prefix "${prefixes[$i]}" --id-prefix "p$i-" >/dev/null
done

pacer_apns_config --in-flight 8 --top 'limits: {dead_token_pause_s: 1}' --top "summary_file: $tmp/summary.json"
timeout 120 "$pacerd" --config "$tmp/pacerd.yaml" >"$tmp/pacerd.out" 2>"$tmp/pacerd.log" || fail "pacerd exited $?"

report=$(curl -sS --cacert "$tmp/ca.pem" --http2 "https://127.0.0.1:$port/_report")
field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$report" "$1"; }
[ "$(field invalid)" = 100 ] || fail "the fake answered $(field invalid) unregistered, expected 100 (once each): $report"
[ "$(field requests)" = 100 ] || fail "$(field requests) requests: a dead answer is never retried ($report)"

rows=$(pacer_psql -c "SELECT status, count(*) FROM deliveries GROUP BY 1 ORDER BY 1" | tr '\n' ' ')
[ "$rows" = "failed|84 invalid_token|16 " ] || fail "ledger: $rows"
held=$(pacer_psql -c "SELECT count(*) FROM deliveries WHERE status = 'failed' AND reason LIKE 'dead-token guard held: APNs 410 Unregistered; %'")
[ "$held" = 84 ] || fail "$held failed rows name the guard: $(pacer_psql -c "SELECT reason FROM deliveries WHERE status = 'failed' LIMIT 3")"
[ "$(pacer_psql -c "SELECT count(*) FROM invalid_tokens")" = 16 ] || fail "invalid_tokens: $(pacer_psql -c "SELECT count(*) FROM invalid_tokens")"
[ "$("$pacerctl" tokens export --provider apple | grep -c .)" = 17 ] || fail "the export holds more than the header and 16 tokens"

# The line comes at the next check (every 250 ms) after the guard's 17th answer: the answers
# still in flight then (at most 8) may have come in too. The ledger above pins the 17th.
grep -Eq 'event=dead_token_guard provider=apple holding=true ratio=1.000 answers=(1[7-9]|2[0-5]) window=60s threshold=0.33' \
  "$tmp/pacerd.log" || fail "no event=dead_token_guard line: $(grep dead_token "$tmp/pacerd.log" || true)"
[ "$(grep -c 'event=dead_token_guard provider=apple holding=true' "$tmp/pacerd.log")" = 1 ] ||
  fail "the guard was logged as starting more than once"
python3 - "$tmp/summary.json" <<'PY' || fail "pacerd's summary: see above"
import json, sys
p = [p for p in json.load(open(sys.argv[1]))["providers"] if p["id"] == "apple"][0]
print("provider apple:", p)
assert p["dead_tokens_held"] == 84, p
PY
echo "PASS"
