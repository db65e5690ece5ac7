#!/usr/bin/env bash
# HTTP callbacks through a real pacerd (null sink): campaign "hooked" has a
# callback URL set with pacerctl, "plain" has none. A loopback receiver
# answers 500 to the first POST of every event and 200 to the next. When the
# backlog is in the ledger and the callbacks' outbox is empty, every ledger
# row of "hooked" has exactly one accepted callback whose body matches the
# row, each event was POSTed exactly twice, "plain" got none, and pacerd's
# stats line counts them.
#   MESSAGES=2000
source "${PACER_SOURCE:?}/tests/support/pacerd_test.sh"
messages=${MESSAGES:-2000}
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

echo "pacerd callbacks: $messages messages"
pacer_start_postgres "$tmp/pg"
export PACER_POSTGRES=$PACER_PG
"$pacerd" migrate >/dev/null
pacer_start_kafka_mock "$kafka_mock" "$tmp/kafka" --topic messages:2 --die-with-parent

port=$(pacer_free_port)
python3 - "$port" "$tmp/received.txt" >"$tmp/receiver.log" 2>&1 <<'PY' &
import http.server, json, sys, threading
port, out = int(sys.argv[1]), sys.argv[2]
seen, lock = {}, threading.Lock()
class Hook(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        event_id = self.headers["Pacer-Event-Id"]
        with lock:
            seen[event_id] = seen.get(event_id, 0) + 1
            status = 500 if seen[event_id] == 1 else 200
            with open(out, "a") as f:
                f.write(f"{status} {self.path} {body.decode()}\n")
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", port), Hook).serve_forever()
PY
receiver_pid=$!

"$pacerctl" campaign create hooked --rate 2000 --callback "http://127.0.0.1:$port/pacer?c=hooked" >/dev/null
"$pacerctl" campaign create plain --rate 2000 >/dev/null
awk -v n="$messages" 'BEGIN { for (i = 0; i < n; i++) printf "%s:{\"n\":%d}\n", i % 2 ? "plain" : "hooked", i }' |
  kcat -P -b "$PACER_KAFKA" -t messages -K:

"$pacerd" --brokers "$PACER_KAFKA" --topic messages --no-migrate --sink null --session-timeout-ms 6000 \
  --admin-listen off --events-worker-id worker-1 --callbacks-backoff-ms 50 --stats-interval-ms 200 \
  >>"$tmp/pacerd.log" 2>&1 &
daemon_pid=$!
until_ms=$(($(now_ms) + 90000))
until [ "$(pacer_psql -c "SELECT count(*) FROM deliveries")" -eq "$messages" ] &&
  [ "$(pacer_psql -c "SELECT count(*) FROM callback_outbox")" -eq 0 ]; do
  [ "$(now_ms)" -lt "$until_ms" ] || fail "the ledger or the callbacks did not finish in 90 s"
  sleep 0.2
done
half=$((messages / 2))
# A stats line that counts them all (one comes every 200 ms).
until_ms=$(($(now_ms) + 10000))
until grep -q "event=callbacks_stats sent=$half failed=0 retried=$half " "$tmp/pacerd.log"; do
  [ "$(now_ms)" -lt "$until_ms" ] || break  # named below
  sleep 0.1
done
kill -TERM "$daemon_pid"
wait "$daemon_pid" || fail "pacerd exited non-zero"
daemon_pid=

pacer_psql -c "SELECT message_id, status, campaign FROM deliveries ORDER BY 1" >"$tmp/ledger.txt"
python3 - "$tmp/received.txt" "$tmp/ledger.txt" "$messages" <<'PY' || fail "callbacks do not match the ledger"
import json, sys
received, ledger_file, messages = sys.argv[1], sys.argv[2], int(sys.argv[3])
ledger = {}
for line in open(ledger_file):
    mid, status, campaign = line.rstrip("\n").split("|")
    ledger[mid] = (status, campaign)
hooked = {m for m, (s, c) in ledger.items() if c == "hooked"}
accepted, posts, bad = {}, {}, []
for line in open(received):
    status, path, body = line.rstrip("\n").split(" ", 2)
    e = json.loads(body)
    posts[e["event_id"]] = posts.get(e["event_id"], 0) + 1
    if path != "/pacer?c=hooked" or e["campaign"] != "hooked":
        bad.append(f"a callback for {e['campaign']} at {path}")
    if ledger.get(e["message_id"]) != (e["status"], e["campaign"]):
        bad.append(f"event {e['event_id']}: {e['status']}/{e['campaign']} against {ledger.get(e['message_id'])}")
    if status == "200":
        accepted[e["message_id"]] = accepted.get(e["message_id"], 0) + 1
missing = hooked - set(accepted)
twice = [m for m, n in accepted.items() if n != 1]
not_two = [i for i, n in posts.items() if n != 2]
print(f"ledger rows {len(ledger)} ({len(hooked)} hooked), POSTs {sum(posts.values())} for {len(posts)} events, "
      f"accepted {len(accepted)}, rows without one {len(missing)}, accepted twice {len(twice)}, "
      f"events not POSTed exactly twice {len(not_two)}, other problems {len(bad)}")
for b in bad[:10]:
    print(b)
ok = len(ledger) == messages and len(hooked) == messages // 2 and not missing and not twice and not not_two and not bad
sys.exit(0 if ok else 1)
PY
grep -q "event=callbacks_stats sent=$half failed=0 retried=$half " "$tmp/pacerd.log" ||
  fail "no event=callbacks_stats line with sent=$half failed=0 retried=$half"
echo "PASS: every ledger row of the hooked campaign has one accepted callback, none for the other"
