#!/usr/bin/env bash
# Issue 6, live control: two pacerd processes in one consumer group, a real
# PostgreSQL and pacer-kafka-mock. pacerctl changes a campaign (set-rate,
# pause, resume) and a provider; both workers must apply each change from its
# NOTIFY, seconds before their periodic re-read (--refresh-ms 60000) could.
# Checked from the workers' `event=control_applied` lines (with the values
# they read) and, for the pause, from what they send: nothing more for the
# paused campaign. Then the LISTEN connections are killed on the server: each
# worker must say so, reconnect, keep sending, and apply the next change.
source "${PACER_SOURCE:?}/tests/support/pacerd_test.sh"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  pacer_stop_kafka_mock
  pacer_stop_postgres
  if [ -n "${PACER_KEEP:-}" ]; then echo "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
# fail (scripts/services.sh) shows these logs.
PACER_TEST_LOGS=("$tmp/w1.log" "$tmp/w2.log")
# Applying within this is well inside the 60 s refresh, and loose enough for a
# loaded machine or the sanitizer build.
limit_s=${LIVE_CONTROL_LIMIT_S:-5}

# both_apply WHAT PATTERN: both workers log control_applied matching PATTERN within limit_s.
both_apply() {
  local what=$1 pattern="event=control_applied $2"
  local t0 w
  t0=$(date +%s%N)
  for w in 1 2; do
    wait_for_line "$limit_s" "$tmp/w$w.log" "$pattern" ||
      fail "worker $w did not apply '$what' within ${limit_s}s (no line matching '$pattern')"
  done
  echo "$what: applied by both workers within $((($(date +%s%N) - t0) / 1000000)) ms of pacerctl's exit" \
    "($(grep -hE -- "$pattern" "$tmp/w1.log" "$tmp/w2.log" | grep -oE 'after_ms=[0-9.]+' | tr '\n' ' '))"
}
sent() { grep -c '^promo ' "$tmp/w$1.out" || true; }

pacer_start_postgres "$tmp/pg"
export PACER_POSTGRES=$PACER_PG
"$pacerd" migrate >/dev/null
"$pacerctl" provider create sms --rate 1000 >/dev/null
"$pacerctl" campaign create promo --rate 50 --provider sms >/dev/null
pacer_start_kafka_mock "$kafka_mock" "$tmp/kafka" --topic messages:4 --die-with-parent
# A backlog that lasts the whole test at these rates (each worker applies the
# rate on its own here: no --redis).
seq 1 6000 | awk '{ printf "promo:{\"n\":%d}\n", $1 }' | kcat -P -b "$PACER_KAFKA" -t messages -K:

for w in 1 2; do
  "$pacerd" --brokers "$PACER_KAFKA" --topic messages --no-migrate --sink stdout \
    --refresh-ms 60000 --session-timeout-ms 6000 --admin-listen 127.0.0.1:0 >"$tmp/w$w.out" 2>"$tmp/w$w.log" &
  pids+=($!)
done
for w in 1 2; do
  wait_for_line 30 "$tmp/w$w.log" "event=control_listening channel=pacer_control" || fail "worker $w is not listening"
done
# Both in the group and sending: each holds partitions of the backlog.
until_s=$(($(date +%s) + 40))
while [ "$(sent 1)" -eq 0 ] || [ "$(sent 2)" -eq 0 ]; do
  [ "$(date +%s)" -lt "$until_s" ] || fail "both workers should be sending promo (sent: $(sent 1), $(sent 2))"
  sleep 0.2
done

"$pacerctl" campaign set-rate promo 100 >/dev/null
both_apply set-rate "kind=campaign id=promo change=set-rate state=active send_rate=100 burst=2 "

"$pacerctl" campaign pause promo >/dev/null
both_apply pause "kind=campaign id=promo change=pause state=paused "
# Windows on purpose: 0.3 s for what was already handed to the sink to land,
# then 1.5 s in which a paused campaign must send nothing.
sleep 0.3
before1=$(sent 1) before2=$(sent 2)
sleep 1.5
[ "$(sent 1)" -eq "$before1" ] && [ "$(sent 2)" -eq "$before2" ] ||
  fail "a paused campaign kept sending: worker 1 $before1 -> $(sent 1), worker 2 $before2 -> $(sent 2)"

"$pacerctl" provider set-rate sms 500 >/dev/null
both_apply provider "kind=provider id=sms change=set-rate rate=500 burst=6 "

# Recipient rules reach both workers; a row whose rules cannot be read is
# skipped and named (the rest go on), and accepted again once mended.
"$pacerctl" campaign set-rules promo --cap 2/1h --cap-policy defer >/dev/null
both_apply set-rules "kind=campaign id=promo change=set-rules state=paused .*frequency_cap=2/1h cap_policy=defer "
psql "$PACER_PG" -q -c "UPDATE campaigns SET frequency_cap = '3/day' WHERE id = 'promo'" \
  -c "NOTIFY pacer_control, '{\"kind\":\"campaign\",\"id\":\"promo\",\"change\":\"set-rules\"}'"
for w in 1 2; do
  wait_for_line "$limit_s" "$tmp/w$w.log" 'event=row_skipped kind=campaign id=promo reason="frequency_cap: ' ||
    fail "worker $w did not skip promo's unreadable frequency_cap"
done
"$pacerctl" campaign set-rules promo --cap none >/dev/null
for w in 1 2; do
  wait_for_line "$limit_s" "$tmp/w$w.log" "event=row_accepted kind=campaign id=promo" ||
    fail "worker $w did not accept promo again"
done

# Kill both LISTEN connections on the server: each worker says so once,
# reconnects (and re-reads everything), and goes on.
killed=$(psql "$PACER_PG" -qAt -c "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                                    WHERE query = 'LISTEN \"pacer_control\"'")
[ "$killed" = 2 ] || fail "expected two LISTEN connections on the server, found $killed"
for w in 1 2; do
  wait_for_line "$limit_s" "$tmp/w$w.log" "event=control_listen_lost" || fail "worker $w did not notice the lost LISTEN"
  wait_for_line "$limit_s" "$tmp/w$w.log" "event=control_listening .*after_outage=true" || fail "worker $w did not reconnect"
  [ "$(grep -c 'event=control_listen_lost' "$tmp/w$w.log")" = 1 ] || fail "worker $w logged the loss more than once"
done

"$pacerctl" campaign resume promo >/dev/null
both_apply resume "kind=campaign id=promo change=resume state=active "
before1=$(sent 1) before2=$(sent 2)
until_ns=$(($(date +%s%N) + 1500000000))  # within 1.5 s
until [ "$(sent 1)" -gt "$before1" ] && [ "$(sent 2)" -gt "$before2" ]; do
  [ "$(date +%s%N)" -lt "$until_ns" ] ||
    fail "after resume both workers should send again: worker 1 $before1 -> $(sent 1), worker 2 $before2 -> $(sent 2)"
  sleep 0.05
done

# Nothing above came from the periodic re-read, and both are still running.
for w in 1 2; do
  kill -0 "${pids[$((w - 1))]}" 2>/dev/null || fail "worker $w died"
  if grep -q "event=directory_refresh_failed\|event=control_read_failed" "$tmp/w$w.log"; then
    fail "worker $w could not read the directory"
  fi
done
pacer_stop_workers || fail "a worker exited with an error on SIGTERM (above)"
echo PASS
