#!/usr/bin/env bash
# The APNs sink's throughput, one worker's sink over ONE TLS connection with
# a real ES256 provider token, against pacer-fake-apns (which verifies the
# token and caps streams at 1000) in another process on loopback. Prints each
# run's JSON line, then the fake's report (connections, streams seen) and CPU.
#   bench/push_sink_bench.sh [messages] [in_flight] [runs]     (defaults 200000 500 3)
# PACER_BENCH_PRESET (default release) the CMake preset to build and run.
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
source "$(dirname "$0")/../scripts/services.sh"
cd "$PACER_ROOT"
messages=${1:-200000}
in_flight=${2:-500}
runs=${3:-3}
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
"build/$preset/pacer-fake-apns" --cert "$dir/server.pem" --key "$dir/server.key" --listen 127.0.0.1:0 \
  --auth-key "$dir/key.pub" --key-id BENCHKEY01 --team-id BENCHTEAM1 --max-concurrent-streams 1000 --token-min-interval-s 0 \
  >"$dir/fake.out" 2>"$dir/fake.err" &
fake_pid=$!
port=$(listening_port "$dir/fake.out" "$fake_pid") || fail "the fake did not start"
echo "# push_sink_bench: $messages notifications x $runs runs, $in_flight in flight, 1 connection, preset $preset, $(nproc) cores"
for _ in $(seq 1 "$runs"); do
  "build/$preset/bench/push_sink_bench" "https://127.0.0.1:$port" "$dir/key.p8" BENCHKEY01 BENCHTEAM1 "$dir/ca.pem" \
    "$messages" "$in_flight" 1 1000 || echo "(a run had messages not delivered)"
done
echo "fake APNs report: $(curl -sS --cacert "$dir/ca.pem" --http2 "https://127.0.0.1:$port/_report")"
read -r utime stime < <(awk '{ print $14, $15 }' "/proc/$fake_pid/stat")
echo "fake APNs CPU: $(echo "($utime + $stime) / $(getconf CLK_TCK)" | bc -l | xargs printf '%.2f') s for $((messages * runs)) notifications"
