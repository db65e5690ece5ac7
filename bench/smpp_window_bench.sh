#!/usr/bin/env bash
# SMPP window against latency (issue 22): what one worker's SMPP sink sends
# per second when the SMSC answers each submit_sm after 0, 50, 100 or 200 ms,
# with pacerd's defaults (window 10, one bind), then at 100 ms with larger
# windows and more binds. Each run: its own pacer-fake-smsc (window 100, so
# the fake never refuses what the sink sends), `smpp_sink_bench PORT N WINDOW
# BINDS 0` sending N single-segment messages as fast as the window lets them
# go, N sized for about 5 s. The expectation to compare with is
# window x binds / latency.
# Usage: bench/smpp_window_bench.sh        (builds the release preset's two programs)
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
cd "$PACER_ROOT"
pacer_install_packages "${PACER_PACKAGES[@]}" >/dev/null
cmake --preset release -S "$PACER_ROOT" >/dev/null
cmake --build build/release --target smpp_sink_bench pacer-fake-smsc -j 2 >/dev/null
dir=$(mktemp -d)
smsc=
trap '[ -n "$smsc" ] && kill "$smsc" 2>/dev/null; rm -rf "$dir"' EXIT

# run LATENCY_MS WINDOW BINDS: one JSON line with the expectation added.
run() {
  local latency=$1 window=$2 binds=$3 expected n
  expected=$(awk -v w="$window" -v b="$binds" -v l="$latency" 'BEGIN { printf "%d", (l > 0 ? w * b * 1000 / l : 0) }')
  n=$((latency > 0 ? expected * 5 : 100000))
  [ "$latency" -gt 0 ] || expected=null  # answers at once: no bound but the sink's own speed
  rm -f "$dir/port"
  build/release/pacer-fake-smsc --account bench:bench --window 100 --response-delay-ms "$latency" \
    --port-file "$dir/port" >"$dir/smsc.log" 2>&1 &
  smsc=$!
  for _ in $(seq 1 100); do [ -s "$dir/port" ] && break; sleep 0.05; done
  build/release/bench/smpp_sink_bench "$(cat "$dir/port")" "$n" "$window" "$binds" 0 |
    sed "s/^{/{\"latency_ms\": $latency, \"expected_per_s\": $expected, /"
  kill "$smsc"
  wait "$smsc" 2>/dev/null || true
  smsc=
}

echo "== defaults: window 10, 1 bind"
for latency in 0 50 100 200; do run "$latency" 10 1; done
echo "== at 100 ms: larger windows, more binds"
run 100 50 1
run 100 100 1
run 100 10 4
