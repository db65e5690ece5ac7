#!/usr/bin/env bash
# The push sinks' two HTTP/2 transports A/B in one run: curl (libcurl multi)
# and h2 (nghttp2's client session over OpenSSL), one APNs sink over one
# connection against a fresh pacer-fake-apns per run (1,000 streams allowed,
# every ES256 token verified, --record on), alternating curl, h2, curl, h2...
# Per run: notifications/s and the sink process's CPU per 1,000 (getrusage),
# and from the fake: connections opened, RST_STREAM on completed streams,
# duplicates (apns-ids accepted more than once), most streams open at once.
#   bench/push_h2_ab.sh [messages] [in_flight] [runs] [latencies_ms]
#   defaults: 100000 500 2 "0 20 100"   (latency runs send messages/5)
# PACER_BENCH_PRESET (default release) the CMake preset to build and run.
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
source "$(dirname "$0")/../scripts/services.sh"
cd "$PACER_ROOT"
messages=${1:-100000}
in_flight=${2:-500}
runs=${3:-2}
latencies=${4:-"0 20 100"}
preset=${PACER_BENCH_PRESET:-release}
pacer_install_packages "${PACER_PACKAGES[@]}" >/dev/null
cmake --preset "$preset" >/dev/null
cmake --build "build/$preset" --target push_sink_bench pacer-fake-apns -j "$(nproc)" >/dev/null
dir=$(mktemp -d)
fake_pid=
cleanup() {
  [ -n "$fake_pid" ] && kill "$fake_pid" 2>/dev/null && wait "$fake_pid" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
bash tests/support/make_test_certs.sh "$dir" >/dev/null
openssl ecparam -name prime256v1 -genkey -noout 2>/dev/null | openssl pkcs8 -topk8 -nocrypt -out "$dir/key.p8"
openssl ec -in "$dir/key.p8" -pubout -out "$dir/key.pub" 2>/dev/null

# one_run TRANSPORT LATENCY_MS MESSAGES: prints one line of figures.
one_run() {
  local transport=$1 latency=$2 n=$3
  rm -f "$dir/record.jsonl"
  "build/$preset/pacer-fake-apns" --cert "$dir/server.pem" --key "$dir/server.key" --listen 127.0.0.1:0 \
    --auth-key "$dir/key.pub" --key-id BENCHKEY01 --team-id BENCHTEAM1 --max-concurrent-streams 1000 \
    --token-min-interval-s 0 --latency-ms "$latency" --record "$dir/record.jsonl" >"$dir/fake.out" 2>"$dir/fake.err" &
  fake_pid=$!
  local port
  port=$(listening_port "$dir/fake.out" "$fake_pid") || fail "the fake did not start"
  local line
  line=$("build/$preset/bench/push_sink_bench" "https://127.0.0.1:$port" "$dir/key.p8" BENCHKEY01 BENCHTEAM1 \
    "$dir/ca.pem" "$n" "$in_flight" 1 1000 "$transport" 2>"$dir/bench.err" || true)
  local report
  if ! report=$(curl -sS --cacert "$dir/ca.pem" --http2 "https://127.0.0.1:$port/_report"); then
    local status=0
    wait "$fake_pid" || status=$?
    fake_pid=
    echo "$transport latency=${latency}ms: the fake is gone (exit $status): $(tail -3 "$dir/fake.err")"
    grep -h "event=push_h2_stats\|not delivered" "$dir/bench.err" | head -3 | sed 's/^/    /' || true
    return 0
  fi
  kill -TERM "$fake_pid"
  wait "$fake_pid" || true
  fake_pid=
  python3 - "$transport" "$latency" "$line" "$report" "$dir/record.jsonl" <<'PY'
import json, sys
transport, latency, line, report, record = sys.argv[1:6]
b = json.loads(line) if line.strip() else {}
r = json.loads(report)
ids = [json.loads(l)["id"] for l in open(record)]
n = max(b.get("messages", 1), 1)
# The report's own connection (curl) is not the sink's.
conns = r["connections"] - 1
print(f"{transport:5} latency={latency:>3}ms  {b.get('notifications_per_s', 0):>7.0f}/s  "
      f"cpu={b.get('cpu_ms_per_1000', 0):6.2f} ms/1000  delivered={b.get('delivered', 0)}/{n}  "
      f"connections={conns}  "
      f"rst_on_completed={r['resets_on_completed_streams']} ({r['resets_on_completed_streams'] * 100000 / n:.0f} per 100k)  "
      f"duplicates={len(ids) - len(set(ids))}  streams_seen={r['max_concurrent_streams_seen']}")
PY
  grep -h "event=push_h2_stats\|not delivered" "$dir/bench.err" | head -3 | sed 's/^/    /' || true
}

echo "# push_h2_ab: $messages notifications per run at 0 ms ($((messages / 5)) with latency), $in_flight in flight,"
echo "# 1 connection allowed, $runs runs per transport, preset $preset, $(nproc) cores, $(date -u +%FT%TZ)"
for latency in $latencies; do
  n=$messages
  [ "$latency" = 0 ] || n=$((messages / 5))
  for _ in $(seq 1 "$runs"); do
    one_run curl "$latency" "$n"
    one_run h2 "$latency" "$n"
  done
done
