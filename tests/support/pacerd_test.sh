# The opening every pacerd shell test shares. Sourced first, before anything
# else, by a test that ctest runs with PACERD, PACERCTL, PACER_KAFKA_MOCK and
# PACER_SOURCE set:
#   source "${PACER_SOURCE:?}/tests/support/pacerd_test.sh"
# Turns on errexit, nounset and pipefail; sets pacerd, pacerctl and kafka_mock
# (the programs under test); sources scripts/services.sh (fail, wait_for_line,
# the service starters); and makes tmp, a fresh directory the test's EXIT trap
# removes (pacer_test_cleanup or pacer_stop_services do).
set -euo pipefail
pacerd=${PACERD:?}
pacerctl=${PACERCTL:?}
kafka_mock=${PACER_KAFKA_MOCK:?}
source "${PACER_SOURCE:?}/scripts/services.sh"
tmp=$(mktemp -d)

# pacer_admin_address LOG [SECONDS]: the HOST:PORT that pacerd's first
# event=admin_listening line in LOG names, waiting up to SECONDS (30) for it;
# returns 1 and prints nothing when no line comes.
pacer_admin_address() {
  wait_for_line "${2:-30}" "$1" 'event=admin_listening address=' || return 1
  sed -n 's/.*event=admin_listening address=\([^ ]*\).*/\1/p' "$1" | head -n 1
}

# pacer_check_push_lifetimes RECORD TOKEN DEADLINE_MS: checks the lifetime
# each request in a fake push provider's record (docs/fake-push.md) carried.
# Requests to device TOKEN had the deadline DEADLINE_MS (epoch ms): APNs's
# apns-expiration and FCM's apns.headers.apns-expiration must be it in Unix
# seconds, and the remaining lifetime on arrival (that value, or FCM's
# android.ttl, minus the record's t_us) must be the deadline minus the
# arrival time, give or take a second. Requests to other tokens must carry
# none. Prints how many requests carried the deadline; fails on the first
# line that is wrong.
pacer_check_push_lifetimes() {
  python3 - "$@" <<'PY' || fail "lifetimes in $1 (device $2, deadline $3 ms) are wrong"
import json, sys
record, token, deadline_ms = sys.argv[1], sys.argv[2], int(sys.argv[3])
deadline_s = deadline_ms / 1000
carried = 0
for n, line in enumerate(open(record), 1):
    r = json.loads(line)
    fcm = "project" in r
    names = ["apns_expiration", "android_ttl"] if fcm else ["apns_expiration"]
    if r["token"] != token:
        if any(k in r for k in names):
            sys.exit(f"line {n}: a request without a deadline carried a lifetime: {line}")
        continue
    if not all(k in r for k in names):
        sys.exit(f"line {n}: expected {names}: {line}")
    arrived_s = r["t_us"] / 1e6
    if int(r["apns_expiration"]) != deadline_ms // 1000:
        sys.exit(f"line {n}: apns_expiration {r['apns_expiration']}, expected {deadline_ms // 1000}")
    left = [int(r["apns_expiration"]) - arrived_s]
    if fcm:
        ttl = r["android_ttl"]
        if not (ttl.endswith("s") and ttl[:-1].isdigit()):
            sys.exit(f"line {n}: android_ttl {ttl!r} is not whole seconds")
        left.append(int(ttl[:-1]))
    for x in left:
        if abs(x - (deadline_s - arrived_s)) > 1:
            sys.exit(f"line {n}: {x:.3f} s left on arrival, expected {deadline_s - arrived_s:.3f} +- 1: {line}")
    carried += 1
print(carried)
PY
}

# pacer_start_fake_apns ARGS...: the APNs tests' fake. Makes a CA and a
# loopback certificate in tmp (ca.pem, server.pem), an ES256 provider key
# (key.p8, and key.pub for the fake), then starts PACER_FAKE_APNS on a
# loopback port with them (key id KEY0000001, team TEAM000001) and ARGS.
# Sets apns_pid and port; its output goes to tmp/apns.out and tmp/apns.err.
pacer_start_fake_apns() {
  local bin=${PACER_FAKE_APNS:?}
  bash "$PACER_SOURCE/tests/support/make_test_certs.sh" "$tmp" >/dev/null
  openssl ecparam -name prime256v1 -genkey -noout 2>/dev/null | openssl pkcs8 -topk8 -nocrypt -out "$tmp/key.p8"
  openssl ec -in "$tmp/key.p8" -pubout -out "$tmp/key.pub" 2>/dev/null
  "$bin" --cert "$tmp/server.pem" --key "$tmp/server.key" --listen 127.0.0.1:0 --auth-key "$tmp/key.pub" \
    --key-id KEY0000001 --team-id TEAM000001 "$@" >"$tmp/apns.out" 2>"$tmp/apns.err" &
  apns_pid=$!
  port=$(listening_port "$tmp/apns.out" "$apns_pid") || fail "the fake did not start"
}

# pacer_apns_config [--in-flight N] [--apns LINE]... [--push LINE]... [--top LINE]...:
# writes tmp/pacerd.yaml for pacerd against pacer_start_fake_apns's fake:
# Kafka (PACER_KAFKA, topic messages), no migration, sink apns with the
# fake's key and topic com.example.app, admin on a loopback port, exit after
# 3 s idle. --in-flight sets sink.in_flight (64); each --apns and --push LINE
# is added under sink.apns or sink.push, each --top LINE at the top level.
pacer_apns_config() {
  local in_flight=64 apns_lines= push_lines= top_lines=
  while [ $# -gt 0 ]; do
    [ $# -ge 2 ] || fail "pacer_apns_config: $1 needs a value"
    case $1 in
      --in-flight) in_flight=$2 ;;
      --apns) apns_lines+="    $2"$'\n' ;;
      --push) push_lines+="    $2"$'\n' ;;
      --top) top_lines+="$2"$'\n' ;;
      *) fail "pacer_apns_config: unknown option $1" ;;
    esac
    shift 2
  done
  cat >"$tmp/pacerd.yaml" <<YAML
kafka:
  brokers: [$PACER_KAFKA]
  topics: [messages]
postgres:
  migrate: false
sink:
  kind: apns
  in_flight: $in_flight
  apns:
    url: https://127.0.0.1:$port
    key_file: $tmp/key.p8
    key_id: KEY0000001
    team_id: TEAM000001
    topic: com.example.app
${apns_lines}  push:
    ca_file: $tmp/ca.pem
${push_lines}admin:
  listen: 127.0.0.1:0
exit_when_idle_ms: 3000
${top_lines}
YAML
}
