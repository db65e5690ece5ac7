#!/usr/bin/env bash
# SMPP sink throughput before and after, side by side: the release
# smpp_sink_bench and pacer-fake-smsc of another commit (A, e.g. a worktree of
# the old commit) against this tree's (B). Each side against its own fake SMSC
# (window 100, answers at once), one bind, a delivery receipt per message; runs
# alternate A, B, A, B... so that a busy shared machine weighs on both alike.
# Prints submit_sm/s and the sink's CPU per 1,000 submit_sm per run, then the
# medians and B/A.
# Usage: bench/smpp_sink_ab.sh A_BUILD_DIR [messages] [runs] [receipts 0|1] [segments] [response delay ms]
#   e.g. git worktree add /tmp/smpp-base 34aad38
#        (cd /tmp/smpp-base && cmake --preset release &&
#           cmake --build build/release --target smpp_sink_bench pacer-fake-smsc)
#        bench/smpp_sink_ab.sh /tmp/smpp-base/build/release 100000 5 1
# With segments > 1, A's smpp_sink_bench must know that argument (copy this
# tree's bench/smpp_sink_bench.cc into A before building it). B's build
# preset is PACER_BENCH_PRESET (default release).
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
cd "$PACER_ROOT"
a_build=${1:?usage: bench/smpp_sink_ab.sh A_BUILD_DIR [messages] [runs] [receipts 0|1] [segments] [delay ms]}
n=${2:-100000}
runs=${3:-5}
receipts=${4:-1}
segments=${5:-1}
delay=${6:-0}
preset=${PACER_BENCH_PRESET:-release}
pacer_install_packages "${PACER_PACKAGES[@]}" >/dev/null
cmake --preset "$preset" >/dev/null
cmake --build "build/$preset" --target smpp_sink_bench pacer-fake-smsc -j 2 >/dev/null
b_build=build/$preset
dir=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$dir"' EXIT

start_smsc() {  # NAME BUILD: sets smsc_port
  "$2/pacer-fake-smsc" --account bench:bench --window 100 --response-delay-ms "$delay" --port-file "$dir/$1.port" \
    >"$dir/$1.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 100); do [ -s "$dir/$1.port" ] && break; sleep 0.05; done
  smsc_port=$(cat "$dir/$1.port")
}
start_smsc a "$a_build"; a_port=$smsc_port
start_smsc b "$b_build"; b_port=$smsc_port

one_run() {  # BUILD PORT: prints "submit_sm_per_s cpu_ms_per_1000"
  "$1/bench/smpp_sink_bench" "$2" "$n" 100 1 "$receipts" "$segments" |
    jq -r '"\(.submit_sm_per_s) \(.cpu_ms_per_1000_submit_sm)"'
}

echo "# smpp_sink_ab: $n messages of $segments segment(s) per run, window 100, 1 bind, receipts $receipts," \
  "answers $delay ms late, $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ)"
echo
echo "| run | A submit_sm/s | B submit_sm/s | A CPU ms / 1,000 | B CPU ms / 1,000 |"
echo "|----:|--------------:|--------------:|-----------------:|-----------------:|"
for run in $(seq 1 "$runs"); do
  read -r ar ac < <(one_run "$a_build" "$a_port")
  read -r br bc < <(one_run "$b_build" "$b_port")
  echo "| $run | $ar | $br | $ac | $bc |"
  echo "$ar $br $ac $bc" >> "$dir/all"
done
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
col() { awk -v c="$1" '{print $c}' "$dir/all" | median; }
ar=$(col 1); br=$(col 2); ac=$(col 3); bc=$(col 4)
echo
echo "medians: submit_sm/s A $ar, B $br (B/A $(awk -v a="$ar" -v b="$br" 'BEGIN {printf "%.3f", b / a}')); CPU ms per 1,000 A $ac, B $bc (B/A $(awk -v a="$ac" -v b="$bc" 'BEGIN {printf "%.3f", b / a}'))"
