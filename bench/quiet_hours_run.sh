#!/usr/bin/env bash
# Quiet hours end to end in simulated time: a real WorkerCore, 24 zones, 48 hours across the
# US spring-forward (10 March 2024), a campaign quiet 21:00-08:00 at RATE/s with BURST, and
# MESSAGES recipients spread over the zones. An independent oracle (glibc localtime_r)
# counts sends inside quiet windows (must be 0) and the most sends in any second (must be
# <= rate + burst), and prints each window opening. No servers; takes about a minute.
#   bench/quiet_hours_run.sh [MESSAGES] [RATE] [BURST]
#   PACER_BENCH_PRESET=default bench/quiet_hours_run.sh ...   (default preset: release)
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
cd "$PACER_ROOT"
preset=${PACER_BENCH_PRESET:-release}
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" --target quiet_hours_run -j2 >/dev/null
"build/$preset/bench/quiet_hours_run" "${1:-100000}" "${2:-50}" "${3:-10}"
