# Shared by the fake push providers' integration tests: a work directory with
# a CA and a loopback certificate, starting a fake and waiting for its
# "listening" line, and stopping every fake started here on exit.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
support=$(cd "$here/../../support" && pwd)
py=/usr/bin/python3  # Debian's, with python3-jwt
work=$(mktemp -d "${TMPDIR:-/tmp}/pacer-fake-push.XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
bash "$support/make_test_certs.sh" "$work" >/dev/null

# start_fake NAME BINARY ARGS...: sets port_NAME and pid_NAME.
start_fake() {
  local name=$1 bin=$2
  shift 2
  : >"$work/$name.out"  # exists before the background job gets to open it
  "$bin" --cert "$work/server.pem" --key "$work/server.key" --listen 127.0.0.1:0 "$@" \
    >"$work/$name.out" 2>"$work/$name.err" &
  local pid=$!
  pids+=("$pid")
  local deadline=$((SECONDS + 10)) port=
  while [ -z "$port" ] && [ $SECONDS -lt $deadline ]; do
    port=$(sed -n 's/^listening 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$work/$name.out")
    kill -0 "$pid" 2>/dev/null || fail "$name exited: $(cat "$work/$name.err")"
    [ -n "$port" ] || sleep 0.05
  done
  [ -n "$port" ] || fail "$name did not print its listening line"
  printf -v "port_$name" '%s' "$port"
  printf -v "pid_$name" '%s' "$pid"
}

# stop_fake NAME: SIGTERM, and it must exit 0.
stop_fake() {
  local pid_var="pid_$1"
  local pid=${!pid_var}
  kill -TERM "$pid"
  local rc=0
  wait "$pid" || rc=$?
  [ "$rc" -eq 0 ] || fail "$1 exited $rc on SIGTERM"
}

# report PORT FIELD: a number from GET /_report (over curl --http2).
report() {
  curl -sS --cacert "$work/ca.pem" --http2 "https://127.0.0.1:$1/_report" |
    "$py" -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$2"
}

# curl_h2 ARGS...: curl over HTTP/2 with the test CA; prints the body, then
# " HTTP_VERSION STATUS" on the last line.
curl_h2() { curl -sS --cacert "$work/ca.pem" --http2 -w '\n%{http_version} %{http_code}\n' "$@"; }
