#!/usr/bin/env bash
# Push end to end, against a strict provider: 4 pacerd workers (sink kind fcm
# or apns, real Redis, real PostgreSQL, the Kafka mock) share one fake
# provider that accepts at most 400 notifications in any one-second sliding
# window (no burst; 429 with Retry-After: 1 above it), over HTTP/2 with TLS.
# pacerctl's defaults for every burst; 20,000 messages over 2 campaigns at
# 300/s each. Checked against the fake's own record (one line per accepted
# request), which tells lost from twice, and the ledger.
# - fcm: pacer-fake-fcm over FCM HTTP v1, with OAuth access tokens that live
#   60 s (each worker refetches them during the run); every message to its own
#   device token, so the record's tokens tell each message apart.
# - apns: pacer-fake-apns, which verifies every worker's ES256 provider token
#   (each worker signs its own, so the fake takes new tokens at any interval:
#   --token-min-interval-s 0); device tokens are 64 hex characters, ten per
#   campaign (as in the integration tests), and the record's apns-ids (a UUID
#   of each message's id, the same on a retry) tell each message apart; they
#   must equal the ledger's provider message ids.
#
#   bench/push_e2e.sh fcm|apns  (MESSAGES=20000 WORKERS=4 PACER_BENCH_PRESET=release PACER_KEEP=1
#                                PACERD_ARGS="more pacerd flags"
#                                PROVIDER_RATE=500: the provider's rate in pacer, against the fake's 400;
#                                THROTTLE_RATE=0.1: the fake answers that share of requests 429 at random,
#                                whatever the rate (its --throttle-rate), and the goal is then 80% of
#                                what it accepts of the quota, 400 x (1 - 0.1) = 360/s;
#                                PACER_PACERD=<another build's pacerd>)
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
source "$(dirname "$0")/../scripts/services.sh"
cd "$PACER_ROOT"
kind=${1:-}
case "$kind" in
  fcm) name=FCM provider=firebase payload='{"notification":{"title":"Sale"}}' ;;
  apns) name=APNs provider=apple payload='{"aps":{"alert":"Sale"}}' ;;
  *) fail "usage: bench/push_e2e.sh fcm|apns" ;;
esac
quota=400
preset=${PACER_BENCH_PRESET:-release}
pacer_install_packages "${PACER_PACKAGES[@]}" jq bc >/dev/null
echo "building the $preset preset..."
pacer_build "$preset" >/dev/null
bin=build/$preset

PACER_RUN_DIR=$(mktemp -d "/tmp/pacer-$kind-XXXXXX")
pids=()
trap pacer_bench_cleanup EXIT
dir=$PACER_RUN_DIR
bash tests/support/make_test_certs.sh "$dir" >/dev/null
case "$kind" in
  fcm)
    openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$dir/sa.key" 2>/dev/null
    openssl pkey -in "$dir/sa.key" -pubout -out "$dir/sa.pub"
    "$bin/pacer-fake-fcm" --cert "$dir/server.pem" --key "$dir/server.key" --listen 127.0.0.1:0 \
      --sa-public-key "$dir/sa.pub" --token-ttl-s 60 --window "$quota" --retry-after 1 \
      --throttle-rate "${THROTTLE_RATE:-0}" --record "$dir/record.jsonl" \
      >"$dir/$kind.out" 2>"$dir/$kind.err" &
    ;;
  apns)
    openssl ecparam -name prime256v1 -genkey -noout 2>/dev/null | openssl pkcs8 -topk8 -nocrypt -out "$dir/key.p8"
    openssl ec -in "$dir/key.p8" -pubout -out "$dir/key.pub" 2>/dev/null
    "$bin/pacer-fake-apns" --cert "$dir/server.pem" --key "$dir/server.key" --listen 127.0.0.1:0 \
      --auth-key "$dir/key.pub" --key-id KEY0000001 --team-id TEAM000001 --token-min-interval-s 0 \
      --window "$quota" --retry-after 1 --throttle-rate "${THROTTLE_RATE:-0}" --record "$dir/record.jsonl" \
      >"$dir/$kind.out" 2>"$dir/$kind.err" &
    ;;
