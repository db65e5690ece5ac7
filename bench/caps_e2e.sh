#!/usr/bin/env bash
# Frequency caps end to end (issue 16): one pacerd worker (release build), one
# campaign at send_rate 5,000/s capped per recipient (--cap 1/24h suppress by
# default), MESSAGES to RECIPIENTS recipients (pacerctl produce --recipients:
# message i goes to recipient-(i mod RECIPIENTS)) produced at PRODUCE_RATE
# (6,500/s) while pacerd runs: librdkafka's mock keeps only about 5 MB (~40,000
# of these messages) per partition and drops the oldest, read or not, so a
# backlog of 300,000 produced beforehand would mostly be lost. Caps
# counted in a real Redis; real PostgreSQL, the Kafka mock, and a fast sink:
# pacer-fake-provider without a window (SINK=provider, the default) or the
# null sink (SINK=null). Reports:
#   - cap round trips per message: the summary's cap_round_trips over the
#     messages checked (sent + suppressed); the issue's target is <= 0.1;
#   - messages/s: the provider's record (first to last accepted request) and
#     pacerd's summary (sent_per_s over its sending span);
#   - Redis memory per recipient: INFO used_memory after minus before, over
#     the distinct recipients (DBSIZE: one key per recipient and scope);
#   - recipients over their cap by an independent count: the record's
#     Idempotency-Key is the message id m-<i>, so its recipient is i mod
#     RECIPIENTS (with SINK=null: the ledger's sent rows, same mapping).
#
#   bench/caps_e2e.sh
#   MESSAGES=300000 RECIPIENTS=200000 CAP=1/24h RATE=5000 PRODUCE_RATE=6500 SINK=provider PACER_KEEP=1 bench/caps_e2e.sh
#   PACERD_ARGS="--park-keep-s 60" bench/caps_e2e.sh     more pacerd flags (word-split)
#   BURST=500 bench/caps_e2e.sh                           the campaign's burst (default: pacerctl's)
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
source "$(dirname "$0")/../scripts/services.sh"
cd "$PACER_ROOT"

