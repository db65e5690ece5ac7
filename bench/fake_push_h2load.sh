#!/usr/bin/env bash
# How many notifications a second pacer-fake-apns answers through ONE TLS
# connection, measured with h2load (nghttp2's load client), so a benchmark of
# a sink against it measures the sink, not the fake. The fake records every
# request (--record) and checks every provider token, as in a real run.
# Prints h2load's summary lines and the fake's report, RUNS times.
#   bench/fake_push_h2load.sh [REQUESTS] [STREAMS] [RUNS]
#   PACER_BENCH_PRESET=release bench/fake_push_h2load.sh ...   (default preset: default)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
requests=${1:-200000}
streams=${2:-100}
runs=${3:-3}
preset=${PACER_BENCH_PRESET:-default}
cd "$root"
cmake --preset "$preset" >/dev/null
cmake --build "build/$preset" --target pacer-fake-apns >/dev/null
bin="build/$preset/pacer-fake-apns"

work=$(mktemp -d /tmp/pacer-fake-push-bench.XXXXXX)
pid=
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; fi
  rm -rf "$work"
}
trap cleanup EXIT
bash tests/support/make_test_certs.sh "$work" >/dev/null
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$work/apns.key" 2>/dev/null
openssl pkey -in "$work/apns.key" -pubout -out "$work/apns.pub"
jwt=$(/usr/bin/python3 tests/integration/push/make_jwt.py ES256 "$work/apns.key" '{"iss":"TEAM","iat":"now"}' \
  '{"kid":"KEY"}')
echo '{"aps":{"alert":{"title":"Sale","body":"Everything must go"},"sound":"default"}}' >"$work/body.json"

for run in $(seq 1 "$runs"); do
  : >"$work/out"
  "$bin" --cert "$work/server.pem" --key "$work/server.key" --auth-key "$work/apns.pub" --key-id KEY \
    --team-id TEAM --max-concurrent-streams "$streams" --record "$work/record.jsonl" >"$work/out" 2>&1 &
  pid=$!
  deadline=$((SECONDS + 10))
  until grep -q '^listening' "$work/out" || [ $SECONDS -ge $deadline ]; do sleep 0.05; done
  port=$(sed -n 's/^listening 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$work/out")
  echo "run $run: $requests requests, 1 connection, $streams streams"
  h2load -n "$requests" -c 1 -m "$streams" -H "apns-topic: com.example.app" -H "authorization: bearer $jwt" \
    -d "$work/body.json" "https://127.0.0.1:$port/3/device/00fe11ab22cd33ef44" | grep -E '^(finished|requests|status)'
  curl -sS --http2 --cacert "$work/ca.pem" "https://127.0.0.1:$port/_report"
  echo
  kill "$pid"
  wait "$pid" || true
  pid=
  rm -f "$work/record.jsonl"
done
