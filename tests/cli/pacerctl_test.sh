#!/usr/bin/env bash
# pacerctl as an operator meets it: the built binary against a throwaway
# PostgreSQL, with PACER_POSTGRES holding a password that must never show.
# Checks exit codes (README "pacerctl"), tables, JSON and the rows written.
set -euo pipefail
pacerctl=${PACERCTL:?}
pacerd=${PACERD:?}
source "${PACER_SOURCE:?}/scripts/services.sh"
tmp=$(mktemp -d)
cleanup() {
  pacer_stop_postgres
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# expect CODE TEXT ARGS...: pacerctl ARGS exits CODE and TEXT is in its stdout or stderr.
expect() {
  local code=$1 text=$2
  shift 2
  set +e
  "$pacerctl" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  set -e
  [ "$rc" = "$code" ] || fail "pacerctl $* exited $rc, expected $code (stdout: $(cat "$tmp/out") stderr: $(cat "$tmp/err"))"
  grep -qF -- "$text" "$tmp/out" "$tmp/err" || fail "pacerctl $*: output does not say '$text': $(cat "$tmp/out" "$tmp/err")"
  if grep -q "s3cret" "$tmp/out" "$tmp/err"; then fail "pacerctl $* printed the password"; fi
}

# Usage, and values checked before anything is connected to (exit 2).
unset PACER_POSTGRES
expect 0 "Exit codes: 0 done" --help
expect 0 "set-rate" campaign --help
# Nothing listens on port 1: a 3 here would mean it connected before checking.
nowhere="host=127.0.0.1 port=1"
expect 2 "A subcommand is required" --postgres "$nowhere"
expect 2 "no PostgreSQL given: pass --postgres CONNINFO or set PACER_POSTGRES" campaign list
expect 2 "--postgres (or PACER_POSTGRES): not a libpq connection string" --postgres pacer status
expect 2 "--rate '-1': a rate cannot be negative" --postgres "$nowhere" campaign create c1 --rate -1
expect 2 "rate 'nan': not a finite number" --postgres "$nowhere" campaign set-rate c1 nan
expect 2 "rate '': not a number" --postgres "$nowhere" campaign set-rate c1 "${UNSET_RATE:-}"
expect 2 "--burst '0'" --postgres "$nowhere" provider create p --rate 5 --burst 0
expect 2 "--weight '0'" --postgres "$nowhere" campaign create c1 --weight 0
expect 2 "campaign id: must be 1 to 256 bytes of UTF-8 text without control characters" --postgres "$nowhere" campaign show "$(printf 'a\tb')"
# One validation of every number and name (include/pacer/validation.h): each
# refusal names the field and the bound, for every command that takes it.
tiny="rate 1e-300 is below the smallest rate, 0.001 per second"
expect 2 "--rate '1e-300': $tiny" --postgres "$nowhere" campaign create x --rate 1e-300
expect 2 "rate '1e-300': $tiny" --postgres "$nowhere" campaign set-rate x 1e-300
expect 2 "--rate '1e-300': $tiny" --postgres "$nowhere" provider create p --rate 1e-300
expect 2 "rate '1e-300': $tiny" --postgres "$nowhere" provider set-rate p 1e-300
expect 2 "--rate 'NaN': not a finite number; give messages per second from 0.001 to 10000000" --postgres "$nowhere" campaign create x --rate NaN
expect 2 "rate 'Infinity': not a finite number; give messages per second from 0.001 to 10000000" --postgres "$nowhere" provider set-rate p Infinity
expect 2 "rate 'NaN': not a finite number" --postgres "$nowhere" campaign set-rate x NaN
expect 2 "--rate '1e308': rate 1e+308 is above the largest rate, 10000000 per second" --postgres "$nowhere" campaign create x --rate 1e308
expect 2 "rate '1e308': rate 1e+308 is above the largest rate, 10000000 per second" --postgres "$nowhere" provider set-rate p 1e308
expect 2 "--burst '1e308': a burst is a number of messages, at least 1 and at most 10000000" --postgres "$nowhere" provider create p --rate 5 --burst 1e308
expect 2 "--name: 10240 bytes; at most 256 are allowed" --postgres "$nowhere" campaign create x --name "$(head -c 10240 /dev/zero | tr '\0' n)"
expect 2 "--name: must be at most 256 bytes of UTF-8 text without control characters" --postgres "$nowhere" campaign create x --name "$(printf 'a\nb')"
expect 2 "campaign id: must be 1 to 256 bytes of UTF-8 text without control characters" --postgres "$nowhere" campaign create "$(printf 'a\nb')"
expect 2 "campaign id: 10240 bytes; at most 256 are allowed" --postgres "$nowhere" campaign create "$(head -c 10240 /dev/zero | tr '\0' c)"
expect 2 "provider id: must be 1 to 256 bytes of UTF-8 text without control characters" --postgres "$nowhere" provider create "$(printf 'p\nq')" --rate 5
expect 2 "provider id: must be 1 to 256 bytes" --postgres "$nowhere" campaign create x --provider "$(printf 'p\nq')"
# Priority and recipient rules: checked before connecting too.
expect 2 "--cap: frequency cap '3': expected LIMIT/WINDOW" --postgres "$nowhere" campaign create c1 --cap 3
expect 2 "--cap: frequency cap '0/24h'" --postgres "$nowhere" campaign set-rules c1 --cap 0/24h
expect 2 "--quiet-hours: quiet window '21:00': expected HH:MM-HH:MM" --postgres "$nowhere" campaign create c1 --quiet-hours 21:00
expect 2 "--quiet-hours: empty" --postgres "$nowhere" campaign set-rules c1 --quiet-hours "${UNSET_HOURS:-}"
expect 2 "--cap-policy 'drop': give suppress" --postgres "$nowhere" campaign create c1 --cap-policy drop
expect 2 "--class 'a b': a priority class is 1 to 64" --postgres "$nowhere" campaign set-rules c1 --class "a b"
expect 2 "--time-zone 'Europe London': give an IANA time zone name" --postgres "$nowhere" campaign create c1 --time-zone "Europe London"
expect 2 "give at least one of --class, --quiet-hours" --postgres "$nowhere" campaign set-rules c1
expect 2 "--tz 'Europe London'" produce --brokers 127.0.0.1:1 --topic t --campaign c1 --tz "Europe London"
expect 2 "--time-zones 'UTC,,Asia/Tokyo'" produce --brokers 127.0.0.1:1 --topic t --campaign c1 --time-zones UTC,,Asia/Tokyo
expect 2 "--tz and --time-zones: give one of them" produce --brokers 127.0.0.1:1 --topic t --campaign c1 --tz UTC --time-zones UTC
expect 2 "--recipients '0'" produce --brokers 127.0.0.1:1 --topic t --campaign c1 --recipients 0

# Nothing listening: exit 3, and neither form of password shows.
port=$(pacer_free_port)
expect 3 "cannot reach PostgreSQL at 'host=127.0.0.1 port=$port password=***'" \
  --postgres "host=127.0.0.1 port=$port password=s3cret" status
expect 3 "postgresql://u:***@127.0.0.1:$port/pacer" --postgres "postgresql://u:s3cret@127.0.0.1:$port/pacer" status

pacer_start_postgres "$tmp/pg"
export PACER_POSTGRES="$PACER_PG password=s3cret"

# A database pacerd has not migrated: exit 4, and what to do.
expect 4 "run \`pacerd migrate" status
"$pacerd" migrate --postgres "$PACER_PG" >/dev/null

# An operator's session.
expect 0 "provider 'sms' created: rate 150/s, burst 3" provider create sms --rate 150
expect 0 "campaign 'spring' created: state active, send_rate 100/s, burst 5, weight 2, provider sms" \
  campaign create spring --rate 100 --burst 5 --weight 2 --provider sms --name "Spring sale"
expect 0 "campaign 'alerts' created: state active, send_rate unlimited" campaign create alerts
expect 1 "campaign 'spring' already exists" campaign create spring
expect 1 "provider 'mms' not found; \`pacerctl provider list\` shows the providers" campaign create x --provider mms
expect 0 "spring  Spring sale  active      100/s      5       2  sms" campaign list
expect 0 '"send_rate": 100.0' --json campaign show spring
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["ledger"]["sent"] == 0 and d["parked"] == 0, d' "$tmp/out" ||
  fail "campaign show --json: $(cat "$tmp/out")"
expect 0 "campaign 'spring': send_rate 100/s -> 250/s, burst 5 -> 4" campaign set-rate spring 250
expect 0 "campaign 'spring' paused (was active)" campaign pause spring
expect 0 "campaign 'spring' is already paused; nothing changed" campaign pause spring
expect 0 "campaign 'spring' resumed (was paused)" campaign resume spring
expect 0 "campaign 'alerts' cancelled (was active)" campaign cancel alerts
expect 1 "campaign 'alerts' is cancelled and cannot be resumed" campaign resume alerts
expect 1 "campaign 'nope' not found; \`pacerctl campaign list\` shows the campaigns" campaign show nope
expect 0 "provider 'sms': rate 150/s -> 400/s, burst 3 -> 20" provider set-rate sms 400 --burst 20
expect 0 "sms  400/s     20          1" provider list
expect 0 "campaigns cancelled" status
expect 0 "password=***" status
expect 0 '"cancelled": 1' --json status
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/out" || fail "status --json is not JSON"

# Priority class and recipient rules: written, shown, changed, and counted.
expect 2 "campaign 'quiet' would not be usable: quiet_hours 21:00-08:00 without a time_zone" \
  campaign create quiet --quiet-hours 21:00-08:00
expect 0 "campaign 'night' created: state active, send_rate 10/s, burst 2, weight 1, provider none, total unknown, class bulk, quiet hours 21:00-08:00 (Europe/London), cap 3/24h (defer)" \
  campaign create night --rate 10 --class bulk --quiet-hours 21:00-08:00 --time-zone Europe/London --cap 3/24h --cap-policy defer
expect 0 "night   -            active          10/s      2       1  -         bulk     21:00-08:00  Europe/London  3/24h defer" campaign list
expect 0 "alerts  -            cancelled  unlimited      1       1  -         default  -            -              -  " campaign list
expect 0 "frequency_cap     3/24h" campaign show night
expect 0 "quiet_hours       21:00-08:00" campaign show night
expect 0 "priority_class    bulk" campaign show night
expect 0 '"frequency_cap": "3/24h"' --json campaign show night
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert (d["priority_class"], d["quiet_hours"], d["time_zone"], d["cap_policy"]) == ("bulk", "21:00-08:00", "Europe/London", "defer"), d
assert d["ledger"]["suppressed"] == 0, d' "$tmp/out" || fail "campaign show --json rules: $(cat "$tmp/out")"
expect 0 '"priority_class": null' --json campaign list
expect 2 "campaign 'night' would not be usable: quiet_hours 21:00-08:00 without a time_zone" campaign set-rules night --time-zone none
expect 0 "campaign 'night': class bulk, quiet hours 21:00-08:00 (Europe/London), cap 3/24h (defer) -> class default, quiet hours none (Europe/London), cap 1/1h (suppress)" \
  campaign set-rules night --class default --quiet-hours none --cap 1/1h --cap-policy suppress
expect 0 "already class default, quiet hours none (Europe/London), cap 1/1h (suppress); nothing changed" \
  campaign set-rules night --cap 1/1h
expect 0 '"change": "set-rules"' --json campaign set-rules night --class bulk
expect 1 "campaign 'alerts' is cancelled: a rule no longer applies to it" campaign set-rules alerts --class bulk
rows=$(pacer_psql -c "SELECT coalesce(priority_class, 'NULL') || ':' || coalesce(quiet_hours, 'NULL') || ':' || time_zone || ':' || frequency_cap || ':' || cap_policy FROM campaigns WHERE id = 'night'")
[ "$rows" = "bulk:NULL:Europe/London:1/1h:suppress" ] || fail "night's rules in the table: $rows"
pacer_psql -c "INSERT INTO deliveries (message_id, campaign, topic, kafka_partition, kafka_offset, status, reason) VALUES
  ('n1', 'night', 't', 0, 1, 'suppressed', 'suppressed: frequency cap campaign:night 1/1h'),
  ('n2', 'night', 't', 0, 2, 'sent', '')" >/dev/null
expect 0 "suppressed        1" campaign show night
expect 0 "ledger suppressed                1" status
expect 0 '"suppressed": 1' --json status
pacer_psql -c "DELETE FROM campaigns WHERE id = 'night'; DELETE FROM deliveries WHERE campaign = 'night'" >/dev/null

# Rows pacerctl would refuse, written by SQL with the table's checks dropped:
# listed as invalid with the reason pacerd skips them, never as null
# ("unlimited") in JSON nor as nan/s in a table.
pacer_psql -c "ALTER TABLE campaigns DROP CONSTRAINT campaigns_send_rate_range;
  ALTER TABLE providers DROP CONSTRAINT providers_rate_range;
  INSERT INTO providers (id, rate, burst) VALUES ('nanp', 'NaN', 1);
  INSERT INTO campaigns (id, send_rate, burst) VALUES ('tiny', 1e-300, 1)" >/dev/null
expect 0 '"invalid": "rate NaN is not a finite number; give 0.001 to 10000000 per second"' --json provider list
python3 -c 'import json,sys
d = {p["id"]: p for p in json.load(open(sys.argv[1]))}
assert d["nanp"]["rate"] == "NaN" and d["sms"]["rate"] == 400 and d["sms"]["invalid"] is None, d' "$tmp/out" ||
  fail "provider list --json: $(cat "$tmp/out")"
expect 0 "invalid (NaN)" provider list
if grep -qi "nan/s" "$tmp/out"; then fail "provider list shows nan/s: $(cat "$tmp/out")"; fi
expect 0 "invalid: provider 'nanp' (rate NaN is not a finite number" provider list
expect 0 "invalid: campaign 'tiny' (send_rate 1e-300 is below the smallest rate, 0.001 per second" campaign list
expect 0 '"invalid": "send_rate 1e-300 is below the smallest rate, 0.001 per second' --json campaign show tiny
pacer_psql -c "DELETE FROM campaigns WHERE id = 'tiny'; DELETE FROM providers WHERE id = 'nanp'" >/dev/null

rows=$(pacer_psql -c "SELECT id || ':' || state || ':' || coalesce(send_rate::text, 'unlimited') || ':' || burst FROM campaigns ORDER BY id" | tr '\n' ' ')
[ "$rows" = "alerts:cancelled:unlimited:1 spring:active:250:4 " ] || fail "campaigns table: $rows"
rows=$(pacer_psql -c "SELECT id || ':' || rate || ':' || burst FROM providers" | tr '\n' ' ')
[ "$rows" = "sms:400:20 " ] || fail "providers table: $rows"
# top as a process: frames while it runs (no escape codes when stdout is a file),
# then SIGTERM and SIGINT each end it with exit 0.
expect 0 "campaign 'spring': total unknown -> 40" campaign set-total spring 40
for sig in TERM INT; do
  "$pacerctl" top --interval-ms 100 --width 120 >"$tmp/top.out" 2>"$tmp/top.err" &
  top_pid=$!
  for _ in $(seq 1 100); do
    [ "$(grep -c '^pacer top ' "$tmp/top.out")" -ge 2 ] && break
    sleep 0.1
  done
  [ "$(grep -c '^pacer top ' "$tmp/top.out")" -ge 2 ] || fail "top printed fewer than 2 frames: $(cat "$tmp/top.out" "$tmp/top.err")"
  kill -s "$sig" "$top_pid"
  set +e
  wait "$top_pid"
  rc=$?
  set -e
  [ "$rc" = 0 ] || fail "top after SIG$sig exited $rc: $(cat "$tmp/top.err")"
  grep -q "^spring  active  sms  " "$tmp/top.out" || fail "top frame: $(cat "$tmp/top.out")"
  if grep -q $'\x1b' "$tmp/top.out"; then fail "top wrote escape codes to a file"; fi
done

echo "pacerctl CLI: all checks passed"
