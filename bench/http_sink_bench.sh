#!/usr/bin/env bash
# HTTP sink throughput to pacer-fake-provider at unlimited rate, one worker
# (issue 5's goal: >= 20,000 requests/s). Starts the provider on a free
# loopback port, runs the bench three times, stops the provider.
# bench/http_sink_ab.sh compares two builds side by side.
# Usage: bench/http_sink_bench.sh [requests] [max_in_flight]
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
cd "$PACER_ROOT"
pacer_install_packages "${PACER_PACKAGES[@]}"
pacer_build release >/dev/null
dir=$(mktemp -d)
build/release/pacer-fake-provider --port-file "$dir/port" > "$dir/provider.log" 2>&1 &
provider=$!
trap 'kill $provider 2>/dev/null || true; rm -rf "$dir"' EXIT
for _ in $(seq 1 100); do [ -s "$dir/port" ] && break; sleep 0.05; done
url="http://127.0.0.1:$(cat "$dir/port")/send/{recipient}"
for run in 1 2 3; do build/release/bench/http_sink_bench "$url" "${1:-100000}" "${2:-64}"; done
