#!/usr/bin/env bash
# Frequency-cap decisions/s before and after, side by side: the release
# frequency_cap_bench of another commit (A, e.g. a worktree of the old commit)
# against this tree's (B), both against one redis-server (flushed before each
# run), runs alternating A, B, A, B... so that a busy shared machine weighs on
# both alike. Per run: decisions/s of the first pass over RECIPIENTS new
# recipients (batches of 100) and of random recipients in batches of 100
# (section 2 of frequency_cap_bench). Then the medians and B/A.
# Usage: bench/frequency_cap_ab.sh A_BUILD_DIR [recipients] [seconds] [runs]
#   e.g. git worktree add /tmp/caps-base 962ded2
#        (cd /tmp/caps-base && cmake --preset release && cmake --build build/release --target frequency_cap_bench)
#        bench/frequency_cap_ab.sh /tmp/caps-base/build/release 200000 2 5
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
source "$(dirname "$0")/../scripts/services.sh"
cd "$PACER_ROOT"
a_build=${1:?usage: bench/frequency_cap_ab.sh A_BUILD_DIR [recipients] [seconds] [runs]}
recipients=${2:-200000}
seconds=${3:-2}
runs=${4:-5}
pacer_install_packages "${PACER_PACKAGES[@]}" >/dev/null
cmake --preset release >/dev/null
cmake --build build/release --target frequency_cap_bench -j 2 >/dev/null
b_build=build/release

PACER_RUN_DIR=$(mktemp -d /tmp/pacer-capab-XXXXXX)
trap 'pacer_stop_redis; rm -rf "$PACER_RUN_DIR"' EXIT
pacer_start_redis "$PACER_RUN_DIR/redis"
port=${PACER_REDIS##*:}

one_run() {  # BUILD: prints "first_pass_per_s batch100_per_s"
  redis-cli -p "$port" flushall >/dev/null
  "$1/bench/frequency_cap_bench" --port "$port" --recipients "$recipients" --batch 100 --seconds "$seconds" \
    > "$PACER_RUN_DIR/out"
  awk -F'|' '
    /^## 1\./ { s = 1 } /^## 2\./ { s = 2 } /^## 3\./ { s = 3 }
    s == 1 && $2 ~ /^ 1 \(1 stamp\)/ && !first { first = $6 + 0 }
    s == 2 && $2 + 0 == 100 { b100 = $4 + 0 }
    END { printf "%d %d\n", first, b100 }' "$PACER_RUN_DIR/out"
}

echo "# frequency_cap_ab: $recipients recipients, $seconds s per step, $runs runs each, $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ)"
echo
echo "| run | A first pass /s | B first pass /s | A batch 100 /s | B batch 100 /s |"
echo "|----:|----------------:|----------------:|---------------:|---------------:|"
for run in $(seq 1 "$runs"); do
  read -r af ab < <(one_run "$a_build")
  read -r bf bb < <(one_run "$b_build")
  echo "| $run | $af | $bf | $ab | $bb |"
  echo "$af $bf $ab $bb" >> "$PACER_RUN_DIR/all"
done
median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
col() { awk -v c="$1" '{print $c}' "$PACER_RUN_DIR/all" | median; }
af=$(col 1); bf=$(col 2); ab=$(col 3); bb=$(col 4)
echo
echo "medians: first pass A $af, B $bf (B/A $(awk -v a="$af" -v b="$bf" 'BEGIN {printf "%.3f", b / a}')); batch 100 A $ab, B $bb (B/A $(awk -v a="$ab" -v b="$bb" 'BEGIN {printf "%.3f", b / a}'))"
