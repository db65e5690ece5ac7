#!/usr/bin/env bash
# Issue 17: the operator console in a real headless Chromium. Starts
# PostgreSQL, Redis, pacer-kafka-mock and a real pacerd (controls on, a token)
# with three campaigns sending through one provider, one of them named and
# keyed `<img src=x onerror=alert(1)>`; then console_browser_test.py drives
# the browser. Screenshots go to $CONSOLE_ARTIFACTS.
source "${PACER_SOURCE:?}/tests/support/pacerd_test.sh"
artifacts=${CONSOLE_ARTIFACTS:?}
here=$(cd "$(dirname "$0")" && pwd)
pid=
cleanup() {
  [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || true
  pacer_stop_services "$tmp"
}
trap cleanup EXIT
# fail (scripts/services.sh) shows these logs.
PACER_TEST_LOGS=("$tmp/pacerd.log")
for bin in chromium chromedriver; do
  command -v "$bin" >/dev/null || fail "$bin is not installed (apt-get install chromium chromium-driver python3-selenium; scripts/lib.sh lists them)"
done
# Debian's python3 (where python3-selenium is), not another one first on PATH.
python=/usr/bin/python3
"$python" -c 'import selenium' 2>/dev/null || fail "python3-selenium is not installed for /usr/bin/python3"
mkdir -p "$artifacts"

export XSS='<img src=x onerror=alert(1)>'
export ADMIN_TOKEN=console-test-token-$$
pacer_start_postgres "$tmp/pg"
export PACER_POSTGRES=$PACER_PG
"$pacerd" migrate >/dev/null
pacer_start_redis "$tmp/redis"
pacer_start_kafka_mock "$kafka_mock" "$tmp/kafka" --topic messages:4 --die-with-parent
"$pacerctl" provider create sms --rate 400 >/dev/null
"$pacerctl" campaign create spring --rate 60 --provider sms --total 0 --name "Spring sale" >/dev/null
"$pacerctl" campaign create news --rate 30 --provider sms --total 0 --name "Newsletter" >/dev/null
"$pacerctl" campaign create "$XSS" --rate 20 --provider sms --total 0 --name "$XSS" >/dev/null
# Enough for the whole test at these rates (and at spring's raised rate).
"$pacerctl" produce --brokers "$PACER_KAFKA" --topic messages --campaign spring --count 12000 >/dev/null
"$pacerctl" produce --brokers "$PACER_KAFKA" --topic messages --campaign news --count 4000 >/dev/null
"$pacerctl" produce --brokers "$PACER_KAFKA" --topic messages --campaign "$XSS" --count 3000 >/dev/null

"$pacerd" --brokers "$PACER_KAFKA" --topic messages --no-migrate --sink null --redis "$PACER_REDIS" \
  --session-timeout-ms 6000 --admin-listen 127.0.0.1:0 --admin-token "$ADMIN_TOKEN" --admin-console-controls on \
  >/dev/null 2>"$tmp/pacerd.log" &
pid=$!
address=$(pacer_admin_address "$tmp/pacerd.log") || fail "pacerd did not log its admin address"
grep -q "event=console url=http://$address/console/ controls=on" "$tmp/pacerd.log" || fail "no event=console line"

CONSOLE_BASE="http://$address" CONSOLE_ARTIFACTS="$artifacts" CONSOLE_TMP="$tmp" "$python" "$here/console_browser_test.py" ||
  fail "the browser test failed"
# The history, gzip-encoded when asked so, the same document as without.
curl -sf -H 'Accept-Encoding: gzip' -D "$tmp/history.head" -o "$tmp/history.gz" "http://$address/api/v1/history" ||
  fail "the history was not answered"
grep -qi '^Content-Encoding: gzip' "$tmp/history.head" || fail "the history was not gzip-encoded: $(cat "$tmp/history.head")"
curl -sf -o "$tmp/history.json" "http://$address/api/v1/history" || fail "the plain history was not answered"
gzip -dc "$tmp/history.gz" | "$python" -c '
import json, sys
zipped, plain = json.load(sys.stdin), json.load(open(sys.argv[1]))
assert zipped["step_s"] == plain["step_s"] and sorted(zipped["campaigns"]) == sorted(plain["campaigns"]), (zipped, plain)
assert len(zipped["campaigns"]) == 3 and zipped["campaigns"]["spring"]["achieved_rate"]["v"], zipped' "$tmp/history.json" ||
  fail "the gzip history does not read as the plain one"
echo "history: $(stat -c %s "$tmp/history.json") bytes, $(stat -c %s "$tmp/history.gz") gzip-encoded"
grep -q 'event=console_control kind=campaign id="spring" change=set-rate status=200' "$tmp/pacerd.log" ||
  fail "the accepted control was not logged"
# top --admin takes this worker's queue per priority class from its state
# document (every campaign here is in the default class).
"$pacerctl" --json top --once --admin "$address" >"$tmp/top.json" || fail "top --once --admin failed"
"$python" -c '
import json, sys
d = json.load(open(sys.argv[1]))
classes = d["classes"]
assert len(classes) == 1 and classes[0]["class"] is None, classes
assert isinstance(classes[0]["worker_queued"], int), classes' "$tmp/top.json" ||
  fail "top --admin: no worker queue for the default class: $(cat "$tmp/top.json")"
kill -TERM "$pid"
wait "$pid" || fail "pacerd exited with $? on SIGTERM"
pid=
echo PASS
