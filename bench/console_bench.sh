#!/usr/bin/env bash
# What the operator console costs (issue 17). Starts its own PostgreSQL, Redis
# and pacer-kafka-mock, and one pacerd (null sink, global quota on Redis) with
# three campaigns sending at 700, 500 and 300 msg/s through one provider, then:
#  1. page weight: the bytes of every asset of /console/ (and of the API
#     documents a first load fetches);
#  2. time to the first complete render, from the browser's performance API
#     (the console marks `pacer-first-render` once the first state event is
#     drawn), in headless Chromium, RENDERS loads, median;
#  3. pacerd's CPU (utime + stime from /proc) and msg/s over WINDOW_S-second
#     windows with 50 Server-Sent-Event clients (curl -N) against none,
#     alternating A/B RUNS times in one run; medians; plus /healthz latency;
#  4. with CROWD=N (issue 25): the same A/B with N stream clients opened by
#     one script (each asks for /api/v1/events as a script does, keeps its
#     stream while it has one, and asks again 5 s after a 503, as Retry-After
#     says), plus pacerd's RSS, and in each B window a console opened in
#     headless Chromium after the crowd: seconds until its header says "live".
# Everything is on loopback, bounded in time, and stopped at the end.
#   bench/console_bench.sh [RUNS] [WINDOW_S] [CLIENTS]
#   CROWD=500 ONLY_CROWD=1 bench/console_bench.sh [RUNS] [WINDOW_S]   (part 4 only)
#   PACER_BENCH_PRESET=default bench/console_bench.sh ...   (default preset: release)
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
source "$(dirname "$0")/../scripts/services.sh"
cd "$PACER_ROOT"

runs=${1:-4}
window_s=${2:-20}
clients=${3:-50}
renders=${RENDERS:-7}
preset=${PACER_BENCH_PRESET:-release}

pacer_install_packages "${PACER_PACKAGES[@]}" curl >/dev/null
cmake --preset "$preset" -S "$PACER_ROOT" >/dev/null
cmake --build --preset "$preset" -j 2 --target pacerd pacerctl pacer-kafka-mock >/dev/null
bin=build/$preset

