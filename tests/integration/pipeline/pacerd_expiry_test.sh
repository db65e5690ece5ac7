#!/usr/bin/env bash
# Issue 26, expiry, end to end: a real pacerd with the Redis quota, its own
# PostgreSQL and pacer-kafka-mock, delivering over HTTP to
# pacer-fake-provider --record. Judged by the provider's own record and the
# ledger, not by pacerd's counters:
#   a. campaign otp (paused) has one token, the next in 1000 s (0.001/s,
#      burst 1): otp-late carries pacer-expires-at 3 s ahead and otp-keep none.
#      otp-late's deadline passes while the campaign is paused: an `expired`
#      row naming the deadline, never at the provider. After resume otp-keep
#      is sent within seconds, which it could not be had otp-late spent the
#      one token;
#   b. campaign ttl (paused, --ttl 2s, the same one token): its two messages
#      expire by the campaign's lifetime; a message produced after resume is
#      sent at once (the token is still there);
#   c. a garbage pacer-expires-at is a rejected row naming the header.
set -euo pipefail
pacerd=${PACERD:?}
pacerctl=${PACERCTL:?}
kafka_mock=${PACER_KAFKA_MOCK:?}
fake_provider=${PACER_FAKE_PROVIDER:?}
source "${PACER_SOURCE:?}/scripts/services.sh"
tmp=$(mktemp -d)
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
status_of() { q "SELECT coalesce((SELECT status FROM deliveries WHERE message_id = '$1'), 'none')"; }
# wait_status ID STATUS SECONDS: until the ledger holds ID with STATUS.
wait_status() {
  local _
  for _ in $(seq 1 $(($3 * 10))); do
    [ "$(status_of "$1")" = "$2" ] && return 0
    kill -0 "$daemon_pid" 2>/dev/null || fail "pacerd exited"
    sleep 0.1
  done
  fail "$1: ledger status '$(status_of "$1")' after $3 s, expected $2"
}
# produce CAMPAIGN ID [pacer-expires-at value]: one record through kcat, with headers.
produce() {
  local args=(-P -b "$PACER_KAFKA" -t messages -k "$1" -H "message-id=$2" -H "recipient=+4915100000$RANDOM")
  [ $# -ge 3 ] && args+=(-H "pacer-expires-at=$3")
  printf '{"id":"%s"}\n' "$2" | kcat "${args[@]}"
}

start_pacerd_test_services "$tmp" "$pacerd" "$kafka_mock" --topic messages:1
pacer_start_redis "$tmp/redis"
pacer_start_fake_provider "$fake_provider" "$tmp" --record "$tmp/requests.txt" || fail "the fake provider did not start"

"$pacerctl" provider create gw --rate 1000 >/dev/null
"$pacerctl" campaign create otp --rate 0.001 --burst 1 --provider gw >/dev/null
"$pacerctl" campaign create ttl --rate 0.001 --burst 1 --provider gw --ttl 2s >/dev/null
"$pacerctl" campaign show ttl | grep -q 'default_ttl.*2s' || fail "campaign show does not say the lifetime 2s"
"$pacerctl" campaign pause otp >/dev/null
"$pacerctl" campaign pause ttl >/dev/null

"$pacerd" --brokers "$PACER_KAFKA" --topic messages --no-migrate --redis "$PACER_REDIS" --sink http \
  --http-url "http://127.0.0.1:$PACER_PROVIDER_PORT/send/{campaign}" --refresh-ms 200 \
  --session-timeout-ms 6000 --admin-listen 127.0.0.1:0 >"$tmp/pacerd.log" 2>&1 &
daemon_pid=$!
wait_for_line 30 "$tmp/pacerd.log" "event=admin_listening" || fail "pacerd did not start"
admin=$(sed -n 's/.*event=admin_listening address=\([^ ]*\).*/\1/p' "$tmp/pacerd.log")

deadline_ms=$(($(date +%s%3N) + 3000))
produce otp otp-late "$deadline_ms"
produce otp otp-keep
produce otp otp-bad soon
produce ttl ttl-1
produce ttl ttl-2
# The partition is read once the group has joined (about 3 s on the mock).
wait_status otp-bad rejected 30
reason=$(q "SELECT reason FROM deliveries WHERE message_id = 'otp-bad'")
[[ $reason == *"undecodable pacer-expires-at header"* ]] || fail "otp-bad's reason '$reason' does not name the header"
wait_status ttl-1 expired 15
wait_status ttl-2 expired 5
wait_status otp-late expired 15
deadline_text=$(date -u -d "@$((deadline_ms / 1000))" +%Y-%m-%dT%H:%M:%S).$(printf '%03d' $((deadline_ms % 1000)))Z
reason=$(q "SELECT reason FROM deliveries WHERE message_id = 'otp-late'")
[[ $reason == *"deadline $deadline_text"* ]] || fail "otp-late's reason '$reason' does not name its deadline $deadline_text"
[ "$(status_of otp-keep)" = none ] || fail "otp-keep has a row while its campaign is paused"
expired_metric=$(curl -sf "http://$admin/metrics" |
  awk '$1 ~ /^pacer_campaign_expired_total\{/ && $1 ~ /campaign="otp"/ { print $2 }')
[ "${expired_metric%.*}" = 1 ] || fail "pacer_campaign_expired_total for otp is '$expired_metric', expected 1"

# Resumed: the one token of each campaign is still there.
"$pacerctl" campaign resume otp >/dev/null
"$pacerctl" campaign resume ttl >/dev/null
produce ttl ttl-fresh
wait_status otp-keep sent 15
wait_status ttl-fresh sent 15

kill -TERM "$daemon_pid"
wait "$daemon_pid" || fail "pacerd exited $? on SIGTERM"
daemon_pid=
pacer_stop_provider
PACER_TEST_LOGS+=("$tmp/requests.txt")
at_provider() { awk -v id="$1" '$3 == id' "$tmp/requests.txt" | wc -l; }
for id in otp-late ttl-1 ttl-2 otp-bad; do
  [ "$(at_provider "$id")" = 0 ] || fail "$id reached the provider"
done
for id in otp-keep ttl-fresh; do
  [ "$(at_provider "$id")" = 1 ] || fail "$id reached the provider $(at_provider "$id") times, expected once"
done
# The provider's record of the Pacer-Expires-At header: none for otp-keep, ttl-fresh's deadline.
expires_at() { awk -v id="$1" '$3 == id { print $5 }' "$tmp/requests.txt"; }
[ "$(expires_at otp-keep)" = - ] || fail "otp-keep arrived with Pacer-Expires-At '$(expires_at otp-keep)'"
[[ $(expires_at ttl-fresh) =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z$ ]] ||
  fail "ttl-fresh arrived with Pacer-Expires-At '$(expires_at ttl-fresh)', expected its deadline"
[ "$(q "SELECT count(*) FROM deliveries WHERE status = 'expired'")" = 3 ] || fail "expected 3 expired rows"
echo "expired: otp-late (header), ttl-1 and ttl-2 (campaign lifetime), none at the provider;" \
  "otp-keep and ttl-fresh sent with the one token each campaign had"
