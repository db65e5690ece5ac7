#!/usr/bin/env bash
# pacer-sim as a user runs it: the shipped scenarios, the output, the errors.
set -euo pipefail
sim=${PACER_SIM:?}
src=${PACER_SOURCE:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

for f in "$src"/config/scenarios/*.yaml; do
  "$sim" "$f" --out "$tmp/out.json" || fail "$f did not run"
  grep -q '"tick_ms"' "$tmp/out.json" || fail "$f: no tick_ms in output"
  grep -q '"wall_ms"' "$tmp/out.json" || fail "$f: no wall_ms in output"
done

# JSON on stdout by default; bins only when asked.
"$sim" "$src/config/scenarios/example.yaml" > "$tmp/stdout.json"
grep -q '"bins": \[\]' "$tmp/stdout.json" || fail "bins should be empty without --bins"
"$sim" "$src/config/scenarios/example.yaml" --bins > "$tmp/bins.json"
grep -q '"bins": \[[0-9]' "$tmp/bins.json" || fail "--bins gave no bins"

# The summary is for people.
"$sim" "$src/config/scenarios/example.yaml" --summary > "$tmp/summary.txt"
grep -q 'achieved/s' "$tmp/summary.txt" || fail "summary has no header"

# The rules' scenarios: their independent checks print 0.
"$sim" "$src/config/scenarios/caps.yaml" --summary > "$tmp/caps.txt"
grep -q 'recipients over cap: 0$' "$tmp/caps.txt" || fail "caps: $(cat "$tmp/caps.txt")"
"$sim" "$src/config/scenarios/quiet_hours.yaml" --summary > "$tmp/quiet.txt"
grep -q 'sent inside quiet window: 0$' "$tmp/quiet.txt" || fail "quiet hours: $(cat "$tmp/quiet.txt")"
"$sim" "$src/config/scenarios/priority.yaml" --out "$tmp/prio.json"
grep -q '"waits": {"count": 3000' "$tmp/prio.json" || fail "priority: no waits in the JSON"
# Expiry and failover: how many OTPs an outage expires, with and without a backup.
"$sim" "$src/config/scenarios/otp_outage.yaml" --summary > "$tmp/otp.txt"
grep -Eq '^campaign +otp-alone +lifetime 10 s: expired [0-9]+ of 3000' "$tmp/otp.txt" || fail "otp: $(cat "$tmp/otp.txt")"
grep -Eq '^campaign +otp-failover +carried by \(in failover order\): smsc-a2 [0-9]+, smsc-b [1-9]' "$tmp/otp.txt" ||
  fail "otp failover: $(cat "$tmp/otp.txt")"
"$sim" "$src/config/scenarios/otp_outage.yaml" --out "$tmp/otp.json"
python3 - "$tmp/otp.json" <<'PY' || fail "otp_outage: fewer OTPs must expire with the backup"
import json, sys
c = json.load(open(sys.argv[1]))["campaigns"]
alone, fo = c["otp-alone"]["expired"], c["otp-failover"]["expired"]
sys.exit(0 if 0 < fo < alone else f"expired alone {alone}, with failover {fo}")
PY

# Bad input: a clear message naming the field, and exit code 2.
printf 'duration_s: 5\ncampaigns:\n  - {id: a, rate: lots}\n' > "$tmp/bad.yaml"
set +e
"$sim" "$tmp/bad.yaml" > "$tmp/o" 2> "$tmp/e"; rc=$?
set -e
[ "$rc" = 2 ] || fail "bad scenario exited $rc, expected 2"
grep -q "campaigns\[0\].rate (line 3): expected a number, got 'lots'" "$tmp/e" || fail "error did not name the field: $(cat "$tmp/e")"
set +e
"$sim" "$tmp/missing.yaml" 2> "$tmp/e"; rc=$?
set -e
[ "$rc" = 2 ] || fail "missing file exited $rc"
grep -q 'cannot open' "$tmp/e" || fail "missing file message: $(cat "$tmp/e")"
echo "pacer-sim CLI: all checks passed"
