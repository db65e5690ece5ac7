#!/usr/bin/env bash
# WorkerCore A/B: two builds of bench/worker_core_bench.cc (and of limiter_bench's
# scheduler tick, when both are given) run alternately in one sitting, A then B,
# ROUNDS times; prints each benchmark's median msgs/s (CPU time) per build, the
# ratio B/A of the medians, and the median of the per-round ratios.
#
#   bench/worker_core_ab.sh A_BIN B_BIN [ROUNDS] [FILTER]
#   e.g. bench/worker_core_ab.sh ../wt-base/build/default/bench/worker_core_bench \
#            build/default/bench/worker_core_bench 6
#
# A_BIN/B_BIN may be any Google Benchmark program; FILTER is passed as
# --benchmark_filter (default: all). A_FILTER / B_FILTER (environment) override it per
# side, and their benchmarks are then matched with /direct/ and /leaser/ read as one
# name: A_FILTER=direct B_FILTER=leaser compares the two paths of one build, alternately.
# The machine's load is printed before and after.
set -euo pipefail
a=${1:?A binary} b=${2:?B binary} rounds=${3:-6} filter=${4:-.}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "load before: $(uptime)"
for ((i = 1; i <= rounds; i++)); do
  for side in A B; do
    bin=$a f=${A_FILTER:-$filter}
    [[ $side == B ]] && bin=$b f=${B_FILTER:-$filter}
    "$bin" --benchmark_filter="$f" --benchmark_min_time=0.3 --benchmark_format=json \
      >"$out/$side.$i.json" 2>/dev/null
  done
done
echo "load after:  $(uptime)"
python3 - "$out" "$rounds" <<'EOF'
import json, statistics, sys
d, rounds = sys.argv[1], int(sys.argv[2])
def load(side, i):
    rows = {}
    for b in json.load(open(f"{d}/{side}.{i}.json"))["benchmarks"]:
        v = b.get("msgs_per_s") or b.get("items_per_second")
        rows[b["name"].replace("/direct/", "/path/").replace("/leaser/", "/path/")] = v if v else 1e9 / b["cpu_time"]  # no counter: runs per CPU second
    return rows
runs = {s: [load(s, i) for i in range(1, rounds + 1)] for s in "AB"}
print(f"{'benchmark':42} {'A median':>12} {'B median':>12} {'B/A':>7} {'median of round ratios':>24}")
for name in runs["A"][0]:
    a = [r[name] for r in runs["A"]]
    b = [r[name] for r in runs["B"] if name in r]
    if len(b) != len(a):
        continue
    ratios = [y / x for x, y in zip(a, b)]
    print(f"{name:42} {statistics.median(a):12.0f} {statistics.median(b):12.0f} "
          f"{statistics.median(b) / statistics.median(a):7.3f} {statistics.median(ratios):24.3f}")
EOF
