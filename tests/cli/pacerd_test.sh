#!/usr/bin/env bash
# pacerd's command line as an operator meets it: settings it cannot use are
# refused before it connects to anything, with the setting named and exit 2.
set -euo pipefail
pacerd=${PACERD:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# expect_refusal EXPECTED_TEXT ARGS...: exit 2 and EXPECTED_TEXT on stderr.
expect_refusal() {
  local text=$1
  shift
  set +e
  "$pacerd" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  set -e
  [ "$rc" = 2 ] || fail "pacerd $* exited $rc, expected 2 (stderr: $(cat "$tmp/err"))"
  grep -qF -- "$text" "$tmp/err" || fail "pacerd $*: stderr does not say '$text': $(cat "$tmp/err")"
}

unset PACER_POSTGRES
ok=(--brokers 127.0.0.1:1 --topic t --postgres "host=127.0.0.1 port=1")
expect_refusal "kafka brokers: empty" --topic t --postgres x
expect_refusal "kafka topics: none" --brokers b --postgres x
expect_refusal "postgres: empty" --brokers b --topic t
expect_refusal '--sink: sink.kind: expected one of stdout, null, http, kafka, smpp, apns, fcm, got "bogus"' "${ok[@]}" --sink bogus
expect_refusal "sink http: " "${ok[@]}" --sink http --http-url "ftp://example.com/"
expect_refusal "kafka sink: the outbound topic is empty" "${ok[@]}" --sink kafka
expect_refusal '--parking: ledger.parking: expected on or off, got "maybe"' "${ok[@]}" --parking maybe
expect_refusal '--kafka: kafka.properties: expected NAME=VALUE' "${ok[@]}" --kafka nokey
grep -q nokey "$tmp/err" && fail "a kafka property (it may be sasl.password) was echoed: $(cat "$tmp/err")"
expect_refusal '--in-flight: sink.in_flight: expected an integer >= 1, got "0"' "${ok[@]}" --in-flight 0
expect_refusal '--tick-ms: scheduler.tick_ms: expected an integer >= 1, got "0"' "${ok[@]}" --tick-ms 0
expect_refusal '--redis: redis.nodes: expected HOST:PORT, got "localhost"' "${ok[@]}" --sink null --redis localhost
expect_refusal '--redis: redis.nodes: expected HOST:PORT, got "127.0.0.1:99999"' "${ok[@]}" --sink null --redis 127.0.0.1:99999
expect_refusal '--quota-degraded: redis.degraded: expected one of local-share, stop, got "maybe"' "${ok[@]}" --quota-degraded maybe
expect_refusal '--live-workers: redis.live_workers: expected an integer >= 1, got "0"' "${ok[@]}" --live-workers 0
expect_refusal "redis.cluster: give the cluster's nodes" "${ok[@]}" --redis-cluster
expect_refusal "caps.cluster: needs caps.redis HOST:PORT" "${ok[@]}" --sink null --caps-cluster
expect_refusal "caps.cluster: needs caps.redis HOST:PORT" "${ok[@]}" --sink null --caps-cluster --caps-redis none
expect_refusal '--adaptive-decrease: limits.adaptive_decrease: expected a number above 0 and below 1, got "1"' "${ok[@]}" --adaptive-decrease 1
expect_refusal '--adaptive-floor: limits.adaptive_floor: expected a rate >= 0, got "-1"' "${ok[@]}" --adaptive-floor -1
expect_refusal '--latency-threshold-ms: limits.latency_threshold_ms: expected an integer >= 0, got "-5"' "${ok[@]}" --latency-threshold-ms -5

# --config FILE: a file pacerd cannot use is refused before it connects to
# anything (exit 2), naming file:line:column, the key and what was expected.
cfg=$tmp/pacerd.yaml
printf 'kafka:\n  brokers: [127.0.0.1:1]\n  topics: [t]\nscheduler:\n  tick_ms: fast\n' >"$cfg"
expect_refusal "$cfg:5:3: scheduler.tick_ms: expected an integer >= 1, got \"fast\"" --config "$cfg"
# A flag wins over the file: the same file with --tick-ms is fine as far as
# the configuration goes (it fails later, at the missing PostgreSQL: exit 2 for "postgres: empty").
expect_refusal "postgres: empty" --config "$cfg" --tick-ms 5
printf 'scheduler:\n  tick_msec: 5\n' >"$cfg"
expect_refusal "$cfg:2:3: scheduler.tick_msec: unknown key (did you mean scheduler.tick_ms?)" --config "$cfg"
printf 'kafka:\n  brokers: [unclosed\n  topics: [t]\n' >"$cfg"
expect_refusal "YAML syntax error" --config "$cfg"
grep -qE -- "$cfg:[0-9]+:[0-9]+: YAML syntax error" "$tmp/err" || fail "a syntax error without its line: $(cat "$tmp/err")"
expect_refusal "$tmp/none.yaml: cannot read the configuration" --config "$tmp/none.yaml"
# A directory is not a configuration: exit 2 like any other configuration error
# (systemd does not restart pacerd after one).
expect_refusal "$tmp: cannot read the configuration: is a directory, not a file" --config "$tmp"
# An environment override pacerd cannot use names the variable.
printf 'kafka:\n  brokers: [127.0.0.1:1]\n' >"$cfg"
PACER_SCHEDULER_TICK_MS=soon expect_refusal 'PACER_SCHEDULER_TICK_MS: scheduler.tick_ms: expected an integer >= 1, got "soon"' --config "$cfg"
# A header value is a secret: a malformed one is refused without being printed.
PACER_SINK_HTTP_HEADERS="Bearer-s3cret" expect_refusal "PACER_SINK_HTTP_HEADERS: sink.http.headers: expected NAME=VALUE" --config "$cfg"
if grep -q s3cret "$tmp/err"; then fail "pacerd printed a header value"; fi
# The example file is a valid configuration: with it pacerd gets as far as
# PostgreSQL (not there: exit 1), and the password from a file is not printed.
printf 's3cret\n' >"$tmp/pw"
set +e
PACER_POSTGRES_URL="host=127.0.0.1 port=1" PACER_POSTGRES_PASSWORD_FILE="$tmp/pw" PACER_SINK_KIND=null \
  "$pacerd" --config "$(dirname "$0")/../../config/pacerd.example.yaml" >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
[ "$rc" = 1 ] || fail "the example configuration exited $rc, expected 1 (stderr: $(cat "$tmp/err"))"
grep -q "PostgreSQL unreachable" "$tmp/err" || fail "the example configuration: $(cat "$tmp/err")"
if grep -q s3cret "$tmp/out" "$tmp/err"; then fail "pacerd printed the password from password_file"; fi

# A PostgreSQL that is not there: a start-up failure (exit 1) with the reason.
set +e
"$pacerd" "${ok[@]}" --sink null >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
[ "$rc" = 1 ] || fail "unreachable PostgreSQL exited $rc, expected 1"
grep -q "PostgreSQL unreachable" "$tmp/err" || fail "unreachable PostgreSQL: $(cat "$tmp/err")"

# PACER_POSTGRES stands in for --postgres (as for pacerctl), in both forms.
# A badly percent-encoded password is quoted by libpq: pacerd hides it too.
for pg in "host=127.0.0.1 port=1" "postgresql://pacer:s3cret@127.0.0.1:1/pacer" "postgresql://pacer:s3cret%zz@127.0.0.1:1/pacer"; do
  set +e
  PACER_POSTGRES="$pg" "$pacerd" --brokers 127.0.0.1:1 --topic t --sink null >"$tmp/out" 2>"$tmp/err"
  rc=$?
  set -e
  [ "$rc" = 1 ] || fail "PACER_POSTGRES=$pg: exited $rc, expected 1 (stderr: $(cat "$tmp/err"))"
  grep -q "PostgreSQL unreachable" "$tmp/err" || fail "PACER_POSTGRES=$pg: $(cat "$tmp/err")"
  if grep -q s3cret "$tmp/out" "$tmp/err"; then fail "pacerd printed the password"; fi
done

# migrate needs --postgres.
set +e
"$pacerd" migrate >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
[ "$rc" != 0 ] || fail "migrate without --postgres succeeded"
grep -q -- "--postgres" "$tmp/err" || fail "migrate without --postgres: $(cat "$tmp/err")"
# migrate takes postgres.url from --config too (and a password from password_file, not printed).
printf 'postgres:\n  url: "postgresql://pacer@127.0.0.1:1/pacer"\n  password_file: %s\n' "$tmp/pw" >"$cfg"
set +e
"$pacerd" migrate --config "$cfg" >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
[ "$rc" = 1 ] || fail "migrate --config exited $rc, expected 1 (stderr: $(cat "$tmp/err"))"
grep -q "PostgreSQL unreachable" "$tmp/err" || fail "migrate --config: $(cat "$tmp/err")"
if grep -q s3cret "$tmp/out" "$tmp/err"; then fail "migrate printed the password from password_file"; fi
echo "pacerd CLI: all checks passed"
