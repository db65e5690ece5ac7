#!/usr/bin/env bash
# Issue 25: the cluster's 429/5xx/retry counts survive a worker's restart and
# equal what the provider answered. pacer-fake-provider takes 20/s (429 above)
# and answers 25% of the rest 500; worker A sends part of a campaign and is
# stopped, worker B (a new process: its own counters start at 0) sends the
# rest. Once every message has its ledger row, the provider's record of its
# answers is compared with B's state document: the provider's cluster
# throttled and 5xx counts are the record's 429s and 500s (A's included), and
# the campaign's retries are every 429 and 500 that did not end a message.
# The provider's health verdict is the same in top --admin and the state
# document. Then "limited by" reaches done, no_input and paused on real campaigns.
source "${PACER_SOURCE:?}/tests/support/pacerd_test.sh"
fake_provider=${PACER_FAKE_PROVIDER:?}
pid=
PACER_PROVIDER_PID=
cleanup() { pacer_test_cleanup "$tmp" "$pid" "$PACER_PROVIDER_PID"; }
trap cleanup EXIT
PACER_TEST_LOGS=("$tmp/pacerd-a.log" "$tmp/pacerd-b.log" "$tmp/provider.log")
python=/usr/bin/python3
total=300  # a third: no percentage ends in exactly .x5, where roundings differ

start_pacerd_test_services "$tmp" "$pacerd" "$kafka_mock" --topic messages:2
pacer_start_redis "$tmp/redis"
pacer_start_fake_provider "$fake_provider" "$tmp" --quota 20 --retry-after 1 --fail-rate 0.25 --fail-status 500 \
  --record "$tmp/record.txt"
"$pacerctl" provider create push --rate 40 >/dev/null
"$pacerctl" campaign create c --rate 40 --provider push --total 0 >/dev/null  # produce adds its count
"$pacerctl" produce --brokers "$PACER_KAFKA" --topic messages --campaign c --count "$total" >/dev/null

start_worker() {
  "$pacerd" --brokers "$PACER_KAFKA" --topic messages --no-migrate --session-timeout-ms 6000 --redis "$PACER_REDIS" \
    --sink http --http-url "http://127.0.0.1:$PACER_PROVIDER_PORT/send/{campaign}" \
    --admin-listen 127.0.0.1:0 >/dev/null 2>"$tmp/pacerd-$1.log" &
  pid=$!
  address=$(pacer_admin_address "$tmp/pacerd-$1.log") || fail "pacerd $1 did not log its admin address"
}
finished() {
  pacer_psql -c "SELECT count(*) FROM deliveries WHERE campaign = 'c'"
}
# FIELD of campaign or provider ID in the state document (JSON): "providers push cluster".
state_field() {
  curl -sf "http://$address/api/v1/state" | "$python" -c '
import json, sys
kind, id, field = sys.argv[1:]
for x in json.load(sys.stdin)[kind]:
    if x["id"] == id:
        print(json.dumps(x[field], sort_keys=True))' "$@"
}

# Worker A: a quarter of the messages, then stopped.
start_worker a
for _ in $(seq 1 600); do
  [ "$(finished)" -ge $((total / 4)) ] && break
  sleep 0.1
done
[ "$(finished)" -ge $((total / 4)) ] || fail "worker A finished only $(finished) messages"
kill -TERM "$pid"
wait "$pid" || fail "pacerd A exited with $? on SIGTERM"
pid=
before=$(finished)

# Worker B: the rest.
start_worker b
for _ in $(seq 1 1200); do
  [ "$(finished)" -ge "$total" ] && break
  sleep 0.1