messages=${MESSAGES:-300000}
recipients=${RECIPIENTS:-200000}
cap=${CAP:-1/24h}
limit=${cap%%/*}
rate=${RATE:-5000}
produce_rate=${PRODUCE_RATE:-6500}
burst=${BURST:-}  # empty: pacerctl's default, ceil(rate / 100) + 1 (10 ms of the rate)
sink=${SINK:-provider}

pacer_install_packages "${PACER_PACKAGES[@]}" jq >/dev/null
echo "building the release preset (four programs)..."
pacer_build release pacerd pacerctl pacer-kafka-mock pacer-fake-provider >/dev/null
bin=build/release

PACER_RUN_DIR=$(mktemp -d /tmp/pacer-caps-XXXXXX)
pids=()  # the one pacerd, for pacer_bench_cleanup
trap pacer_bench_cleanup EXIT
run=$PACER_RUN_DIR

pacer_bench_services "$bin" --topic "messages:8"
export PACER_BROKERS=$PACER_KAFKA
redis() { redis-cli -h "${PACER_REDIS%:*}" -p "${PACER_REDIS##*:}" "$@"; }
used_memory() { redis info memory | tr -d '\r' | sed -n 's/^used_memory:\([0-9]*\)$/\1/p'; }

sink_args=(--sink null)
if [ "$sink" = provider ]; then
  pacer_start_fake_provider "$bin/pacer-fake-provider" "$run" --record "$run/requests.txt"
  sink_args=(--sink http --http-url "http://127.0.0.1:$PACER_PROVIDER_PORT/send/{campaign}" --in-flight 200)
fi
"$bin/pacerctl" provider create gw --rate unlimited >/dev/null
"$bin/pacerctl" campaign create capped --rate "$rate" ${burst:+--burst "$burst"} --provider gw --cap "$cap" \
  --cap-policy suppress >/dev/null
before=$(used_memory)

echo "caps_e2e: 1 worker, campaign at $rate/s (burst ${burst:-default}), cap $cap suppress, sink $sink, $messages messages to $recipients" \
  "recipients produced at $produce_rate/s, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
"$bin/pacerd" --brokers "$PACER_KAFKA" --topic messages --no-migrate --caps-redis "$PACER_REDIS" "${sink_args[@]}" \
  --summary "$run/summary.json" --admin-listen 127.0.0.1:0 ${PACERD_ARGS:-} >"$run/pacerd.log" 2>&1 &
daemon_pid=$!
pids=("$daemon_pid")
wait_for_line 60 "$run/pacerd.log" 'event=assigned' || { echo "pacerd was not assigned a partition"; exit 1; }
"$bin/pacerctl" produce --topic messages --campaign capped --count "$messages" --recipients "$recipients" \
  --rate "$produce_rate" --id-prefix m- >"$run/produce.txt"
cat "$run/produce.txt"
! grep -q 'event=assigned .* from=[1-9]' "$run/pacerd.log" || { echo "pacerd started mid-log: $(grep event=assigned "$run/pacerd.log")"; exit 1; }
deadline=$(($(date +%s) + messages / 1000 + 120))
until [ "$(pacer_psql -c "SELECT count(*) FROM deliveries")" -ge "$messages" ] || [ "$(date +%s)" -ge "$deadline" ]; do
  kill -0 "$daemon_pid" 2>/dev/null || { tail -20 "$run/pacerd.log"; exit 1; }
  sleep 1
done
after=$(used_memory)
keys=$(redis dbsize)
sample=$(redis randomkey)
sample_ttl=$(redis pttl "$sample")
kill -TERM "$daemon_pid"
wait "$daemon_pid" || echo "pacerd exited $?"
pids=()
if [ "$sink" = provider ]; then
  pacer_stop_provider
  # "ms campaign key status": message m-<i> went to recipient i mod N.
  awk '$4 == 200 { print $1, $3 }' "$run/requests.txt" >"$run/accepted.txt"
else
  pacer_psql -c "SELECT 0, message_id FROM deliveries WHERE status = 'sent'" | tr '|' ' ' >"$run/accepted.txt"
fi
pacer_psql -c "SELECT message_id FROM deliveries WHERE status = 'suppressed'" >"$run/suppressed.txt"

s() { jq -r "$1" "$run/summary.json"; }
checked=$(($(s .sent) + $(s .suppressed)))
echo
echo "## pacerd (summary JSON)"
echo "read $(s .read), sent $(s .sent), suppressed $(s .suppressed), rejected $(s .rejected), failed $(s .failed)"
echo "cap round trips $(s .cap_round_trips) (faults $(s .cap_faults)) for $checked messages checked:" \
  "$(echo "scale=4; $(s .cap_round_trips) / $checked" | bc) round trips per message (target <= 0.1)"
echo "sent_per_s $(s .sent_per_s | xargs printf '%.0f') over a sending span of $(s .sending_s | xargs printf '%.1f') s;" \
  "parked $(s .parked) (PostgreSQL), deferred $(s .deferred)"
echo
echo "## ledger"
pacer_psql -c "SELECT status, count(*) FROM deliveries GROUP BY status ORDER BY status" | tr '|' ' '
echo
echo "## independent count ($([ "$sink" = provider ] && echo "the provider's record" || echo "the ledger's sent rows"), recipient = index mod $recipients)"
awk -v n="$recipients" -v limit="$limit" -v sup="$run/suppressed.txt" -v timed="$([ "$sink" = provider ] && echo 1)" '
  { id = $2; i = substr(id, 3) + 0; r = i % n; sent[r]++; keys[id]++; total++
    if (timed) { t = $1 + 0; if (first == "" || t < first) first = t; if (t > last) last = t } }
  END {
    while ((getline id < sup) > 0) { i = substr(id, 3) + 0; r = i % n; supp[r]++; suppressed++ }
    for (k in keys) { distinct++; if (keys[k] > 1) dup += keys[k] - 1 }
    for (r in sent) { got++; if (sent[r] > limit) over++; if (sent[r] > most) most = sent[r] }
    for (r in supp) if (sent[r] < limit) early++
    printf "accepted %d (distinct message ids %d, duplicates %d) for %d recipients\n", total, distinct, dup + 0, got
    printf "recipients over their cap of %d: %d (most sends to one recipient: %d)\n", limit, over + 0, most
    printf "suppressed %d; recipients suppressed before reaching the cap: %d\n", suppressed, early + 0
    if (timed && last > first) printf "provider: %.0f messages/s accepted (first to last of %d over %.1f s)\n", (total - 1) * 1000 / (last - first), total, (last - first) / 1000
  }' "$run/accepted.txt"
echo
echo "## Redis"
echo "used_memory before $before, after $after; keys (DBSIZE) $keys; $(echo "scale=1; ($after - $before) / $keys" | bc) bytes per recipient"
echo "example key $sample, PTTL $sample_ttl ms"
