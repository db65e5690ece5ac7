#!/usr/bin/env bash
# A callback URL set while pacerd runs (pacerd writes no callbacks' CTE while
# no campaign has a URL): campaign "late" starts without one and its first
# 200 messages get ledger rows and no callback row. Then pacerctl sets its
# URL; probe messages, one at a time, show when pacerd has applied it (a
# probe's ledger row gets its callback row), and every one of the next 200
# messages then gets its ledger row and exactly one accepted callback.
source "${PACER_SOURCE:?}/tests/support/pacerd_test.sh"
daemon_pid=
receiver_pid=
cleanup() {
  [ -n "$daemon_pid" ] && kill -9 "$daemon_pid" 2>/dev/null || true
  [ -n "$receiver_pid" ] && kill "$receiver_pid" 2>/dev/null || true
  pacer_stop_kafka_mock
  pacer_stop_postgres
  if [ -n "${PACER_KEEP:-}" ]; then echo "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
PACER_TEST_LOGS=("$tmp/pacerd.log" "$tmp/receiver.log")
now_ms() { echo $(($(date +%s%N) / 1000000)); }
# wait_sql SQL VALUE SECONDS WHAT: until SQL answers VALUE.
wait_sql() {
  local until_ms=$(($(now_ms) + $3 * 1000))
  until [ "$(pacer_psql -c "$1")" = "$2" ]; do
    [ "$(now_ms)" -lt "$until_ms" ] || fail "$4 (after $3 s: $(pacer_psql -c "$1"), wanted $2)"
    sleep 0.05
  done
}
produce() { awk -v from="$1" -v n="$2" 'BEGIN { for (i = from; i < from + n; i++) printf "late:{\"n\":%d}\n", i }' |
  kcat -P -b "$PACER_KAFKA" -t messages -K:; }

pacer_start_postgres "$tmp/pg"
export PACER_POSTGRES=$PACER_PG
"$pacerd" migrate >/dev/null
pacer_start_kafka_mock "$kafka_mock" "$tmp/kafka" --topic messages:1 --die-with-parent
port=$(pacer_free_port)
python3 - "$port" "$tmp/received.txt" >"$tmp/receiver.log" 2>&1 <<'PY' &
import http.server, sys, threading
port, out = int(sys.argv[1]), sys.argv[2]
lock = threading.Lock()
class Hook(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        with lock, open(out, "a") as f:
            f.write(body.decode() + "\n")
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", port), Hook).serve_forever()
PY
receiver_pid=$!

"$pacerctl" campaign create late --rate 2000 >/dev/null
produce 0 200
"$pacerd" --brokers "$PACER_KAFKA" --topic messages --no-migrate --sink null --session-timeout-ms 6000 \
  --admin-listen off --events-worker-id worker-1 >>"$tmp/pacerd.log" 2>&1 &
daemon_pid=$!
wait_sql "SELECT count(*) FROM deliveries" 200 60 "the first 200 messages did not reach the ledger"
[ "$(pacer_psql -c "SELECT count(*) FROM callback_outbox")" = 0 ] || fail "callback rows without any URL"

"$pacerctl" campaign set-rules late --callback "http://127.0.0.1:$port/late" >/dev/null
next=200
until_ms=$(($(now_ms) + 20000))
until [ "$(pacer_psql -c "SELECT count(*) FROM callback_outbox")" != 0 ] ||
  [ -s "$tmp/received.txt" ]; do
  [ "$(now_ms)" -lt "$until_ms" ] || fail "no probe got a callback within 20 s of the URL being set"
  produce "$next" 1
  next=$((next + 1))
  wait_sql "SELECT count(*) FROM deliveries" "$next" 30 "a probe did not reach the ledger"
done
first=$next
produce "$first" 200
wait_sql "SELECT count(*) FROM deliveries" $((first + 200)) 60 "the last 200 messages did not reach the ledger"
wait_sql "SELECT count(*) FROM callback_outbox" 0 60 "the callbacks did not finish"
python3 - "$tmp/received.txt" "$first" <<'PY' || fail "callbacks do not match the messages"
import collections, json, sys
got = collections.Counter(json.loads(l)["message_id"] for l in open(sys.argv[1]) if l.strip())
first = int(sys.argv[2])
bad = [m for m, n in got.items() if n != 1]
print(f"{sum(got.values())} callbacks for {len(got)} messages")
sys.exit(1 if bad else 0)
PY
# Every message of the last 200 has its accepted callback; none of the first 200 has one.
ids=$(pacer_psql -c "SELECT message_id FROM deliveries WHERE kafka_offset >= $first")
missing=$(grep -cvxFf <(python3 -c 'import json,sys; [print(json.loads(l)["message_id"]) for l in open(sys.argv[1]) if l.strip()]' "$tmp/received.txt") <<<"$ids" || true)
[ "$missing" = 0 ] || fail "$missing of the last 200 messages have no callback"
early=$(pacer_psql -c "SELECT message_id FROM deliveries WHERE kafka_offset < 200")
before=$(grep -cxFf <(python3 -c 'import json,sys; [print(json.loads(l)["message_id"]) for l in open(sys.argv[1]) if l.strip()]' "$tmp/received.txt") <<<"$early" || true)
[ "$before" = 0 ] || fail "$before of the first 200 messages (before the URL) got a callback"
echo "PASS: no callback rows while no campaign had a URL; after the URL was set (probe $((first - 200)) saw it), all 200 messages got one callback"
