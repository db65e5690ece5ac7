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
expect_refusal "sink: 'bogus' is not one of stdout, null, http, kafka" "${ok[@]}" --sink bogus
expect_refusal "sink http: " "${ok[@]}" --sink http --http-url "ftp://example.com/"
expect_refusal "kafka sink: the outbound topic is empty" "${ok[@]}" --sink kafka
expect_refusal "--parking 'maybe': expected on or off" "${ok[@]}" --parking maybe
expect_refusal "--kafka 'nokey': expected NAME=VALUE" "${ok[@]}" --kafka nokey
expect_refusal "--in-flight: must be at least 1" "${ok[@]}" --in-flight 0
expect_refusal "--tick-ms: must be at least 1" "${ok[@]}" --tick-ms 0
expect_refusal "--redis 'localhost': expected HOST:PORT" "${ok[@]}" --sink null --redis localhost
expect_refusal "--redis '127.0.0.1:99999': expected HOST:PORT" "${ok[@]}" --sink null --redis 127.0.0.1:99999
expect_refusal "--quota-degraded 'maybe': expected local-share or stop" "${ok[@]}" --quota-degraded maybe
expect_refusal "--live-workers: must be at least 1" "${ok[@]}" --live-workers 0
expect_refusal "--redis-cluster: give the cluster's nodes" "${ok[@]}" --redis-cluster
expect_refusal "--adaptive-decrease 1: expected a number above 0 and below 1" "${ok[@]}" --adaptive-decrease 1
expect_refusal "--adaptive-floor -1: expected a rate >= 0" "${ok[@]}" --adaptive-floor -1
expect_refusal "--latency-threshold-ms: must be 0 (off) or more" "${ok[@]}" --latency-threshold-ms -5

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
echo "pacerd CLI: all checks passed"
