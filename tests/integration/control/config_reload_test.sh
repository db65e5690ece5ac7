#!/usr/bin/env bash
# SIGHUP reloads pacerd's --config file: a real pacerd on a real PostgreSQL and
# pacer-kafka-mock. A changed live key applies (config_reloaded, and the stats
# line it turned on appears), a changed restart-only key is said and kept
# (reload_needs_restart), a broken file is refused (reload_failed) while pacerd
# keeps running on the old settings, and a good file after it applies again.
set -euo pipefail
pacerd=${PACERD:?}
kafka_mock=${PACER_KAFKA_MOCK:?}
source "${PACER_SOURCE:?}/scripts/services.sh"
tmp=$(mktemp -d)
pid=
cleanup() {
  [ -z "$pid" ] || kill -9 "$pid" 2>/dev/null || true
  pacer_stop_kafka_mock
  pacer_stop_postgres
  if [ -n "${PACER_KEEP:-}" ]; then echo "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
# fail (scripts/services.sh) shows these logs.
PACER_TEST_LOGS=("$tmp/pacerd.log")
count() { grep -cE -- "$1" "$tmp/pacerd.log" 2>/dev/null || true; }
# wait_count SECONDS PATTERN N: true once the log has at least N lines matching PATTERN (grep -E).
wait_count() {
  local until=$(($(date +%s) + $1))
  while [ "$(date +%s)" -lt "$until" ]; do
    [ "$(count "$2")" -ge "$3" ] && return 0
    sleep 0.05
  done
  return 1
}
# wait_for SECONDS PATTERN: true once the log has a line matching PATTERN.
wait_for() { wait_count "$1" "$2" 1; }

pacer_start_postgres "$tmp/pg"
export PACER_POSTGRES=$PACER_PG
"$pacerd" migrate >/dev/null
pacer_start_kafka_mock "$kafka_mock" "$tmp/kafka" --topic messages:1 --die-with-parent

cfg=$tmp/pacerd.yaml
# write_config MAX_ATTEMPTS STATS_MS GROUP [EXTRA]
write_config() {
  cat >"$cfg.new" <<YAML
kafka:
  brokers: [$PACER_KAFKA]
  topics: [messages]
  group: $3
  session_timeout_ms: 6000
postgres:
  migrate: false
sink:
  kind: null
limits:
  max_attempts: $1
logging:
  stats_interval_ms: $2
${4:-}
YAML
  mv "$cfg.new" "$cfg"
}
write_config 5 0 pacer
PACER_ADMIN_TOKEN=reload-token "$pacerd" --config "$cfg" --admin-listen 127.0.0.1:0 >"$tmp/pacerd.out" 2>"$tmp/pacerd.log" &
pid=$!
wait_for 30 "event=control_listening" || fail "pacerd did not start"
[ "$(count 'event=stats')" = 0 ] || fail "stats lines before they were turned on"

# Live keys change, and one that needs a restart.
write_config 7 100 other-group
kill -HUP "$pid"
wait_for 10 'event=config_reloaded changed=\[limits.max_attempts,logging.stats_interval_ms\]' ||
  fail "no config_reloaded line with the two live keys"
wait_for 5 'event=reload_needs_restart key=kafka.group' || fail "no reload_needs_restart for kafka.group"
wait_for 5 'event=stats ' || fail "the stats interval from the reload did not apply"

# A broken file: refused with the key and line, pacerd keeps going.
write_config 7 100 other-group "scheduler:
  tick_ms: fast"
kill -HUP "$pid"
wait_for 10 'event=reload_failed error=".*pacerd.yaml:1[0-9]:3: scheduler.tick_ms: expected an integer >= 1, got \\"fast\\""' ||
  fail "no reload_failed line naming scheduler.tick_ms and its line"
kill -0 "$pid" 2>/dev/null || fail "pacerd died on a bad configuration"
stats_before=$(count 'event=stats ')
wait_count 5 'event=stats ' $((stats_before + 1)) || fail "pacerd stopped logging stats after a refused reload"

# An unknown key is refused too; then a good file applies again.
write_config 7 100 other-group "limits:
  max_atempts: 3"
kill -HUP "$pid"
wait_for 10 'event=reload_failed error=".*limits.max_atempts: unknown key \(did you mean limits.max_attempts\?\)' ||
  fail "no reload_failed for an unknown key"
write_config 7 0 pacer
kill -HUP "$pid"
wait_for 10 'event=config_reloaded changed=\[logging.stats_interval_ms\]' || fail "a good file after a bad one did not apply"
kill -0 "$pid" 2>/dev/null || fail "pacerd died"

# POST /admin/reload does what SIGHUP does, with the admin token only.
admin=$(grep -oE 'event=admin_listening address=[^ ]+' "$tmp/pacerd.log" | head -n 1 | cut -d= -f3)
[ -n "$admin" ] || fail "no admin_listening line"
post_reload() {  # post_reload TOKEN: prints the HTTP status
  python3 - "http://$admin/admin/reload" "$1" <<'EOF2'
import sys, urllib.error, urllib.request
req = urllib.request.Request(sys.argv[1], data=b"", method="POST", headers={"Authorization": "Bearer " + sys.argv[2]})
try:
    print(urllib.request.urlopen(req).status)
except urllib.error.HTTPError as e:
    print(e.code)
EOF2
}
# A refused request must not reload: after it, a SIGHUP with the file unchanged
# gives one more `changed=[]` line, not two (a loop turn is a few ms; the
# refused request's reload, were there one, would come well before the signal).
unchanged='event=config_reloaded changed=\[\]'
reloads_before=$(count "$unchanged")
[ "$(post_reload wrong)" = 401 ] || fail "a reload with a wrong token was not refused with 401"
kill -HUP "$pid"
wait_count 10 "$unchanged" $((reloads_before + 1)) || fail "no config_reloaded line for a SIGHUP with nothing changed"
[ "$(count "$unchanged")" = $((reloads_before + 1)) ] || fail "a refused reload request reloaded"
write_config 9 0 pacer
[ "$(post_reload reload-token)" = 200 ] || fail "POST /admin/reload with the token did not answer 200"
wait_for 10 'event=config_reloaded changed=\[limits.max_attempts\]' || fail "POST /admin/reload did not reload"
grep -q reload-token "$tmp/pacerd.log" && fail "the admin token appears in the log"

kill -TERM "$pid"
wait "$pid" || fail "pacerd exited $? on SIGTERM"
pid=
echo "config reload: all checks passed"
