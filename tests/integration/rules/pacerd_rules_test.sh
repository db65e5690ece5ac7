#!/usr/bin/env bash
# Issue 16 end to end: quiet hours, frequency caps and priority classes through
# a real pacerd, on its own PostgreSQL, Redis and pacer-kafka-mock (loopback),
# delivering over HTTP to pacer-fake-provider --record. Judged by the provider's
# own record and the ledger, not by pacerd's counters:
#   a. quiet hours: a campaign quiet now in Etc/UTC and not in Asia/Tokyo; the
#      UTC messages never reach the provider and are parked with not_before,
#      the Tokyo ones are sent, a message for Mars/Olympus is a rejected row
#      naming the zone;
#   b. caps: --cap 2/1h suppress, 10 messages to 2 recipients: 4 at the
#      provider, 6 suppressed rows naming the cap, Redis keys with a TTL; the
#      same with a class cap (caps.classes transactional=2/1h);
#   c. a campaign whose priority_class is not configured (set in SQL) is
#      skipped and named (event=row_skipped), its messages never sent and
#      never given a ledger row.
source "${PACER_SOURCE:?}/tests/support/pacerd_test.sh"
fake_provider=${PACER_FAKE_PROVIDER:?}
daemon_pid=
PACER_PROVIDER_PID=
cleanup() {
  local p
  for p in $daemon_pid $PACER_PROVIDER_PID; do kill -9 "$p" 2>/dev/null || true; done
  pacer_stop_services "$tmp"
}
trap cleanup EXIT
PACER_TEST_LOGS=("$tmp/pacerd.log")  # fail (scripts/services.sh) shows it
q() { pacer_psql -c "$1"; }
rows() { q "SELECT count(*) FROM deliveries WHERE campaign = '$1' AND status = '$2'"; }
at_provider() { awk -v c="$1" '$2 == c && $4 == 200' "$tmp/requests.txt" | wc -l; }