PACER_RUN_DIR=$(mktemp -d /tmp/pacer-console-bench-XXXXXX)
pid=
curls=()
stop_clients() {
  for c in "${curls[@]}"; do kill "$c" 2>/dev/null || true; done
  for c in "${curls[@]}"; do wait "$c" 2>/dev/null || true; done
  curls=()
}
crowd_pid=
stop_crowd() {
  [ -n "$crowd_pid" ] || return 0
  kill "$crowd_pid" 2>/dev/null || true
  wait "$crowd_pid" 2>/dev/null || true
  crowd_pid=
}
cleanup() {
  stop_crowd
  stop_clients
  [ -n "$pid" ] && { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
  pacer_stop_kafka_mock
  pacer_stop_redis
  pacer_stop_postgres
  rm -rf "$PACER_RUN_DIR"
}
trap cleanup EXIT

pacer_start_postgres "$PACER_RUN_DIR/pg"
export PACER_POSTGRES=$PACER_PG
"$bin/pacerd" migrate >/dev/null
pacer_start_redis "$PACER_RUN_DIR/redis"
pacer_start_kafka_mock "$bin/pacer-kafka-mock" "$PACER_RUN_DIR/kafka" --topic messages:8
"$bin/pacerctl" provider create sms --rate 2000 >/dev/null
# Enough messages for the whole run at these rates, spread over the 8
# partitions (the mock keeps at most 100,000 per partition).
seconds=$((runs * 2 * (window_s + 5) + 60 + renders * 3))
for spec in big:700 mid:500 small:300; do
  c=${spec%%:*} r=${spec##*:}
  n=$((r * seconds))
  "$bin/pacerctl" campaign create "$c" --rate "$r" --provider sms --total "$n" >/dev/null
  for p in $(seq 0 7); do
    awk -v c="$c" -v n=$((n / 8 + 1)) 'BEGIN { for (i = 0; i < n; i++) printf "%s:{\"to\":\"+1555%07d\"}\n", c, i }' |
      kcat -P -b "$PACER_KAFKA" -t messages -p "$p" -K: -X queue.buffering.max.messages=1000000
  done
done
token=bench-$$
"$bin/pacerd" --brokers "$PACER_KAFKA" --topic messages --no-migrate --sink null --redis "$PACER_REDIS" \
  --session-timeout-ms 6000 --admin-listen 127.0.0.1:0 --admin-token "$token" --admin-console-controls on \
  >/dev/null 2>"$PACER_RUN_DIR/pacerd.log" &
pid=$!
address=
for _ in $(seq 1 300); do
  address=$(grep -om1 'event=admin_listening address=[^ ]*' "$PACER_RUN_DIR/pacerd.log" | cut -d= -f3 || true)
  [ -n "$address" ] && break
  sleep 0.1
done
[ -n "$address" ] || { echo "pacerd did not start" >&2; tail "$PACER_RUN_DIR/pacerd.log" >&2; exit 1; }
base=http://$address
hz=$(getconf CLK_TCK)

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$pid/stat"; }
sent_total() { curl -sf "$base/metrics" | awk '/^pacer_campaign_sent_total/ { s += $2 } END { printf "%d", s }'; }
median() { sort -n | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else printf "%.6g\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
# window LABEL: CPU % of one core and msg/s of pacerd over window_s seconds, and /healthz latency.
window() {
  local t0 c0 s0 t1 c1 s1 lat=()
  t0=$(date +%s.%N) c0=$(cpu_ticks) s0=$(sent_total)
  local end=$(($(date +%s) + window_s))
  while [ "$(date +%s)" -lt "$end" ]; do
    lat+=("$(curl -s -o /dev/null -w '%{time_total}' "$base/healthz")")
    sleep 1
  done
  t1=$(date +%s.%N) c1=$(cpu_ticks) s1=$(sent_total)
  local cpu rate h
  cpu=$(awk -v a="$c0" -v b="$c1" -v t0="$t0" -v t1="$t1" -v hz="$hz" 'BEGIN { printf "%.2f", 100 * (b - a) / hz / (t1 - t0) }')
  rate=$(awk -v a="$s0" -v b="$s1" -v t0="$t0" -v t1="$t1" 'BEGIN { printf "%.0f", (b - a) / (t1 - t0) }')
  h=$(printf '%s\n' "${lat[@]}" | median)
  echo "$1 $cpu $rate $h"
}

rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status"; }

# 4. A crowd of CROWD stream clients from one script against none; a console
# opened after the crowd, timed until it is live.
crowd_part() {
  local crowd=$CROWD a=() b=() ar=() br=() live=() r side cpu rate h rss held
  cat >"$PACER_RUN_DIR/crowd.py" <<'PY'
import asyncio, sys
host, port, n, status = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
held = 0
async def client():
    global held
    while True:
        try:
            r, w = await asyncio.open_connection(host, port)
            w.write(f"GET /api/v1/events HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
            line = await r.readline()
            if b" 200 " in line:
                held += 1
                try:
                    while await r.read(65536):
                        pass
                finally:
                    held -= 1
            w.close()
        except OSError:
            pass
        await asyncio.sleep(5)  # Retry-After: 5
async def report():
    while True:
        with open(status, "w") as f:
            f.write(str(held))
        await asyncio.sleep(1)
async def main():
    await asyncio.gather(report(), *(client() for _ in range(n)))
asyncio.run(main())
PY
  cat >"$PACER_RUN_DIR/live.py" <<'PY'
import os, sys, tempfile, time
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
opts = webdriver.ChromeOptions()
opts.binary_location = "/usr/bin/chromium"
for a in ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
          "--disable-background-networking", "--disable-component-update", "--disable-sync",
          "--disable-dev-shm-usage", "--window-size=1366,768", f"--user-data-dir={tempfile.mkdtemp()}"]:
    opts.add_argument(a)
d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
try:
    d.get("about:blank")
    t0 = time.time()
    d.get(sys.argv[1] + "/console/")
    while time.time() - t0 < 60:
        if d.find_element(By.ID, "status").text.startswith("live"):
            break
        time.sleep(0.05)
    print(f"{time.time() - t0:.2f}" if d.find_element(By.ID, "status").text.startswith("live") else "never")
finally:
    d.quit()
PY
  for r in $(seq 1 "$runs"); do
    for side in A B; do
      [ $((r % 2)) = 0 ] && side=$([ "$side" = A ] && echo B || echo A)
      if [ "$side" = B ]; then
        /usr/bin/python3 "$PACER_RUN_DIR/crowd.py" "${address%:*}" "${address##*:}" "$crowd" "$PACER_RUN_DIR/held" &
        crowd_pid=$!
        sleep 5
        live+=("$(/usr/bin/python3 "$PACER_RUN_DIR/live.py" "$base")")
      else
        sleep 5
      fi
      read -r _ cpu rate h < <(window "$side")
      rss=$(rss_kb)
      held=$(cat "$PACER_RUN_DIR/held" 2>/dev/null || echo 0)
      if [ "$side" = B ]; then
        echo "crowd run $r B: ${cpu}% CPU, RSS ${rss} KB, ${rate} msg/s, /healthz ${h} s; $crowd clients, $held holding a stream; console live after ${live[-1]} s" >&2
        b+=("$cpu") br+=("$rss")
        stop_crowd
      else
        echo "crowd run $r A: ${cpu}% CPU, RSS ${rss} KB, ${rate} msg/s, /healthz ${h} s" >&2
        a+=("$cpu") ar+=("$rss")
      fi
    done
  done
  echo "preset $preset; crowd of $crowd stream clients from one script; $runs A/B runs of ${window_s} s; $(nproc) cores"
  echo "A (no stream clients): CPU % ${a[*]} -> median $(printf '%s\n' "${a[@]}" | median)%; RSS KB ${ar[*]} -> median $(printf '%s\n' "${ar[@]}" | median)"
  echo "B ($crowd stream clients): CPU % ${b[*]} -> median $(printf '%s\n' "${b[@]}" | median)%; RSS KB ${br[*]} -> median $(printf '%s\n' "${br[@]}" | median)"
  echo "a console opened after the crowd went live after (s): ${live[*]}"
}

# Before anything asks for the console: its refresher has not started.
sleep 12  # join the group (about 3 s on the mock) and reach the campaigns' rates
read -r _ cpu0 rate0 h0 < <(window never-opened)
echo "console never opened: pacerd CPU ${cpu0}% of a core, ${rate0} msg/s, /healthz ${h0} s" >&2

if [ -n "${CROWD:-}" ]; then
  crowd_part
fi
[ -n "${ONLY_CROWD:-}" ] && exit 0

# 1. Page weight.
assets=0
for a in "" console.js console.css favicon.svg; do
  n=$(curl -sf -o /dev/null -w '%{size_download}' "$base/console/$a")
  assets=$((assets + n))
done
api=0
for a in meta history state; do
  n=$(curl -sf -o /dev/null -w '%{size_download}' "$base/api/v1/$a")
  api=$((api + n))
done
gz=0
for a in "" console.js console.css favicon.svg; do
  n=$(curl -sf "$base/console/$a" | gzip -9 | wc -c)
  gz=$((gz + n))
done

# 2. Time to the first complete render.
render_ms=$(CONSOLE_BASE=$base RENDERS=$renders TMPDIR=$PACER_RUN_DIR /usr/bin/python3 - <<'PY'
import os, statistics, tempfile, time
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
opts = webdriver.ChromeOptions()
opts.binary_location = "/usr/bin/chromium"
for a in ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
          "--disable-background-networking", "--disable-component-update", "--disable-sync",
          "--disable-dev-shm-usage", "--window-size=1500,1100", f"--user-data-dir={tempfile.mkdtemp()}"]:
    opts.add_argument(a)
d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
times = []
try:
    for i in range(int(os.environ["RENDERS"])):
        d.get("about:blank")
        d.get(os.environ["CONSOLE_BASE"] + "/console/")
        end = time.time() + 15
        t = None
        while time.time() < end and t is None:
            t = d.execute_script("const m = performance.getEntriesByName('pacer-first-render'); return m.length ? m[0].startTime : null;")
            time.sleep(0.05)
        times.append(t)
finally:
    d.quit()
print(" ".join(f"{t:.0f}" for t in times))
PY
)
render_median=$(tr ' ' '\n' <<<"$render_ms" | median)

# 3. CPU with CLIENTS event streams against none, alternating.
a_cpu=() b_cpu=() a_rate=() b_rate=() a_h=() b_h=()
for r in $(seq 1 "$runs"); do
  for side in A B; do
    [ $((r % 2)) = 0 ] && side=$([ "$side" = A ] && echo B || echo A)  # alternate which goes first
    if [ "$side" = B ]; then
      for _ in $(seq 1 "$clients"); do
        curl -sN --max-time $((window_s + 30)) "$base/api/v1/events" >/dev/null 2>&1 &
        curls+=($!)
      done
      sleep 3
    else
      sleep 3
    fi
    read -r _ cpu rate h < <(window "$side")
    echo "run $r $side: ${cpu}% CPU, ${rate} msg/s, /healthz median ${h} s$([ "$side" = B ] && echo " ($clients streams)")" >&2
    if [ "$side" = B ]; then
      b_cpu+=("$cpu") b_rate+=("$rate") b_h+=("$h")
      stop_clients
    else
      a_cpu+=("$cpu") a_rate+=("$rate") a_h+=("$h")
    fi
  done
done
grep -q 'event=console ' "$PACER_RUN_DIR/pacerd.log" || { echo "no console line" >&2; exit 1; }

echo "preset $preset; 3 campaigns at 700 + 500 + 300 msg/s through one provider (null sink, --redis); $(nproc) cores"
echo "page weight: $((assets)) bytes of assets ($(awk -v b="$assets" 'BEGIN { printf "%.1f", b / 1024 }') KB; $(awk -v b="$gz" 'BEGIN { printf "%.1f", b / 1024 }') KB gzip -9, served uncompressed), first-load API documents $(awk -v b="$api" 'BEGIN { printf "%.1f", b / 1024 }') KB (meta + history + state)"
echo "first complete render: median $render_median ms over $renders loads (each: $render_ms ms)"
echo "console never opened (one window before the rest): ${cpu0}% CPU, ${rate0} msg/s"
echo "A (no event streams; refresher at its idle cadence): CPU % ${a_cpu[*]} -> median $(printf '%s\n' "${a_cpu[@]}" | median)%; msg/s median $(printf '%s\n' "${a_rate[@]}" | median); /healthz median $(printf '%s\n' "${a_h[@]}" | median) s"
echo "B ($clients event streams): CPU % ${b_cpu[*]} -> median $(printf '%s\n' "${b_cpu[@]}" | median)%; msg/s median $(printf '%s\n' "${b_rate[@]}" | median); /healthz median $(printf '%s\n' "${b_h[@]}" | median) s"
