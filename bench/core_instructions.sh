#!/usr/bin/env bash
# The worker core's cost counted in instructions, not time: two builds of
# bench/worker_core_bench under valgrind's callgrind, one iteration of each
# benchmark (the backlog offered, then one step of 500 messages), counting
# only what runs inside WorkerCore::offer and WorkerCore::step. The count is
# the same from run to run and does not move with the machine's load, so a
# small change in the hot path shows even on a busy 2-core machine, where the
# timed A/B (bench/worker_core_ab.sh) moves by 10-20%. It says nothing of
# cache misses or time: a change that saves instructions but touches more
# memory needs the timed A/B on a quiet machine too.
#
#   bench/core_instructions.sh A_BIN B_BIN [FILTER...]
#   (default filters: direct/10/2 direct/1000/40 leaser/100/2)
set -euo pipefail
a=$(realpath "${1:?A worker_core_bench}") b=$(realpath "${2:?B worker_core_bench}")
shift 2
filters=("$@")
[ ${#filters[@]} -gt 0 ] || filters=(direct/10/2 direct/1000/40 leaser/100/2)
source "$(dirname "$0")/../scripts/lib.sh"
pacer_install_packages valgrind bc >/dev/null
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
count() { # BIN FILTER: instructions inside offer and step
  valgrind --tool=callgrind --callgrind-out-file="$out/cg" --toggle-collect='pacer::WorkerCore::step*' \
    --toggle-collect='pacer::WorkerCore::offer*' "$1" --benchmark_filter="$2\$" --benchmark_min_time=0.000000001 \
    >/dev/null 2>&1
  awk '/^totals:/ { print $2 }' "$out/cg"
}
printf '%-20s %16s %16s %8s\n' benchmark "A instructions" "B instructions" "B/A"
for f in "${filters[@]}"; do
  ia=$(count "$a" "$f")
  ib=$(count "$b" "$f")
  printf '%-20s %16d %16d %8.4f\n' "$f" "$ia" "$ib" "$(echo "$ib / $ia" | bc -l)"
done