# A window from the start of the previous UTC hour to two hours after this
# one: "now" is inside it in Etc/UTC; Tokyo (UTC+9, no DST) is 9 hours later.
now_s=$(date +%s)
h=$((10#$(TZ=Etc/UTC date -d "@$now_s" +%H)))
window=$(printf '%02d:00-%02d:00' $(((h + 23) % 24)) $(((h + 2) % 24)))
window_end_s=$(((now_s / 3600 + 2) * 3600))  # when the UTC messages may go
tokyo=$((10#$(TZ=Asia/Tokyo date -d "@$now_s" +%H)))
in_window() { local x=$(((($1 - h + 1) % 24 + 24) % 24)); [ "$x" -lt 3 ]; }
in_window "$h" || fail "the window $window does not cover the UTC hour $h"
! in_window "$tokyo" || fail "the window $window covers Tokyo's hour $tokyo"
echo "quiet window $window: UTC $(TZ=Etc/UTC date -d "@$now_s" +%H:%M) quiet, Tokyo $(TZ=Asia/Tokyo date -d "@$now_s" +%H:%M) open"

start_pacerd_test_services "$tmp" "$pacerd" "$kafka_mock" --topic messages:2
pacer_start_redis "$tmp/redis"
export PACER_BROKERS=$PACER_KAFKA
pacer_start_fake_provider "$fake_provider" "$tmp" --record "$tmp/requests.txt" || fail "the fake provider did not start"

"$pacerctl" provider create gw --rate 1000 >/dev/null
"$pacerctl" campaign create quiet --rate 100 --provider gw --quiet-hours "$window" --time-zone Europe/London >/dev/null
"$pacerctl" campaign create capped --rate 100 --provider gw --cap 2/1h --cap-policy suppress >/dev/null
"$pacerctl" campaign create classy --rate 100 --provider gw --class transactional >/dev/null
"$pacerctl" campaign create mystery --rate 100 --provider gw >/dev/null
q "UPDATE campaigns SET priority_class = 'platinum' WHERE id = 'mystery'"

produce() { "$pacerctl" produce --topic messages "$@" >/dev/null; }
produce --campaign quiet --count 10 --time-zones Etc/UTC,Asia/Tokyo
produce --campaign quiet --count 1 --tz Mars/Olympus --id-prefix mars-
produce --campaign capped --count 10 --recipients 2 --recipient-prefix cap-
produce --campaign classy --count 10 --recipients 2 --recipient-prefix cls-
produce --campaign mystery --count 5 --recipients 5

cat >"$tmp/pacerd.yaml" <<YAML
kafka:
  brokers: [$PACER_KAFKA]
  topics: [messages]
postgres:
  migrate: false
priority:
  classes: [critical, transactional, bulk]
  default_class: bulk
caps:
  redis: $PACER_REDIS
  classes: "transactional=2/1h"
  policy: suppress
sink:
  kind: http
  http:
    url: http://127.0.0.1:$PACER_PROVIDER_PORT/send/{campaign}
YAML
"$pacerd" --config "$tmp/pacerd.yaml" --admin-listen 127.0.0.1:0 --refresh-ms 200 >"$tmp/pacerd.log" 2>&1 &
daemon_pid=$!

# 5 Tokyo + 4 + 4 sent, 1 rejected, 6 + 6 suppressed: 26 rows.
for _ in $(seq 1 200); do
  [ "$(q "SELECT count(*) FROM deliveries")" -ge 26 ] && break
  kill -0 "$daemon_pid" 2>/dev/null || fail "pacerd exited"
  sleep 0.1
done
# Then, instead of a fixed pause, until pacerd's own figures account for all 36 messages produced (11
# quiet, 10 capped, 10 classy, 5 mystery): all read, none in the sink or awaiting the ledger, each in the
# ledger, parked, or held in pacerd's memory (pacer_buffered_messages); and after that, two more directory
# refreshes that skipped mystery again (pacer_directory_rows_skipped_total up by 2): nothing is left to go
# out but mystery's held messages, and a refresh that loaded the campaign is what would release them.
admin=$(pacer_admin_address "$tmp/pacerd.log") || fail "pacerd did not log its admin address"
figures() {
  pacer_metric_values "$admin" pacer_records_read_total pacer_unrecorded_messages pacer_buffered_messages \
    pacer_directory_rows_skipped_total
}
accounted_at=  # pacer_directory_rows_skipped_total when all 36 were first accounted for
for _ in $(seq 1 200); do
  read -r n_read unrecorded buffered skipped < <(figures)
  in_db=$(q "SELECT (SELECT count(*) FROM deliveries) + (SELECT count(*) FROM parked)")
  if [ "$n_read" -ge 36 ] && [ "$unrecorded" = 0 ] && [ $((in_db + buffered)) = 36 ]; then
    accounted_at=${accounted_at:-$skipped}
    [ "$skipped" -ge $((accounted_at + 2)) ] && break
  else
    accounted_at=
  fi
  kill -0 "$daemon_pid" 2>/dev/null || fail "pacerd exited"
  sleep 0.1
done
[ -n "$accounted_at" ] && [ "$skipped" -ge $((accounted_at + 2)) ] ||
  fail "pacerd never accounted for the 36 messages: read $n_read, unrecorded $unrecorded, buffered $buffered," \
    "$in_db in the ledger or parked; mystery skipped $skipped times"
grep -q "event=caps_connected redis=$PACER_REDIS" "$tmp/pacerd.log" || fail "the caps did not use the test's Redis"
wait_for_line 5 "$tmp/pacerd.log" 'event=row_skipped kind=campaign id=mystery .*platinum' ||
  fail "the campaign with class platinum was not skipped and named"
# Redis keys: one per recipient and scope, each with a TTL (at most the window).
redis() { redis-cli -h "${PACER_REDIS%:*}" -p "${PACER_REDIS##*:}" "$@"; }
for key in 'fc:{cap-0}:campaign:capped' 'fc:{cap-1}:campaign:capped' \
  'fc:{cls-0}:class:transactional' 'fc:{cls-1}:class:transactional'; do
  ttl=$(redis pttl "$key")
  [ "$ttl" -gt 0 ] && [ "$ttl" -le 3600000 ] || fail "Redis key $key: pttl $ttl, expected a TTL of at most 1 h"
done
parked_utc=$(q "SELECT count(*) FROM parked WHERE campaign = 'quiet' AND time_zone = 'Etc/UTC'
                AND extract(epoch FROM not_before) = $window_end_s")
parked_mystery=$(q "SELECT count(*) FROM parked WHERE campaign = 'mystery'")
trips=$(curl -sf "http://$admin/metrics" | awk '$1 == "pacer_cap_round_trips_total" { print $2 }')
[ -n "$trips" ] && [ "${trips%.*}" -ge 1 ] || fail "/metrics: pacer_cap_round_trips_total '$trips', expected at least 1"
kill -TERM "$daemon_pid"
wait "$daemon_pid" || fail "pacerd exited $? on SIGTERM"
daemon_pid=
pacer_stop_provider
PACER_TEST_LOGS+=("$tmp/requests.txt")

# a. quiet hours
[ "$(at_provider quiet)" = 5 ] || fail "quiet: $(at_provider quiet) requests at the provider, expected Tokyo's 5"
[ "$(rows quiet sent)" = 5 ] || fail "quiet: $(rows quiet sent) sent rows, expected 5"
[ "$parked_utc" = 5 ] || fail "quiet: $parked_utc UTC messages parked until $(date -u -d "@$window_end_s"), expected 5: $(
  q "SELECT time_zone, not_before FROM parked WHERE campaign = 'quiet'")"
[ "$(q "SELECT count(*) FROM deliveries WHERE campaign = 'quiet' AND status = 'rejected'
       AND message_id LIKE 'mars-%' AND reason LIKE '%unknown time zone ''Mars/Olympus''%'")" = 1 ] ||
  fail "quiet: no rejected row naming Mars/Olympus: $(q "SELECT status, reason FROM deliveries WHERE campaign = 'quiet' AND status <> 'sent'")"
# b. caps, the campaign's and the class's
for c in capped:campaign:capped classy:class:transactional; do
  id=${c%%:*} scope=${c#*:}
  [ "$(at_provider "$id")" = 4 ] || fail "$id: $(at_provider "$id") requests at the provider, expected 4 (2 recipients x 2)"
  [ "$(rows "$id" sent)" = 4 ] || fail "$id: $(rows "$id" sent) sent rows, expected 4"
  n=$(q "SELECT count(*) FROM deliveries WHERE campaign = '$id' AND status = 'suppressed' AND reason LIKE '%frequency cap $scope 2/1h%'")
  [ "$n" = 6 ] || fail "$id: $n suppressed rows naming $scope 2/1h, expected 6: $(q "SELECT reason FROM deliveries WHERE campaign = '$id' AND status <> 'sent' LIMIT 2")"
done
# c. the unknown class
[ "$(at_provider mystery)" = 0 ] || fail "mystery: $(at_provider mystery) requests at the provider"
[ "$(q "SELECT count(*) FROM deliveries WHERE campaign = 'mystery'")" = 0 ] ||
  fail "mystery: ledger rows for a campaign never loaded: $(q "SELECT status, reason FROM deliveries WHERE campaign = 'mystery'")"
# Its messages wait: parked, or held in memory with their offsets uncommitted.
held=$(sed -n 's/.*event=shutdown_flushed .*buffered_left=\([0-9]*\).*/\1/p' "$tmp/pacerd.log")
[ $((parked_mystery + ${held:-0})) = 5 ] ||
  fail "mystery: $parked_mystery parked and ${held:-?} held in memory at shutdown, expected its 5 messages waiting"
total=$(wc -l <"$tmp/requests.txt")
[ "$total" = 13 ] || fail "$total requests at the provider, expected 13"
echo "pacerd rules: all checks passed"
