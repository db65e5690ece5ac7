#!/usr/bin/env bash
# Issue 16's frequency-cap figures: Redis memory per recipient for RECIPIENTS
# distinct recipients (1,000,000 by default), cap decisions per second for one
# worker (one connection) by batch size, and round trips per message at
# 5,000 messages/s. Starts its own redis-server on a free loopback port (no
# persistence) and stops it at the end; about a minute and ~300 MB of Redis
# memory for a million recipients. Then the quiet-hours micro-benchmarks.
#   bench/frequency_cap_bench.sh [RECIPIENTS] [BATCH] [SECONDS_PER_STEP]
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
source "$(dirname "$0")/../scripts/services.sh"
cd "$PACER_ROOT"

recipients=${1:-1000000}
batch=${2:-100}
seconds=${3:-3}

pacer_install_packages "${PACER_PACKAGES[@]}" >/dev/null
# Only the two benches, two jobs at most: the machine is shared.
cmake --preset release >/dev/null
cmake --build build/release --target frequency_cap_bench quiet_hours_bench -j 2 >/dev/null

PACER_RUN_DIR=$(mktemp -d /tmp/pacer-capbench-XXXXXX)
cleanup() {
  pacer_stop_redis
  rm -rf "$PACER_RUN_DIR"
}
trap cleanup EXIT
pacer_start_redis "$PACER_RUN_DIR/redis"
port=${PACER_REDIS##*:}

echo "# frequency_cap_bench: $(redis-server --version | cut -d' ' -f1-3), $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ)"
echo
build/release/bench/frequency_cap_bench --port "$port" --recipients "$recipients" --batch "$batch" --seconds "$seconds"
echo
echo "# quiet_hours_bench"
build/release/bench/quiet_hours_bench --benchmark_repetitions=3 --benchmark_report_aggregates_only=true 2>&1 |
  grep -E '^(BM_|Benchmark|-)' | grep -v '_stddev\|_cv'