esac
PACER_PROVIDER_PID=$!  # the fake: pacer_bench_cleanup kills it
port=$(listening_port "$dir/$kind.out" "$PACER_PROVIDER_PID") || fail "the fake did not start"
case "$kind" in
  fcm)
    python3 - "$dir/sa.key" "$port" >"$dir/sa.json" <<'PY'
import json, sys
print(json.dumps({"type": "service_account", "project_id": "bench-project", "client_email": "pacer@bench.example",
                  "private_key": open(sys.argv[1]).read(), "token_uri": "https://127.0.0.1:%s/token" % sys.argv[2]}))
PY
    sink_args=(--sink fcm --fcm-url "https://127.0.0.1:$port" --fcm-service-account-file "$dir/sa.json")
    ;;
  apns)
    sink_args=(--sink apns --apns-url "https://127.0.0.1:$port" --apns-key-file "$dir/key.p8"
      --apns-key-id KEY0000001 --apns-team-id TEAM000001 --apns-topic com.example.app)
    ;;
esac

pacer_bench_services "$bin" --topic "messages:8"
provider_rate=${PROVIDER_RATE:-$quota}
"$bin/pacerctl" provider create "$provider" --rate "$provider_rate" >/dev/null
"$bin/pacerctl" campaign create alpha --rate 300 --provider "$provider" >/dev/null
"$bin/pacerctl" campaign create beta --rate 300 --provider "$provider" >/dev/null
messages=${MESSAGES:-20000}
per=$((messages / 2))
for c in alpha beta; do
  case "$kind" in
    fcm) recipients=(--recipient-prefix "$c-device-") ;;
    # 63 hex characters + one digit (index mod 10): ten device tokens of 64.
    apns) recipients=(--recipient-prefix "$(printf "${c:0:1}%.0s" $(seq 63))" --recipients 10) ;;
  esac
  "$bin/pacerctl" produce --brokers "$PACER_KAFKA" --topic messages --campaign "$c" --count "$per" \
    "${recipients[@]}" --payload "$payload" >/dev/null
done
total=$((per * 2))
workers=${WORKERS:-4}
echo "$total messages over 2 campaigns at 300/s, $name quota $quota/s (strict window), provider at $provider_rate/s, $workers workers"
for w in $(seq 1 "$workers"); do
  "${PACER_PACERD:-$bin/pacerd}" --brokers "$PACER_KAFKA" --topic messages --postgres "$PACER_PG" --no-migrate \
    --redis "$PACER_REDIS" --live-workers "$workers" --refresh-ms 500 --in-flight 100 \
    "${sink_args[@]}" --push-ca-file "$dir/ca.pem" \
    --session-timeout-ms 6000 --summary "$dir/summary$w.json" --admin-listen 127.0.0.1:0 \
    ${PACERD_ARGS:-} >"$dir/pacerd$w.log" 2>&1 &  # PACERD_ARGS: more pacerd flags, split on spaces
  pids+=($!)
done
# The fake's count of 429s 10 s after the workers started: those after it, a minute (the
# issue's "after the first 10 s").
fake_report() { curl -sS --cacert "$dir/ca.pem" --http2 "https://127.0.0.1:$port/_report"; }
sleep 10
early_throttled=$(fake_report | jq -r .throttled)
early_us=$(($(date +%s%N) / 1000))
deadline=$(($(date +%s) + total / 100 + 180))
until [ "$(pacer_psql -c "SELECT count(*) FROM deliveries")" -ge "$total" ] || [ "$(date +%s)" -ge "$deadline" ]; do
  sleep 1
done
pacer_stop_workers || true
report=$(fake_report)
pacer_stop_provider

