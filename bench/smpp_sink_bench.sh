#!/usr/bin/env bash
# SMPP sink throughput, issue 14's goal: one sink, one bind, window 100,
# against a local pacer-fake-smsc: >= 5,000 submit_sm/s, and the CPU it
# takes per 1,000 PDUs. Starts pacer-fake-smsc on a free loopback port (its
# own process, so its CPU is measured apart, with /usr/bin/time), and runs:
#   1. answers at once: three runs without receipts, one with a receipt per message;
#   2. every submit_sm_resp 10 ms late (an SMSC across a network): the window
#      bounds the rate at about window / 10 ms.
# Bounded: each run stops after its messages or 120 s.
# Usage: bench/smpp_sink_bench.sh [messages] [window]
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
cd "$PACER_ROOT"
pacer_install_packages "${PACER_PACKAGES[@]}"
cmake --preset release -S "$PACER_ROOT" >/dev/null
cmake --build build/release --target smpp_sink_bench pacer-fake-smsc -j 2 >/dev/null
n=${1:-200000}
window=${2:-100}
dir=$(mktemp -d)
smsc=
trap '[ -n "$smsc" ] && kill "$smsc" 2>/dev/null; rm -rf "$dir"' EXIT

# start_smsc NAME [flags...]: pacer-fake-smsc under /usr/bin/time; sets $smsc and $port.
start_smsc() {
  local name=$1
  shift
  rm -f "$dir/port"
  /usr/bin/time -f '{"fake_smsc_cpu_user_s": %U, "fake_smsc_cpu_sys_s": %S}' -o "$dir/$name.time" \
    build/release/pacer-fake-smsc --account bench:bench --window "$window" \
    --port-file "$dir/port" --report "$dir/$name.json" "$@" >"$dir/$name.log" 2>&1 &
  for _ in $(seq 1 100); do [ -s "$dir/port" ] && break; sleep 0.05; done
  port=$(cat "$dir/port")
  smsc=$(pgrep -P $! -x pacer-fake-smsc)  # the fake itself, not /usr/bin/time
}
stop_smsc() {
  local name=$1
  kill "$smsc"
  while kill -0 "$smsc" 2>/dev/null; do sleep 0.05; done
  smsc=
  sleep 0.2  # /usr/bin/time writes its line after the fake exits
  echo "fake SMSC ($name): $(cat "$dir/$name.time") $(perl -MJSON::PP -e 'local $/; my $r = decode_json(<STDIN>)->{accounts}{bench};
    print encode_json({map { $_ => $r->{$_} } qw(submits accepted throttled window_exceeded receipts_acked)})' \
    <"$dir/$name.json")"
}

echo "== SMSC answers at once"
start_smsc immediate
for run in 1 2 3; do build/release/bench/smpp_sink_bench "$port" "$n" "$window" 1 0; done
build/release/bench/smpp_sink_bench "$port" "$n" "$window" 1 1
stop_smsc immediate

echo "== SMSC answers each submit_sm 10 ms late"
start_smsc delayed --response-delay-ms 10
build/release/bench/smpp_sink_bench "$port" 50000 "$window" 1 0
stop_smsc delayed
