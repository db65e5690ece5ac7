#!/usr/bin/env bash
# What one `pacerctl top` frame costs against a large ledger: 4 campaigns ×
# ROWS ledger rows each (recorded over the last hour), then RUNS timings of
# `pacerctl top --once`, which counts every campaign's rows in full (a live
# `top` does this once, then reads only the rows recorded since its previous
# refresh). Prints each run's wall time and the median.
#   bench/top_refresh.sh [ROWS] [RUNS]        (defaults 1000000 and 5)
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
source "$(dirname "$0")/../scripts/services.sh"
cd "$PACER_ROOT"
rows=${1:-1000000}
runs=${2:-5}
preset=${PACER_BENCH_PRESET:-release}
pacer_install_packages "${PACER_PACKAGES[@]}" >/dev/null
pacer_build "$preset" >/dev/null
bin=$PACER_ROOT/build/$preset
tmp=$(mktemp -d)
trap 'pacer_stop_postgres; rm -rf "$tmp"' EXIT
pacer_start_postgres "$tmp/pg"
export PACER_POSTGRES=$PACER_PG
"$bin/pacerd" migrate >/dev/null
"$bin/pacerctl" provider create sms --rate 1000 >/dev/null
for c in c1 c2 c3 c4; do
  "$bin/pacerctl" campaign create "$c" --rate 100 --provider sms --total $((rows * 2)) >/dev/null
  pacer_psql -c "INSERT INTO deliveries (message_id, campaign, topic, kafka_partition, kafka_offset, status, recorded_at)
    SELECT '$c-' || i, '$c', 'messages', 0, i, CASE WHEN i % 100 = 0 THEN 'failed' ELSE 'sent' END,
           now() - make_interval(secs => 3600.0 * i / $rows)
    FROM generate_series(1, $rows) AS i" >/dev/null
done
pacer_psql -c "ANALYZE deliveries" >/dev/null
echo "ledger: $(pacer_psql -c 'SELECT count(*) FROM deliveries') rows over 4 campaigns"
times=()
for r in $(seq 1 "$runs"); do
  t0=$(date +%s%N)
  "$bin/pacerctl" top --once >/dev/null
  t=$((($(date +%s%N) - t0) / 1000000))
  times+=("$t")
  echo "run $r: top --once ${t} ms"
done
printf '%s\n' "${times[@]}" | sort -n | awk '{ a[NR] = $1 } END { print "median: " a[int((NR + 1) / 2)] " ms" }'
