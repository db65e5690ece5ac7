#!/usr/bin/env bash
# pacerd's SMPP session figures and window warning, end to end: a real pacerd
# on a real PostgreSQL and pacer-kafka-mock, sending to pacer-fake-smsc that
# answers every submit_sm 100 ms late and writes receipt ids in decimal while
# its submit_sm_resp ids are hex. Checked:
# - /metrics while it runs: one bind up after one connect, the window of 2
#   in use at most, the measured answer time, the window's capacity;
# - the provider's rate (100/s) is above what a window of 2 carries at
#   100 ms (20/s): pacerd says so (event=smpp_window_limits, naming the
#   window that carries 2.5 times the rate), and the SMSC's record shows the
#   pace the window set;
# - with receipt_ids hex-decimal every receipt lands on its ledger row.
source "${PACER_SOURCE:?}/tests/support/pacerd_test.sh"
smsc=${PACER_FAKE_SMSC:?}
smsc_pid=
daemon_pid=
trap 'pacer_test_cleanup "$tmp" "$daemon_pid" "$smsc_pid"' EXIT
PACER_TEST_LOGS=("$tmp/pacerd.log")

"$smsc" --account "pacer:s3cret" --port-file "$tmp/smsc.port" --response-delay-ms 100 --receipt-delay-ms 300 --receipt-ids-decimal \
  --record "$tmp/smsc.tsv" --report "$tmp/smsc.json" &
smsc_pid=$!
for _ in $(seq 100); do [ -s "$tmp/smsc.port" ] && break; sleep 0.1; done
[ -s "$tmp/smsc.port" ] || fail "pacer-fake-smsc did not start"

start_pacerd_test_services "$tmp" "$pacerd" "$kafka_mock" --topic messages:1
"$pacerctl" provider create sms --rate 100 >/dev/null
"$pacerctl" campaign create promo --rate 100 --provider sms >/dev/null
messages=60
seq 1 "$messages" | awk '{ printf "promo:hello %d\n", $1 }' |
  kcat -P -b "$PACER_KAFKA" -t messages -K: -H recipient=+4915112345678

cat >"$tmp/pacerd.yaml" <<YAML
kafka:
  brokers: [$PACER_KAFKA]
  topics: [messages]
postgres:
  migrate: false
providers:
  sms:
    sink:
      kind: smpp
      smpp:
        port: $(cat "$tmp/smsc.port")
        system_id: pacer
        password_env: SMSC_PASSWORD
        window: 2
        source_addr: ACME
        service_type: CMT
        validity_period: 000001000000000R
        priority_flag: 1
        receipt_ids: hex-decimal
admin:
  listen: 127.0.0.1:0
exit_when_idle_ms: 2000
YAML
SMSC_PASSWORD=s3cret timeout 120 "$pacerd" --config "$tmp/pacerd.yaml" >"$tmp/pacerd.out" 2>"$tmp/pacerd.log" &
daemon_pid=$!
admin=$(pacer_admin_address "$tmp/pacerd.log" 20) || fail "no admin listener"
l='{sink="providers.sms.sink"}'
metric() { curl -sf "http://$admin/metrics" | awk -v n="$1$l" '$1 == n { print $2 }'; }

# While it sends: the figures of one bind with a window of 2.
sent=0
for _ in $(seq 200); do
  sent=$(metric pacer_smpp_submit_sm_total || true)
  [ "${sent:-0}" -ge 10 ] && break
  kill -0 "$daemon_pid" 2>/dev/null || fail "pacerd exited"
  sleep 0.05
done
[ "${sent:-0}" -ge 10 ] || fail "pacer_smpp_submit_sm_total stayed at ${sent:-absent}"
read -r up configured connects disconnects failures size < <(pacer_metric_values "$admin" \
  "pacer_smpp_binds_up$l" "pacer_smpp_binds_configured$l" "pacer_smpp_connects_total$l" \
  "pacer_smpp_disconnects_total$l" "pacer_smpp_bind_failures_total$l" "pacer_smpp_window_size$l")
[ "$up $configured $connects $disconnects $failures $size" = "1 1 1 0 0 2" ] ||
  fail "binds up, configured, connects, disconnects, bind failures, window size: $up $configured $connects" \
    "$disconnects $failures $size"
in_use=$(metric pacer_smpp_window_in_use)
[ "$in_use" -le 2 ] || fail "window in use $in_use, above the window of 2"
latency=$(metric pacer_smpp_submit_latency_seconds)
capacity=$(metric pacer_smpp_window_capacity)
awk -v t="$latency" -v c="$capacity" 'BEGIN { exit !(t >= 0.1 && t < 1 && c > 2 && c <= 20) }' ||
  fail "latency $latency s and capacity $capacity/s: expected >= 0.1 s and at most 2 / 0.1 s"

wait "$daemon_pid" || fail "pacerd exited $?"
daemon_pid=
grep -q "s3cret" "$tmp/pacerd.log" "$tmp/pacerd.out" && fail "the SMPP password was logged"
grep -q 'event=smpp_window sink=providers.sms.sink window=2 binds=1 max_rate_at_50ms=40 at_100ms=20 at_200ms=10' \
  "$tmp/pacerd.log" || fail "no event=smpp_window line at start"
# The window it names carries 2.5 times the share at the measured 100-199 ms: 25-50.
grep -Eq 'WARN .*event=smpp_window_limits sink=providers.sms.sink rate=100.0 window=2 binds=1 latency_ms=1[0-9][0-9].* raise sink.smpp.window to (2[5-9]|[34][0-9]|50) or add binds' \
  "$tmp/pacerd.log" || fail "no event=smpp_window_limits warning naming a window of 2.5 times the share"
kill "$smsc_pid"
wait "$smsc_pid" || true
smsc_pid=

# The SMSC's record: 60 accepted, at the window's pace (20/s: about 3 s), not the quota's (100/s).
accepted=$(awk -F'\t' '$6 == "ESME_ROK"' "$tmp/smsc.tsv" | wc -l)
[ "$accepted" = "$messages" ] || fail "the SMSC accepted $accepted, expected $messages"
span_ms=$(awk -F'\t' '$6 == "ESME_ROK" { if (min == "" || $1 < min) min = $1; if ($1 > max) max = $1 }
  END { print max - min }' "$tmp/smsc.tsv")
[ "$span_ms" -ge 2500 ] || fail "$messages submits in $span_ms ms: faster than a window of 2 at 100 ms allows"
# Receipts in decimal meet their hex ids in the ledger.
matched=$(pacer_psql -c "SELECT count(*) FROM delivery_receipts WHERE send_status = 'sent' AND receipt_status = 'delivered'")
[ "$matched" = "$messages" ] || fail "$matched of $messages receipts met their ledger rows"
echo "pacerd SMPP window and metrics: all checks passed (latency $latency s, capacity $capacity/s, span $span_ms ms)"
