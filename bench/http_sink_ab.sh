#!/usr/bin/env bash
# HTTP sink throughput, before and after, side by side: the release build of
# another commit (A, e.g. a worktree of the old commit) against this tree's (B),
# each bench against its own pacer-fake-provider, runs alternating A, B, A, B...
# so that a busy shared machine weighs on both alike. Prints a Markdown table
# with requests/s and the CPU each side spent per request, then the medians.
# Usage: bench/http_sink_ab.sh A_BUILD_DIR [requests] [max_in_flight] [runs]
#   e.g. git worktree add /tmp/http-base 6626596
#        (cd /tmp/http-base && cmake --preset release && cmake --build --preset release \
#           --target pacer-fake-provider http_sink_bench)
#        bench/http_sink_ab.sh /tmp/http-base/build/release 50000 64 7
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
cd "$PACER_ROOT"
a_build=${1:?usage: bench/http_sink_ab.sh A_BUILD_DIR [requests] [max_in_flight] [runs]}
requests=${2:-50000}
in_flight=${3:-64}
runs=${4:-7}
pacer_install_packages "${PACER_PACKAGES[@]}"
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)" --target pacer-fake-provider http_sink_bench >/dev/null
b_build=build/release
dir=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$dir"' EXIT

start_provider() {  # NAME BUILD: starts it, sets provider_pid and provider_port
  "$2/pacer-fake-provider" --port-file "$dir/$1.port" --threads "$in_flight" > "$dir/$1.log" 2>&1 &
  provider_pid=$!
  pids+=("$provider_pid")
  for _ in $(seq 1 100); do [ -s "$dir/$1.port" ] && break; sleep 0.05; done
  provider_port=$(cat "$dir/$1.port")
}
start_provider a "$a_build"; a_pid=$provider_pid; a_port=$provider_port
start_provider b "$b_build"; b_pid=$provider_pid; b_port=$provider_port

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

one_run() {  # BUILD PROVIDER_PID PORT: prints "requests/s client_us server_us"
  local before after out cpu
  before=$(ticks "$2")
  TIMEFORMAT='%U %S'
  { time "$1/bench/http_sink_bench" "http://127.0.0.1:$3/send/{recipient}" "$requests" "$in_flight" > "$dir/out"; } 2> "$dir/cpu"
  after=$(ticks "$2")
  out=$(sed 's/.*"requests_per_s": \([0-9]*\).*/\1/' "$dir/out")
  cpu=$(tail -1 "$dir/cpu")
  awk -v rps="$out" -v cpu="$cpu" -v n="$requests" -v t=$((after - before)) -v hz="$hz" 'BEGIN {
    split(cpu, c, " "); printf "%d %.1f %.1f\n", rps, (c[1] + c[2]) * 1e6 / n, t / hz * 1e6 / n }'
}

echo "| run | A req/s | B req/s | A client µs/req | B client µs/req | A server µs/req | B server µs/req |"
echo "|----:|--------:|--------:|----------------:|----------------:|----------------:|----------------:|"
for run in $(seq 1 "$runs"); do
  read -r ar ac as < <(one_run "$a_build" "$a_pid" "$a_port")
  read -r br bc bs < <(one_run "$b_build" "$b_pid" "$b_port")
  echo "| $run | $ar | $br | $ac | $bc | $as | $bs |"
  echo "$ar $br $ac $bc $as $bs" >> "$dir/all"
done
median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
am=$(cut -d' ' -f1 "$dir/all" | median); bm=$(cut -d' ' -f2 "$dir/all" | median)
echo
echo "median requests/s: A $am, B $bm, B/A $(awk -v a="$am" -v b="$bm" 'BEGIN {printf "%.2f", b / a}')"
echo "median client µs/request: A $(cut -d' ' -f3 "$dir/all" | median), B $(cut -d' ' -f4 "$dir/all" | median)"
echo "median server µs/request: A $(cut -d' ' -f5 "$dir/all" | median), B $(cut -d' ' -f6 "$dir/all" | median)"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