# record.jsonl: one line per accepted request, {"t_us", "id", "token", ...}.
# What tells one message from another: FCM the device token (its id is the
# fake's own), APNs the apns-id.
case "$kind" in fcm) key=token ;; apns) key=id ;; esac
read -r accepted distinct twice first last after devices < <(python3 - "$dir/record.jsonl" "$key" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
t = sorted(r["t_us"] for r in rows)
keys = [r[sys.argv[2]] for r in rows]
first, last = t[0], t[-1]
after = sum(1 for x in t if x >= first + 5_000_000)
print(len(rows), len(set(keys)), len(keys) - len(set(keys)), first, last, after, len(set(r["token"] for r in rows)))
PY
)
span=$(echo "($last - $first - 5000000) / 1000000" | bc -l)
field() { jq -r ".$1" <<<"$report"; }
sent=$(pacer_psql -c "SELECT count(*) FROM deliveries WHERE status = 'sent'")
other=$(pacer_psql -c "SELECT count(*) FROM deliveries WHERE status <> 'sent'")
trips=$(jq -s 'map(.quota.batches // 0) | add' "$dir"/summary*.json 2>/dev/null || echo "?")
case "$kind" in
  fcm)
    printf 'fake FCM: %d requests, %d accepted (%d distinct device tokens, %d twice), %d answered 429, %d tokens issued, %d connections\n' \
      "$(field requests)" "$accepted" "$distinct" "$twice" "$(field throttled)" "$(field tokens_issued)" "$(field connections)"
    ;;
  apns)
    printf 'fake APNs: %d requests, %d accepted (%d distinct apns-ids, %d twice; %d device tokens), %d answered 429, %d refused for authentication, %d connections\n' \
      "$(field requests)" "$accepted" "$distinct" "$twice" "$devices" "$(field throttled)" "$(field auth_failures)" \
      "$(field connections)"
    python3 -c 'import json,sys; print("\n".join(json.loads(l)["id"] for l in open(sys.argv[1])))' "$dir/record.jsonl" |
      sort -u >"$dir/fake.ids"
    pacer_psql -c "SELECT provider_message_id FROM deliveries WHERE status = 'sent'" | sort -u >"$dir/ledger.ids"
    ;;
esac
printf 'busiest 1 s window of accepted requests: %d (quota %d)\n' "$(field busiest_1s_window)" "$quota"
printf 'after the first 5 s (%.1f s): %.1f accepted/s = %.1f%% of the quota\n' "$span" \
  "$(echo "$after / $span" | bc -l)" "$(echo "$after / $span / $quota * 100" | bc -l)"
printf 'ledger: %d sent, %d other; Redis quota batches over all workers: %s\n' "$sent" "$other" "$trips"
noise=${THROTTLE_RATE:-0}
takes=$(echo "$quota * (1 - $noise)" | bc -l)  # what the fake accepts of a send at the quota
if [ "$(echo "$noise > 0" | bc -l)" = 1 ]; then
  printf '%d answered 429 at random (%s of requests): %.1f accepted/s = %.1f%% of the %.0f/s it accepts of %d/s\n' \
    "$(field noise_throttled)" "$noise" "$(echo "$after / $span" | bc -l)" "$(echo "$after / $span / $takes * 100" | bc -l)" \
    "$takes" "$quota"
fi
printf '429s a minute after the first 10 s (%.1f s): %.1f (%d before)\n' "$(echo "($last - $early_us) / 1000000" | bc -l)" \
  "$(echo "($(field throttled) - $early_throttled) * 60000000 / ($last - $early_us)" | bc -l)" "$early_throttled"
ok=1
check() { if ! eval "$1"; then echo "FAIL: $2"; ok=0; fi; }
check '[ "$distinct" -eq "$total" ]' "not every message reached the provider"
check '[ "$twice" -eq 0 ]' "messages accepted twice"
check '[ "$sent" -eq "$total" ] && [ "$other" -eq 0 ]' "the ledger does not hold every message as sent"
if [ "$kind" = apns ]; then
  check '[ "$(field auth_failures)" -eq 0 ]' "provider tokens refused"
  check 'cmp -s "$dir/fake.ids" "$dir/ledger.ids"' "the ledger's apns-ids differ from those the fake accepted"
fi
if [ "$(echo "$noise > 0" | bc -l)" = 1 ]; then
  check '[ "$(echo "$after / $span >= 0.8 * $takes" | bc -l)" = 1 ]' "under 80% of what the provider accepts"
else
  check '[ "$(echo "$after / $span >= 0.95 * $quota" | bc -l)" = 1 ]' "under 95% of the quota used"
fi
[ "$ok" = 1 ] && echo "PASS"
[ "$ok" = 1 ]