done
[ "$(finished)" -ge "$total" ] || fail "only $(finished) of $total messages have a ledger row"
pacer_stop_provider
[ -s "$tmp/record.txt" ] || fail "the fake provider wrote no record"
read -r n429 n500 requests < <(awk '{ n[$4]++ } END { printf "%d %d %d\n", n[429], n[500], NR }' "$tmp/record.txt")
failed=$(pacer_psql -c "SELECT count(*) FROM deliveries WHERE campaign = 'c' AND status <> 'sent'")
[ "$n429" -gt 0 ] && [ "$n500" -gt 0 ] || fail "the provider answered $n429 429s and $n500 500s: the test made none"
want_provider="{\"server_errors_total\": $n500, \"throttled_total\": $n429}"
want_retries=$((n429 + n500 - failed))
# B adds its counts every second: wait for the last of them.
got_provider= got_retries=
for _ in $(seq 1 50); do
  got_provider=$(state_field providers push cluster)
  got_retries=$(state_field campaigns c retries_total)
  [ "$got_provider" = "$want_provider" ] && [ "$got_retries" = "$want_retries" ] && break
  sleep 0.2
done
worker_5xx=$(state_field providers push worker | "$python" -c 'import json, sys; print(json.load(sys.stdin)["server_errors_total"])')
echo "record: $requests requests, $n429 x 429, $n500 x 500; ledger: $failed of $total failed; A finished $before"
echo "state document: provider cluster $got_provider, campaign retries $got_retries; worker B alone: $worker_5xx x 5xx"
[ "$got_provider" = "$want_provider" ] ||
  fail "provider push: cluster counts $got_provider, the provider's record says $want_provider"
[ "$got_retries" = "$want_retries" ] ||
  fail "campaign c: cluster retries $got_retries, expected $want_retries (429s + 500s - failed rows)"
[ "$worker_5xx" -lt "$n500" ] || fail "worker B alone saw all $n500 500s: A's counts were not tested"
# pacerctl top --admin shows the same cluster counts.
"$pacerctl" --json top --once --admin "$address" >"$tmp/top.json" || fail "top --once --admin failed"
"$python" -c '
import json, sys
p = [x for x in json.load(open(sys.argv[1]))["providers"] if x["id"] == "push"][0]
assert (p["throttled_total"], p["server_errors_total"], p["counts_from"]) == (int(sys.argv[2]), int(sys.argv[3]), "cluster"), p' \
  "$tmp/top.json" "$n429" "$n500" || fail "top --admin: not the cluster counts: $(cat "$tmp/top.json")"
failed_pct=$(state_field campaigns c failed_pct)
want_pct=$("$python" -c "import json; print(json.dumps(round(1000 * $failed / $total) / 10))")
[ "$failed_pct" = "$want_pct" ] || fail "failed_pct $failed_pct, expected $want_pct ($failed of $total)"

# The provider's health: the console's state document and top --admin give the
# same verdict from the same function (read until two reads agree: the 5xx
# rate of the newest 5-s point moves while they are read).
health_codes() {
  "$pacerctl" --json top --once --admin "$address" | "$python" -c '
import json, sys
print([p for p in json.load(sys.stdin)["providers"] if p["id"] == "push"][0]["health"]["code"])'
  state_field providers push health | "$python" -c 'import json, sys; print(json.load(sys.stdin)["code"])'
}
same=
for _ in $(seq 1 20); do
  codes=$(health_codes | tr '\n' ' ')
  read -r top_health state_health <<<"$codes"
  case $state_health in ok | throttled | failing | breaker_open | degraded) ;; *) fail "health '$state_health'" ;; esac
  [ "$top_health" = "$state_health" ] && same=1 && break
  sleep 0.2
done
[ -n "$same" ] || fail "provider push: top says $top_health, the state document $state_health"
echo "provider push: health $state_health in top and in the state document"

# "Limited by" made true end to end: every message finished (done); an
# operator's pause (paused); a campaign without a total and nothing parked
# (no_input).
"$pacerctl" campaign create idle --rate 5 --provider push >/dev/null
limited() { state_field campaigns "$1" limited_by | "$python" -c 'import json, sys; print(json.load(sys.stdin)["code"])'; }
expect_limited() {
  local got=
  for _ in $(seq 1 50); do
    got=$(limited "$1" 2>/dev/null || true)
    [ "$got" = "$2" ] && return 0
    sleep 0.2
  done
  fail "campaign $1: limited_by $got, expected $2"
}
expect_limited c done
expect_limited idle no_input
"$pacerctl" campaign pause idle >/dev/null
expect_limited idle paused
echo "console counts: every worker's 429s, 500s and retries as the provider answered them, across a restart"
