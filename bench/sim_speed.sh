#!/usr/bin/env bash
# pacer-sim speed: 10,000 campaigns x 60 simulated seconds (goal: 10 s of wall
# time or less). Writes the scenario to build/, runs pacer-sim five times and
# prints the wall_ms it reports for each run, then the median.
# Usage: bench/sim_speed.sh [path/to/pacer-sim] [campaigns]
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
cd "$PACER_ROOT"
sim=${1:-}
if [ -z "$sim" ]; then
  pacer_install_packages "${PACER_PACKAGES[@]}"
  pacer_build release >/dev/null
  sim=build/release/pacer-sim
fi
n=${2:-10000}
scenario=build/sim_speed_$n.yaml
mkdir -p build
{
  echo "duration_s: 60"
  echo "tick_ms: 10"
  echo "capacity_per_s: 500000"
  echo "providers:"
  for p in $(seq 0 9); do echo "  - {id: p$p, rate: $((20000 + p * 5000)), burst: 2000}"; done
  echo "campaigns:"
  # Mixed rates and weights; every third campaign unlimited, every seventh
  # with no provider, a quarter of them starting late, some finite.
  awk -v n="$n" 'BEGIN {
    for (i = 0; i < n; i++) {
      line = sprintf("  - {id: c%d, weight: %d", i, 1 + i % 4)
      if (i % 7 != 0) line = line sprintf(", provider: p%d", i % 10)
      if (i % 3 != 0) line = line sprintf(", rate: %d", 5 + (i * 37) % 200)
      if (i % 4 == 0) line = line sprintf(", start_s: %d", i % 30)
      if (i % 5 == 0) line = line sprintf(", messages: %d", 100 + (i * 13) % 5000)
      print line "}"
    }
  }'
} > "$scenario"
walls=()
for run in 1 2 3 4 5; do
  w=$("$sim" "$scenario" --out build/sim_speed_out.json && sed -n 's/.*"wall_ms": \([0-9.]*\).*/\1/p' build/sim_speed_out.json)
  echo "run $run: wall_ms $w"
  walls+=("$w")
done
printf '%s\n' "${walls[@]}" | sort -n | awk '{ a[NR] = $1 } END { printf "median wall_ms over %d runs: %s\n", NR, a[int((NR + 1) / 2)] }'
