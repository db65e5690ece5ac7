#!/usr/bin/env bash
# Seed 003's comparison, reproduced with pacer-sim: for each algorithm one
# campaign at send_rate 1000 with 10,000 messages, once with a free sink and
# once with the sink stalled from 4 s to 6 s. Writes 100 ms-bin CSVs and a chart:
#   bench/results/compare_nostall.csv, compare_stall.csv, compare.png
# Usage: bench/compare_algorithms.sh [path/to/pacer-sim]
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
cd "$PACER_ROOT"
pacer_install_packages "${PACER_PACKAGES[@]}" jq gnuplot-nox
sim=${1:-}
if [ -z "$sim" ]; then
  pacer_build release >/dev/null
  sim=build/release/pacer-sim
fi
out=bench/results
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
algorithms=(token_bucket leaky_bucket fixed_window sliding_log sliding_window)

for variant in nostall stall; do
  stalls='[]'
  [ "$variant" = stall ] && stalls='[{from_s: 4, to_s: 6}]'
  for a in "${algorithms[@]}"; do
    cat > "$tmp/$a.yaml" <<YAML
duration_s: 14
tick_ms: 10
algorithm: $a
window_s: 1
stalls: $stalls
campaigns: [{id: c, rate: 1000, burst: 100, messages: 10000}]
YAML
    "$sim" "$tmp/$a.yaml" --bins --out "$tmp/$a.json"
    # Ten 10 ms ticks per 100 ms bin.
    jq -r '.campaigns.c.bins | [range(0; length; 10) as $i | .[$i:$i+10] | add] | .[]' "$tmp/$a.json" > "$tmp/$a.col"
  done
  {
    echo "time_s,${algorithms[*]}" | tr ' ' ','
    n=$(wc -l < "$tmp/token_bucket.col")
    (cd "$tmp" && paste -d, token_bucket.col leaky_bucket.col fixed_window.col sliding_log.col sliding_window.col) |
      awk -F, -v OFS=, '{ printf "%.1f,%s\n", (NR-1)/10, $0 }' | head -n "$n"
  } > "$out/compare_$variant.csv"
done

gnuplot <<GP
set terminal pngcairo size 1400,900 font ",11" noenhanced
set output "$out/compare.png"
set datafile separator ","
set multiplot layout 2,1 title "Pacer limiters, send_rate 1000/s, 10,000 messages, sends per 100 ms (seed 003's experiment)"
set key outside right
set xlabel "time (s)"
set ylabel "messages per 100 ms"
set xrange [0:14]
set yrange [0:*]
set title "free sink"
plot for [i=2:6] "$out/compare_nostall.csv" using 1:i with steps lw 2 title columnheader(i)
set title "sink stalled from 4 s to 6 s"
plot for [i=2:6] "$out/compare_stall.csv" using 1:i with steps lw 2 title columnheader(i)
unset multiplot
GP
echo "wrote $out/compare_nostall.csv $out/compare_stall.csv $out/compare.png"
